"""``modelwright-autograd export``: write a checkpoint as a PyTorch state_dict."""

from __future__ import annotations

import argparse
import sys
from functools import partial

import numpy as np

from ..checkpoint import TORCH_MISSING, CheckpointError, export_torch, load_checkpoint
from ..checks import shown_path
from ..files import NotARegularFile, refuse_non_regular
from ..printing import emit
from ..training import language
from ..training.outputs import run_file_named
from .options import Subparsers, file_path


def add_export(subparsers: Subparsers) -> None:
    """The ``export`` command's arguments."""
    p = subparsers.add_parser(
        "export",
        help="write a checkpoint as a PyTorch state_dict (needs torch)",
        description="Write the model in CHECKPOINT (a model.json written by train) to OUT with "
        'torch.save({"architecture": ..., "state_dict": ...}); the state_dict loads into '
        "torch.nn.Sequential(Linear, activation, ..., Linear) and predicts the same numbers. "
        "docs/checkpoints.md shows the lines that rebuild it. PyTorch must be installed.",
    )
    p.add_argument("checkpoint", type=file_path, metavar="CHECKPOINT", help="a model.json")
    p.add_argument("out", type=file_path, metavar="OUT", help="the file to write, e.g. model.pt")
    p.set_defaults(func=partial(run_export, parser=p))


def run_export(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Export a checkpoint for PyTorch: 0, 1 for a bad checkpoint, a missing torch or an
    unwritable OUT, 2 for an OUT that is the checkpoint or another file of its run (by inode,
    whatever the path's form) or not a regular file (a
    symlink, device, FIFO or folder, which writing would replace)."""
    shown = shown_path(args.out)
    try:
        refuse_non_regular(args.out)  # before loading: atomic_write checks again at the end
    except NotARegularFile as e:
        parser.error(f"argument OUT: {shown}: {e.strerror}")
    checkpoint = language.checkpoint_file(args.checkpoint)
    owned = run_file_named(args.out, args.checkpoint)
    if owned is not None:
        what = "the checkpoint itself" if owned == checkpoint.name else f"the run's {owned}"
        parser.error(f"argument OUT: {shown} is {what}; name another file")
    try:
        loaded = load_checkpoint(checkpoint)
        export_torch(loaded.model, args.out)
    except CheckpointError as e:
        problem = str(e)
    except ImportError:
        problem = TORCH_MISSING
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
        if isinstance(loaded.architecture, language.M.LMArchitecture):
            return emit([f"wrote {shown}: the {arch} as a state_dict under nanoGPT's names"])
        return emit([f"wrote {shown}: the {arch} as a torch.nn.Sequential state_dict"])
    print(f"modelwright-autograd export: {problem}", file=sys.stderr)
    return 1
