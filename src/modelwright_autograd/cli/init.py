"""``modelwright-autograd init``: write a repository with a starter engine to fill in."""

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
        help="write a repository with a starter engine to fill in (src/, tests/, README...)",
        description=(
            "Write a repository for building your own engine into DIR, in the course's "
            "shape: pyproject.toml (uv sync or pip install -e '.[test]'), src/PACKAGE/ with "
            "engine.py (a Value whose forwards are given and whose backward rules and "
            "backward() are TODOs) and nn.py (Neuron, Layer, MLP), tests/ (the gradient "
            "check against PyTorch, a TODO per operation for your unit tests), train.py "
            "(make_moons: the loss curve and the decision boundary), a README and a "
            "REPORT.md to fill in, .gitignore, starter.ipynb, and git init with nothing "
            "committed; PACKAGE is DIR's name (see docs/build-your-own.md). DIR must be new "
            "or empty, or a symbolic link to an empty "
            "folder (exit code 2 otherwise); an existing folder is filled in place and "
            "keeps its permissions, owner and group, and missing parent folders are "
            "created, as mkdir -p and git init do. A failed write (exit code 1) removes "
            "the files it wrote."
        ),
    )
    parser.add_argument(
        "dir",
        type=nonempty_path("a folder name"),
        metavar="DIR",
        help="a new or empty folder (with --lm, also one holding your tensor engine)",
    )
    parser.add_argument(
        "--tensor",
        action="store_true",
        help=(
            "the next step: a Tensor over NumPy arrays (broadcasting, @, sum/mean, "
            "log_softmax, cross_entropy) and an nn.py with Linear and MLP, checked on digits; "
            "the same repository around it"
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
    parser.add_argument(
        "--lm",
        action="store_true",
        help=(
            "the last step: the tensor repository plus lm_ops.py (embedding, split, cat, "
            "masked_fill, softmax, layer_norm, gelu, dropout) and models.py (makemore's MLP, "
            "nanoGPT's GPT and AdamW) beside the engine, LM.md and lm.ipynb; check compares "
            "them with PyTorch and trains both. DIR may be your init --tensor folder: only "
            "the files missing there are added, none of yours is overwritten"
        ),
    )
    parser.set_defaults(func=run_init)


def run_init(args: argparse.Namespace) -> int:
    """Write the starter: 0; 1 when it cannot be written (nothing is left behind); 2 when
    DIR is not a new or empty folder or not a usable name."""
    from ..learner.report import printable
    from ..learner.starter import StarterError, project_names, write_starter

    try:
        given = [f"--{k}" for k in ("tensor", "backprop", "lm") if getattr(args, k)]
        if len(given) > 1:
            raise StarterError(f"choose one of {' and '.join(given)}")
        written = write_starter(args.dir, args.tensor, args.backprop, args.lm)
    except StarterError as error:
        print(f"modelwright-autograd init: error: {printable(str(error))}", file=sys.stderr)
        return error.exit_code
    shown = shell_word(str(args.dir))
    if len(shown) > MAX_SHOWN_PATH:
        shown = f"the folder given (a path of {len(str(args.dir)):,} characters)"
        check = "modelwright-autograd check on that folder"
    else:
        check = f"modelwright-autograd check {shown}"
    lines = [f"wrote {', '.join(p.name for p in written)} to {shown}"]
    added = args.lm and not any(p.name == "pyproject.toml" for p in written)
    if added:  # into a folder holding a tensor engine
        lines[0] = f"added {', '.join(p.name for p in written)} to {shown}, keeping your files"
        if not written:
            lines[0] = f"nothing to add: {shown} has every file of init --lm already"
    elif not args.backprop and not any(p.name == ".git" for p in written):
        lines.append("git init did not run (is git installed?): run it in that folder yourself")
    where = "" if args.backprop else f" of src/{project_names(args.dir)[1]}/engine.py"
    if args.lm:
        where = " (LM.md says which)"
    lines.append(f"next: fill in the TODOs{where}, then run: {check}")
    return emit(lines)
