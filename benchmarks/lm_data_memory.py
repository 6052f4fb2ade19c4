"""Peak memory of ``train --data`` against the file's size (``python -m
benchmarks.lm_data_memory``): how many bytes of memory each byte of a names-style file
costs, for the worst lines (one or two letters, so the most words a byte) and for real
names, each file with one line of the longest length a names model takes (64 characters,
which sets every word's context).

Each run is a child process of its own: it imports everything a run uses first, notes
its peak resident memory (``ru_maxrss``), trains the model (``--model``, default bigram)
one step (reading, splitting, a batch, the evaluations, the counting bigram over every
training word, the files), and
reports the peak again; the difference is what the run cost. A run on a file of a few
lines gives the part that does not depend on the data (the model, the pictures), which is
subtracted: the rest, over the file's size, is the bytes of memory a byte of data costs.
The target is at most 20 (docs/language-models.md). ``--smoke`` uses 1 MB files."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.machine import load_average

TARGET = 20.0
_CHILD = r"""
import json, resource, sys, tempfile
import matplotlib.pyplot, tqdm  # everything a run imports, before the baseline
from modelwright_autograd import cli
from modelwright_autograd.training import language
def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
before = peak()
out = tempfile.mkdtemp() + "/run"
argv = ["train", "--data", sys.argv[1], "--model", sys.argv[2], "--steps", "1",
        "--eval-interval", "1", "--out", out, "--quiet"]
code = cli.main(argv)
print(json.dumps({"code": code, "before": before, "after": peak()}))
"""


def _names_file(path: Path, size: int, kind: str) -> None:
    """A names-style file of about ``size`` bytes: ``short`` lines of one or two letters,
    or the real ``names`` repeated; either way one 64-character line first."""
    if kind == "short":
        unit = "".join(f"{a}\n{a}{b}\n" for a in "abcdefghijklmnopqrstuvwxyz" for b in "aeiou")
    else:
        from modelwright_autograd.lm.corpus import builtin_path

        unit = builtin_path("names").read_text()
    head = "abcdefgh" * 8 + "\n"
    path.write_text(head + unit * max(1, (size - len(head)) // len(unit)))


def _run_peak(data: Path, model: str) -> int:
    """What one step of ``model`` on ``data`` adds to the peak memory of a process, in
    bytes."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(data), model],
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    if found["code"] != 0:
        raise RuntimeError(f"train failed: {done.stderr.strip()[-300:]}")
    return found["after"] - found["before"]


def fixed_cost(model: str) -> int:
    """The peak a run on a file of three short lines adds: the model and pictures."""
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "tiny.txt"
        data.write_text("abcdefgh" * 8 + "\nab\nba\n")
        return _run_peak(data, model)


def measure(size: int, kind: str, fixed: int, model: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / f"{kind}.txt"
        _names_file(data, size, kind)
        used = _run_peak(data, model)
        file_bytes = data.stat().st_size
    return {
        "kind": kind,
        "file_mb": file_bytes / 2**20,
        "peak_mb": used / 2**20,
        "bytes_per_byte": (used - fixed) / file_bytes,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.lm_data_memory")
    p.add_argument("--smoke", action="store_true", help="1 MB files (seconds)")
    p.add_argument(
        "--model", choices=("bigram", "mlp", "transformer"), default="bigram", help="the model"
    )
    args = p.parse_args(argv)
    sizes = [2**20] if args.smoke else [4 * 2**20, 16 * 2**20]
    load = load_average()
    fixed = fixed_cost(args.model)
    print(
        f"peak memory of train --data ({args.model}, 1 step; {fixed / 2**20:.0f} MB for a file of "
        f"three lines subtracted), load {load}"
    )
    print("| file | MB | peak MB | bytes a byte | target |")
    print("|---|---|---|---|---|")
    for size in sizes:
        for kind in ("short", "names"):
            row = measure(size, kind, fixed, args.model)
            ok = "met" if row["bytes_per_byte"] <= TARGET else "MISS"
            print(
                f"| {kind} | {row['file_mb']:.1f} | {row['peak_mb']:.0f} | "
                f"{row['bytes_per_byte']:.1f} | <= {TARGET:g} {ok} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
