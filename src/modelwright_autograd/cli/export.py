"""``modelwright-autograd export``: write a checkpoint for PyTorch, nanoGPT or makemore."""

from __future__ import annotations

import argparse
import os
import sys
from functools import partial
from pathlib import Path

import numpy as np

from ..checkpoint import TORCH_MISSING, CheckpointError, export_torch, load_checkpoint
from ..checks import shown_path
from ..files import NotARegularFile, folder_problem, refuse_non_regular
from ..lm.models import LMArchitecture
from ..optim_state import OptimizerStateError
from ..printing import emit
from ..training import interchange, lm_run
from ..training.outputs import is_run_folder, other_run_file, run_file_named
from .options import Subparsers, file_path


def add_export(subparsers: Subparsers) -> None:
    """The ``export`` command's arguments."""
    p = subparsers.add_parser(
        "export",
        help="write a checkpoint for PyTorch, nanoGPT or makemore (needs torch)",
        description="Write the model in CHECKPOINT (a run folder or the model.json written by "
        'train) to OUT. An MLP or CNN becomes one file, torch.save({"architecture": ..., '
        '"state_dict": ...}), whose state_dict loads into torch.nn.Sequential(Linear, '
        "activation, ..., Linear). A GPT becomes the folder OUT holding nanoGPT's ckpt.pt and "
        "meta.pkl (its sample.py and train.py resume from them, with the run's AdamW "
        "state); a names model (bigram, mlp, transformer) the makemore work folder OUT "
        "holding model.pt (makemore.py "
        "--sample-only reads it). --format state_dict writes a language model as one file "
        "instead; --format safetensors writes any model as one .safetensors file under the "
        "same names (safetensors.torch.load_file reads it; no torch needed to write it). "
        "docs/checkpoints.md shows the lines that read each. PyTorch must be installed for "
        "the others.",
    )
    p.add_argument(
        "checkpoint", type=file_path, metavar="CHECKPOINT", help="a run folder or its model.json"
    )
    p.add_argument(
        "out",
        type=file_path,
        metavar="OUT",
        help="the file (state_dict, safetensors) or folder (nanogpt, makemore) to write",
    )
    p.add_argument(
        "--format",
        choices=interchange.FORMATS,
        help="nanogpt (a GPT's default), makemore (a names model's), state_dict (an MLP's "
        "or CNN's default) or safetensors (any model's tensors under those names)",
    )
    p.set_defaults(func=partial(run_export, parser=p))


def run_export(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Export a checkpoint: 0; 1 for a missing torch or an unwritable OUT; 2 for a missing
    or bad checkpoint, an AdamW state that does not fit the model, a format the model has not,
    an OUT that is the checkpoint, another file of its run (by inode, whatever the path's
    form), its run folder, a file or folder of another run, or something the format cannot
    replace (a symlink, device or FIFO; a folder for a file; a file for a folder)."""
    shown = shown_path(args.out)
    one_file = args.format in ("state_dict", "safetensors")
    may_be_folder = not one_file and args.out.is_dir() and not args.out.is_symlink()
    if not may_be_folder:
        _refuse_non_regular(parser, args.out)  # before loading: atomic_write checks again
        problem = folder_problem(args.out.parent)
        if problem:
            parser.error(f"argument OUT: cannot write {shown}: {problem}")
    checkpoint = lm_run.checkpoint_file(args.checkpoint)
    owned = run_file_named(args.out, args.checkpoint)
    if owned is not None:
        what = "the checkpoint itself" if owned == checkpoint.name else f"the run's {owned}"
        parser.error(f"argument OUT: {shown} is {what}; name another file")
    other = other_run_file(args.out)
    if other is not None:
        parser.error(f"argument OUT: {shown} is another run's {other}; name another file")
    try:
        loaded = load_checkpoint(checkpoint)
        fmt = args.format or interchange.default_format(loaded.model)
        problem = interchange.format_problem(loaded.model, fmt)
        if problem is not None:
            parser.error(f"argument --format: {problem}")
        if fmt == "state_dict":
            _refuse_non_regular(parser, args.out)
            export_torch(loaded.model, args.out)
        elif fmt == "safetensors":
            _refuse_non_regular(parser, args.out)
            whose = interchange.export_safetensors(loaded.model, args.out)
        else:
            _check_folder(parser, args.out, checkpoint, fmt)
            written = interchange.export_folder(loaded, fmt, args.out)
    except (CheckpointError, OptimizerStateError) as e:  # a missing or bad file: bad input
        print(f"modelwright-autograd export: {e}", file=sys.stderr)
        return 2
    except ImportError:
        problem = TORCH_MISSING
    except lm_run.NotALanguageModel as e:
        problem = str(e)
    except NotARegularFile as e:  # a file the format writes in OUT: named, as OUT's own are
        parser.error(f"argument OUT: {shown_path(e.filename)}: {e.strerror}")
    except OSError as e:  # atomic_write's own message already names the file
        problem = f"cannot write {shown}: {e.strerror}" if e.strerror else str(e)
    else:
        arch = loaded.architecture.describe()
        bad = sum(
            int(np.size(v) - np.count_nonzero(np.isfinite(v)))
            for v in loaded.model.state_dict().values()
        )
        if bad:
            print(
                f"modelwright-autograd export: warning: {bad:,} of the weights are NaN or "
                "infinite; the exported model will predict NaN or infinities",
                file=sys.stderr,
            )
        if fmt == "safetensors":
            return emit([f"wrote {shown}: the {arch} in safetensors under {whose} names"])
        if fmt != "state_dict":
            return emit([f"wrote {shown} for {fmt}:", *(f"  {line}" for line in written)])
        if isinstance(loaded.architecture, LMArchitecture):
            return emit([f"wrote {shown}: the {arch} as a state_dict under nanoGPT's names"])
        return emit([f"wrote {shown}: the {arch} as a torch.nn.Sequential state_dict"])
    print(f"modelwright-autograd export: {problem}", file=sys.stderr)
    return 1


def _refuse_non_regular(parser: argparse.ArgumentParser, out: Path) -> None:
    try:
        refuse_non_regular(out)
    except NotARegularFile as e:
        parser.error(f"argument OUT: {shown_path(out)}: {e.strerror}")


def _check_folder(parser: argparse.ArgumentParser, out: Path, checkpoint: Path, fmt: str) -> None:
    """OUT for nanoGPT's or makemore's files: a folder (made if missing), not the run's."""
    shown = shown_path(out)
    if out.exists() and not out.is_dir():
        parser.error(f"argument OUT: {shown} exists and is not a folder; {fmt}'s files go in one")
    if out.suffix in (".pt", ".pth", ".pkl"):
        parser.error(
            f"argument OUT: {shown} looks like a file; {fmt}'s format is a folder (name one, "
            "or give --format state_dict for one file)"
        )
    folder = checkpoint.parent
    if out.resolve() == folder.resolve() or (
        out.is_dir() and folder.is_dir() and os.path.samefile(out, folder)
    ):
        parser.error(f"argument OUT: {shown} is the run's own folder; name another")
    if is_run_folder(out):
        parser.error(f"argument OUT: {shown} is another run's folder; name another")
