"""``modelwright-autograd init``: write a starter engine to fill in."""

from __future__ import annotations

import argparse
import sys

from ..printing import emit
from .options import Subparsers, nonempty_path, shell_word

#: The longest path init echoes back; a longer one is described, not printed.
MAX_SHOWN_PATH = 200


def add_init(subparsers: Subparsers) -> None:
    """The ``init`` command's options."""
    parser = subparsers.add_parser(
        "init",
        help="write a starter engine to fill in (engine.py, nn.py, README, notebook)",
        description=(
            "Write a starter for building your own engine into DIR: engine.py with a Value "
            "whose forwards are given and whose backward rules and backward() are TODOs, "
            "nn.py (Neuron, Layer, MLP), a README of steps and starter.ipynb with the "
            "gradient check. DIR must be new or empty, or a symbolic link to an empty "
            "folder (exit code 2 otherwise); an existing folder is filled in place and "
            "keeps its permissions, owner and group, and missing parent folders are "
            "created, as mkdir -p and git init do. A failed write (exit code 1) removes "
            "the files it wrote."
        ),
    )
    parser.add_argument(
        "dir", type=nonempty_path("a folder name"), metavar="DIR", help="a new or empty folder"
    )
    parser.add_argument(
        "--tensor",
        action="store_true",
        help=(
            "the next step: a Tensor over NumPy arrays (broadcasting, @, sum/mean, "
            "log_softmax, cross_entropy) and an nn.py with Linear and MLP, checked on digits"
        ),
    )
    parser.add_argument(
        "--backprop",
        action="store_true",
        help=(
            "backprop by hand (makemore part 4): makemore's MLP with batch norm in NumPy, its "
            "forward in small named steps; you write each tensor's gradient (26 TODOs), then "
            "the fused cross-entropy and batch norm (2 more); train.py trains it on the "
            "names; check grades every tensor against PyTorch"
        ),
    )
    parser.set_defaults(func=run_init)


def run_init(args: argparse.Namespace) -> int:
    """Write the starter: 0; 1 when it cannot be written (nothing is left behind); 2 when
    DIR is not a new or empty folder or not a usable name."""
    from ..learner.report import printable
    from ..learner.starter import StarterError, write_starter

    try:
        if args.tensor and args.backprop:
            raise StarterError("choose one of --tensor and --backprop")
        written = write_starter(args.dir, tensor=args.tensor, backprop=args.backprop)
    except StarterError as error:
        print(f"modelwright-autograd init: error: {printable(str(error))}", file=sys.stderr)
        return error.exit_code
    shown = shell_word(str(args.dir))
    if len(shown) > MAX_SHOWN_PATH:
        shown = f"the folder given (a path of {len(str(args.dir)):,} characters)"
        check = "modelwright-autograd check on that folder"
    else:
        check = f"modelwright-autograd check {shown}"
    return emit(
        [
            f"wrote {', '.join(p.name for p in written)} to {shown}",
            f"next: fill in the TODOs, then run: {check}",
        ]
    )
