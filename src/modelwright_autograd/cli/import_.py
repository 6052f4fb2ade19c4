"""``modelwright-autograd import``: a nanoGPT, makemore or torch file as a run of ours."""

from __future__ import annotations

import argparse
import sys
from functools import partial

from ..checkpoint import TORCH_MISSING, CheckpointError
from ..checks import shown_path
from ..lm.corpus import CorpusError, read_source
from ..lm.models import LMArchitecture
from ..printing import emit
from ..training import interchange, language
from ..training.settings import SettingError
from .options import Subparsers, UsageError, file_path, nonempty_path, random_seed, whole_number


def add_import(subparsers: Subparsers) -> None:
    """The ``import`` command's options."""
    p = subparsers.add_parser(
        "import",
        help="turn a nanoGPT ckpt.pt, a makemore model.pt or a torch state_dict into a run",
        description="Read FILE, nanoGPT's ckpt.pt, makemore's model.pt or a torch state_dict "
        "of one of the language models, with torch.load(weights_only=True) (or a .safetensors "
        "file of such a state_dict, its header checked first), and write a run "
        "folder holding it as model.json with its vocabulary, settings and AdamW state "
        "(nanoGPT's ckpt.pt holds one; makemore's model.pt none, so resuming starts a fresh "
        "one): sample, evaluate and train --resume then take it. A GPT's characters come "
        "from meta.pkl (beside FILE, or --meta) or the text it was trained on (--data or "
        "--dataset, as nanoGPT's prepare.py makes them); a names model's from its names file "
        "(makemore's files hold none). Give the data to evaluate or resume the run. Exit "
        "code 2 for a file that is not one of these, or whose names, shapes or contents "
        "(its optimiser state's too) do not fit; 1 without torch.",
    )
    p.add_argument("file", type=file_path, metavar="FILE", help="the ckpt.pt or model.pt")
    p.add_argument(
        "--out",
        type=nonempty_path("a folder"),
        metavar="DIR",
        help="the run folder to write (default: runs/<data>-<timestamp>)",
    )
    p.add_argument(
        "--overwrite", action="store_true", help="replace the files of a previous run in --out"
    )
    p.add_argument("--meta", type=file_path, metavar="PKL", help="nanoGPT's meta.pkl")
    p.add_argument(
        "--dataset", choices=language.LM_DATASETS, help="the shipped data it was trained on"
    )
    p.add_argument("--data", type=file_path, metavar="PATH", help="the text it was trained on")
    p.add_argument(
        "--model",
        choices=("transformer", "gpt"),
        help="a bare state_dict of a transformer: makemore's (tanh GELU; the default when it "
        "holds makemore's causal masks) or nanoGPT's GPT (the default otherwise)",
    )
    p.add_argument(
        "--n-head",
        type=whole_number("--n-head", 1),
        default=4,
        metavar="N",
        help="a bare state_dict's attention heads, which its weights do not show (default 4, "
        "makemore's); nanoGPT's ckpt.pt says it",
    )
    p.add_argument(
        "--seed",
        type=random_seed,
        default=1337,
        help="the seed of a names model's train/test split (default 1337, as train's)",
    )
    p.set_defaults(func=partial(run_import, parser=p))


def run_import(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Import FILE: 0; 2 for a bad file (one line) or option; 1 without torch."""
    if args.data is not None and args.dataset is not None:
        parser.error("argument --data: give --data or --dataset, not both")
    text = source = None
    if args.data is not None or args.dataset is not None:
        try:
            text, source = read_source(args.dataset, args.data)
        except CorpusError as e:
            parser.error(f"argument {'--data' if args.data else '--dataset'}: {e}")
    try:
        imported = interchange.import_model(
            args.file, args.meta, text, source, args.model, args.n_head, args.seed
        )
        run = interchange.write_run(imported, args.file, args.out, args.overwrite, args.seed)
    except CheckpointError as e:  # a bad file: one line, no usage
        print(f"modelwright-autograd import: {e}", file=sys.stderr)
        return 2
    except SettingError as e:  # the run folder (--out)
        parser.error(str(UsageError.of(e)))
    except ImportError:
        print(f"modelwright-autograd import: {TORCH_MISSING}", file=sys.stderr)
        return 1
    arch = LMArchitecture(imported.model.config).describe()
    lines = [f"wrote {run.shown}: the {arch} from {imported.format}'s {shown_path(args.file)}"]
    if imported.optimizer["state"]:
        lines.append(f"  with the file's AdamW state at step {imported.step:,}")
    else:
        lines.append("  the file holds no optimiser state: train --resume starts a fresh AdamW")
    if source is None:
        lines.append(
            "  (no --data or --dataset: sample works; evaluate and --resume need the data)"
        )
    return emit(lines)
