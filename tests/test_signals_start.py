"""Signals at the edges of a command (issue 23, items 22 and 23), sent to real processes:
while the command line's imports run, and while train claims its run folder with NumPy's
BLAS thread running beside the main thread."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import modelwright_autograd

ROOT = Path(__file__).parents[1]
ENV = {**os.environ, "PYTHONPATH": str(Path(modelwright_autograd.__file__).parents[1])}
SIGNALS = [(signal.SIGINT, 130), (signal.SIGTERM, 143)]


def _as_from_a_terminal() -> None:
    """In the child: SIGINT as a terminal gives it (a shell starts background jobs with
    SIGINT ignored, and the program rightly leaves an ignored signal ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


#: Starts the program as ENTRY says, with NumPy's import held until a signal is pending
#: or has been handled: the test sends the signal once "importing numpy" is written, so it
#: comes while the command line's imports run.
_HELD_IMPORT = """
import importlib, signal, sys, time
class HoldNumpy:
    def find_spec(self, name, path=None, target=None):
        if name != "numpy":
            return None
        sys.meta_path.remove(self)
        sys.stderr.write("importing numpy\\n")
        sys.stderr.flush()
        while not signal.sigpending():
            time.sleep(0.01)  # a handler that raises or exits ends this wait too
        return None
sys.meta_path.insert(0, HoldNumpy())
entry = sys.argv.pop(1)
if entry == "-m":
    import runpy
    runpy.run_module("modelwright_autograd", run_name="__main__", alter_sys=True)
module, name = entry.split(":")
sys.exit(getattr(importlib.import_module(module), name)())
"""


def _console_entry() -> str:
    """The ``modelwright-autograd`` script's module:function, as pyproject.toml declares."""
    found = re.search(
        r'^modelwright-autograd = "([\w.]+:\w+)"', (ROOT / "pyproject.toml").read_text(), re.M
    )
    assert found, "no modelwright-autograd script in pyproject.toml"
    return found[1]


@pytest.mark.parametrize("entry", ["-m", "console"])
@pytest.mark.parametrize(("sig", "code"), SIGNALS)
def test_a_signal_while_the_imports_run_is_one_line(tmp_path, entry, sig, code):
    entry = _console_entry() if entry == "console" else entry
    proc = subprocess.Popen(
        [sys.executable, "-c", _HELD_IMPORT, entry, "evaluate", "--checkpoint", "x.json"],
        cwd=tmp_path,
        env=ENV,
        preexec_fn=_as_from_a_terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr.readline() == "importing numpy\n"
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out, err) == (code, "", "modelwright-autograd evaluate: interrupted\n")


#: train, with the run folder's lock wrapped: once the folder is made and locked (inside
#: the claim), "claiming" is written and the main thread stays there two seconds, while
#: the test sends the signal to the process (the kernel may give it to any thread).
_IN_CLAIM = """
import sys, time
from modelwright_autograd.training import outputs
real = outputs._locked
def locked(path):
    fd = real(path)
    sys.stderr.write("claiming\\n")
    sys.stderr.flush()
    for _ in range(200):
        time.sleep(0.01)
    return fd
outputs._locked = locked
from modelwright_autograd import cli
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize(("sig", "code"), SIGNALS)
def test_a_signal_while_the_run_folder_is_claimed_leaves_nothing(tmp_path, sig, code):
    out = tmp_path / "run"
    args = ["train", "--samples", "30", "--steps", "3", "--hidden", "4", "--quiet"]
    proc = subprocess.Popen(
        [sys.executable, "-c", _IN_CLAIM, *args, "--out", str(out)],
        env=ENV,
        preexec_fn=_as_from_a_terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr.readline() == "claiming\n"
    proc.send_signal(sig)
    stdout, err = proc.communicate(timeout=60)
    name = signal.Signals(sig).name
    assert (proc.returncode, stdout) == (code, "")
    assert err == f"modelwright-autograd train: interrupted ({name}); nothing was written\n"
    assert os.listdir(tmp_path) == []  # as the message says: no folder, no staging


def test_an_ignored_sigint_stays_ignored(tmp_path):
    """``nohup`` or ``cmd &`` in a script start the program with SIGINT ignored: Python
    leaves it so, and so do the program's own handlers (SIGTERM still ends it)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HELD_IMPORT, "-m", "evaluate", "--checkpoint", "x.json"],
        cwd=tmp_path,
        env=ENV,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr.readline() == "importing numpy\n"
    proc.send_signal(signal.SIGINT)  # ignored: the import goes on
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out, err) == (143, "", "modelwright-autograd evaluate: interrupted\n")
