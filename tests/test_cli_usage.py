"""The command line's own words (issue 32): a refusal is one line naming the command and the
option, exit code 2, with no usage block; an option a command does not have is refused by
that command; --version and the help say what is true."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from modelwright_autograd.cli import COMMANDS, build_parser

ROOT = Path(__file__).parents[1]


def _run(*words):
    done = subprocess.run(
        [sys.executable, "-m", "modelwright_autograd", *words],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize(
    "words, line",
    [
        (["train", "--lr", "0"], "modelwright-autograd train: --lr: must be greater than 0, got 0"),
        (
            ["evaluate", "--samples", "x"],
            "modelwright-autograd evaluate: --samples: expected a whole number, got 'x'",
        ),
        (["sample"], "modelwright-autograd sample: the following arguments are required: RUN"),
        (
            ["train", "--bogus", "3"],
            "modelwright-autograd train: unrecognized arguments: --bogus 3 "
            "(see modelwright-autograd train --help)",
        ),
        (
            ["check", "--nope", "engine.py"],
            "modelwright-autograd check: unrecognized arguments: --nope "
            "(see modelwright-autograd check --help)",
        ),
        (
            [],
            "modelwright-autograd: the following arguments are required: COMMAND "
            "(see modelwright-autograd --help)",
        ),
        (
            ["evaluate"],
            "modelwright-autograd evaluate: give a RUN (a run folder or model.json) or "
            "--checkpoint FILE",
        ),
        (
            ["evaluate", "run", "--checkpoint", "run/model.json"],
            "modelwright-autograd evaluate: give a RUN (a run folder or model.json) or "
            "--checkpoint FILE, not both",
        ),
        (["train", "--data", "a\nb\x1b[2J"], None),  # a control character stays on its line
    ],
)
def test_a_refusal_is_one_line_with_exit_code_2(words, line):
    code, out, err = _run(*words)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "usage:" not in err, err
    if line is not None:
        assert err == line + "\n"
    else:
        assert "\x1b" not in err and err.startswith("modelwright-autograd train: --data: ")


def test_version_is_the_project_s():
    version = re.search(r'^version = "(.+)"$', (ROOT / "pyproject.toml").read_text(), re.M)[1]
    assert _run("--version") == (0, f"modelwright-autograd {version}\n", "")


def test_every_command_has_help_and_states_each_default_once():
    parser = build_parser()
    assert len(parser.commands) == len(COMMANDS)
    for name, command in parser.commands.items():
        text = command.format_help()
        assert text.startswith(f"usage: modelwright-autograd {name}"), name
    train = " ".join(parser.commands["train"].format_help().split())
    assert "the embedding width (default: gpt 128, transformer 64, mlp 64)" in train
    assert "train an MLP or a language model" in " ".join(parser.format_help().split())


# One rule for every command (docs/README.md, "Exit codes"): what was typed that cannot be used
# (an option, a file to read that is missing or is not what the command takes, a path to
# write whose folder is a file) is 2, before any work; a failure of the work itself is 1.
EVERY_COMMAND = [
    (["train", "--resume", "MISSING", "--steps", "9"], "no such file"),
    (["train", "--dataset", "names", "--model", "bigram", "--out", "FILE/run"], "FILE is a file"),
    (["evaluate", "MISSING"], "no such file"),
    (["evaluate", "--checkpoint", "FILE"], "not valid JSON"),
    (["sample", "MISSING"], "no such file"),
    (["export", "MISSING", "out.pt"], "no such file"),
    (["export", "MISSING", "FILE/out.pt", "--format", "state_dict"], "FILE is a file"),
    (["import", "MISSING"], "no such file"),
    (["explain", "a*b", "a=1", "b=2", "--html", "FILE/x.html"], "FILE is a file"),
    (["init", "FILE"], "is a regular file, not a folder"),
    (["check", "MISSING"], "does not exist"),
]


@pytest.mark.parametrize(
    "words, said", EVERY_COMMAND, ids=lambda w: " ".join(w) if isinstance(w, list) else ""
)
def test_every_command_exits_2_in_one_line_for_what_cannot_be_used(tmp_path, words, said):
    (tmp_path / "FILE").write_text("not a folder, not a checkpoint\n")
    done = subprocess.run(
        [sys.executable, "-m", "modelwright_autograd", *words],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"modelwright-autograd {words[0]}: ") and said in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["FILE"]  # nothing written
