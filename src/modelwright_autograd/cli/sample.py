"""``modelwright-autograd sample``: samples from a trained language model."""

from __future__ import annotations

import argparse
import sys
from functools import partial

from ..checkpoint import CheckpointError
from ..checks import shown_text
from ..lm.sampling import BrokenModel, default_prompt
from ..printing import emit
from ..training import lm_run
from .options import Subparsers, file_path, random_seed, real_number, whole_number


def add_sample(subparsers: Subparsers) -> None:
    """The ``sample`` command's options."""
    p = subparsers.add_parser(
        "sample",
        help="write samples from a trained language model",
        description="Sample from the language model of RUN (a run folder or its model.json "
        "written by train). A names model writes whole names, each marked as in the "
        "training set, in the test set or new (as makemore prints them); a text model "
        "continues --prompt. The same --seed gives the same samples. Exit code 2 for a run "
        "that is not a language model, a prompt with characters outside its vocabulary or "
        f"more than {lm_run.MAX_SAMPLE_TOKENS:,} characters in all; 1 for an unreadable "
        "checkpoint.",
    )
    p.add_argument("run", type=file_path, metavar="RUN", help="a run folder or its model.json")
    p.add_argument(
        "--num",
        type=whole_number("--num", 1, 10_000),
        metavar="N",
        help="how many samples (default: 20 names, 1 text)",
    )
    p.add_argument(
        "--prompt",
        metavar="TEXT",
        help="text to continue (default, and for an empty TEXT: a newline, as nanoGPT, or "
        "the model's first character when it knows no newline; for names, nothing: each "
        "name starts fresh, or with TEXT)",
    )
    p.add_argument(
        "--tokens",
        type=whole_number("--tokens", 1),
        metavar="N",
        help="text models: characters to write per sample (default 500; --num x --tokens at "
        f"most {lm_run.MAX_SAMPLE_TOKENS:,}); names end at their end token",
    )
    p.add_argument(
        "--temperature",
        type=real_number("--temperature", positive=True, maximum=100.0),
        default=1.0,
        metavar="T",
        help="divide the logits by T: below 1 more likely text, above 1 more surprising "
        "(default 1)",
    )
    p.add_argument(
        "--top-k",
        type=whole_number("--top-k", 1),
        metavar="K",
        help="draw only from the K most likely next characters (default: all; a K above "
        "the vocabulary's size means all, as nanoGPT's min(top_k, vocab_size))",
    )
    p.add_argument(
        "--seed", type=random_seed, default=1337, help="seed for the draws (default 1337)"
    )
    p.set_defaults(func=partial(run_sample, parser=p))


def run_sample(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print samples: 0; 2 for a missing or bad checkpoint, a run that is not a language
    model, a prompt outside the vocabulary or too many characters asked for; 1 for a
    broken model."""
    try:
        run = lm_run.load_lm_run(args.run)
    except CheckpointError as e:  # a file that is not a checkpoint this takes: bad input
        print(f"modelwright-autograd sample: {e}", file=sys.stderr)
        return 2
    except lm_run.NotALanguageModel as e:
        parser.error(f"argument RUN: {e}")
    vocab = run.vocab
    prompt = args.prompt or ("" if run.names else default_prompt(vocab))
    if len(prompt) > lm_run.MAX_PROMPT:
        parser.error(f"argument --prompt: at most {lm_run.MAX_PROMPT:,} characters")
    missing = vocab.missing(prompt)
    if missing:
        parser.error(
            f"argument --prompt: characters not in the model's vocabulary: "
            f"{''.join(missing[:20])!r} (it knows {vocab.chars!r})"
        )
    if run.names and args.tokens is not None:
        parser.error("argument --tokens: a names model writes each name to its end token")
    num = args.num or (20 if run.names else 1)
    tokens = None if run.names else (args.tokens or 500)
    total = num * (tokens or run.model.block_size)
    if total > lm_run.MAX_SAMPLE_TOKENS:
        option = "--tokens" if args.tokens is not None else "--num"  # the one the user gave
        parser.error(
            f"argument {option}: {num:,} samples of up to {tokens or run.model.block_size:,} "
            f"characters is {total:,}; at most {lm_run.MAX_SAMPLE_TOKENS:,}"
        )
    try:
        samples = lm_run.sample_lm(
            run, num, prompt, tokens, args.temperature, args.top_k, args.seed
        )
    except BrokenModel as e:
        print(f"modelwright-autograd sample: the model is broken: {e}", file=sys.stderr)
        return 1
    except ValueError as e:
        parser.error(f"argument --temperature: {e}")
    if not run.names:  # the model's own newlines kept, every other control character escaped
        return emit(["\n---------------\n".join(shown_text(s, keep="\n") for s in samples)])
    samples = [shown_text(name) for name in samples]
    if run.corpus is None:
        return emit([*samples, f"(not marked as in train/test/new: {run.missing})"])
    train, test = set(run.corpus.train), set(run.corpus.test)
    groups: dict[str, list[str]] = {"in train": [], "in test": [], "new": []}
    for name in samples:
        key = "in train" if name in train else "in test" if name in test else "new"
        groups[key].append(name)
    lines = []
    for key, names in groups.items():
        lines.append(f"{len(names)} samples that are {key}:")
        lines += names
    return emit(lines)
