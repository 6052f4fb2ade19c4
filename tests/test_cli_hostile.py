"""Hostile input to the commands (issue 12): paths that are not regular files, signals
sent to real processes, overridden data, files dropped into a run folder mid-run and
control characters in paths. Each ends in one line and the documented exit code."""

import os
import signal
import stat
import subprocess
import sys

import pytest

from modelwright_autograd import cli
from modelwright_autograd.checks import shown_path
from modelwright_autograd.cli import train as cli_train
from modelwright_autograd.files import NotARegularFile, atomic_write
from modelwright_autograd.training.settings import MAX_NOISE

SMALL = ["--samples", "30", "--steps", "5", "--hidden", "4,4", "--quiet"]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    out = tmp_path_factory.mktemp("trained") / "run"
    assert cli.main(["train", *SMALL, "--out", str(out)]) == 0
    return out / "model.json"


def _one_error_line(capsys):
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1, captured.err
    return captured.err


# ---------------------------------------------------------------------- not regular files
def _fifo_with_reader(tmp_path):
    path = tmp_path / "pipe"
    os.mkfifo(path)
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    return path, reader


def _symlink(tmp_path):
    target = tmp_path / "target.txt"
    target.write_text("the link's target\n")
    link = tmp_path / "link"
    link.symlink_to(target)
    return link


def _device(tmp_path):
    """A character device like /dev/null (major 1, minor 3), made inside tmp_path."""
    path = tmp_path / "null"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError as e:
        pytest.skip(f"making a device node needs root (CAP_MKNOD): {e}")
    return path


def _not_regular(kind, tmp_path):
    """A path of the given kind and a check that it is still that kind, untouched."""
    if kind == "fifo":
        path, reader = _fifo_with_reader(tmp_path)
        return path, lambda: stat.S_ISFIFO(os.lstat(path).st_mode) and os.close(reader) is None
    if kind == "symlink":
        link = _symlink(tmp_path)
        return (
            link,
            lambda: (
                link.is_symlink() and (tmp_path / "target.txt").read_text() == "the link's target\n"
            ),
        )
    if kind == "device":
        path = _device(tmp_path)
        return path, lambda: stat.S_ISCHR(os.lstat(path).st_mode)
    path = tmp_path / "folder"
    path.mkdir()
    return path, lambda: path.is_dir() and os.listdir(path) == []


KINDS = {
    "fifo": "a FIFO",
    "symlink": "a symbolic link",
    "device": "a character device",
    "folder": "a directory",
}


@pytest.mark.parametrize("kind", KINDS)
def test_atomic_write_refuses_what_is_not_a_regular_file(tmp_path, kind):
    path, untouched = _not_regular(kind, tmp_path)
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(NotARegularFile) as info:
        atomic_write(path, lambda f: f.write("new"))
    assert KINDS[kind] in info.value.strerror and info.value.filename == str(path)
    assert untouched()
    assert sorted(os.listdir(tmp_path)) == before  # no temporary file left either


@pytest.mark.parametrize("kind", KINDS)
def test_export_refuses_an_out_that_is_not_a_regular_file_before_loading(tmp_path, kind, capsys):
    path, untouched = _not_regular(kind, tmp_path)
    missing = tmp_path / "no-such-checkpoint.json"  # never read: OUT is refused first
    # a folder is OUT for nanoGPT's and makemore's files: one file's format refuses it
    fmt = ["--format", "state_dict"] if kind == "folder" else []
    with pytest.raises(SystemExit) as info:
        cli.main(["export", str(missing), str(path), *fmt])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"OUT: {path}: it is {KINDS[kind]}" in err and "not a regular file" in err
    assert "no-such-checkpoint" not in err
    assert untouched()


def test_a_checkpoint_is_not_saved_over_a_symlink(tmp_path, checkpoint, capsys):
    """The train outputs and checkpoints go through atomic_write too: a model.json that is
    a symlink in a folder given to --overwrite is refused, the link and its target kept."""
    from modelwright_autograd.checkpoint import load_checkpoint, save_checkpoint

    link = _symlink(tmp_path)
    with pytest.raises(NotARegularFile):
        save_checkpoint(link, load_checkpoint(checkpoint).model)
    assert link.is_symlink() and link.read_text() == "the link's target\n"


def test_explain_graph_to_a_fifo_is_one_line(tmp_path, capsys):
    """explain does not check --graph itself: cli.main turns the OSError into one line."""
    graph = tmp_path / "g.dot"
    os.mkfifo(graph)
    assert (
        cli.main(["explain", "a*b", "a=2", "b=3", "--graph", str(graph)]) == 2
    )  # an output that cannot be written: a usage error
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("modelwright-autograd explain: error: ")
    assert f"{graph}: it is a FIFO (named pipe), not a regular file" in err
    assert stat.S_ISFIFO(os.lstat(graph).st_mode)


# ---------------------------------------------------------------------- signals
#: Runs the command line as the console script does, after replacing one function the
#: command calls with a wrapper that first writes "working" to stderr: the test then knows
#: the command is inside its work (cli.main's handlers set) when it sends the signal.
_INSTRUMENTED = """
import importlib, sys
module, name = sys.argv[1].rsplit(":", 1)
module = importlib.import_module(module)
real = getattr(module, name)
def marked(*args, **kwargs):
    sys.stderr.write("working\\n")
    sys.stderr.flush()
    return real(*args, **kwargs)
setattr(module, name, marked)
from modelwright_autograd import cli
sys.exit(cli.main(sys.argv[2:]))
"""


def _signalled(where, args, sig):
    proc = subprocess.Popen(
        [sys.executable, "-c", _INSTRUMENTED, where, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr.readline() == "working\n"
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_evaluate_is_one_line(checkpoint, sig, code):
    """Scoring 100,000 points through the scalar engine takes seconds: the signal comes
    right after the data is made, during the scoring."""
    where = "modelwright_autograd.training.evaluate:load_dataset"
    args = ["evaluate", "--checkpoint", str(checkpoint), "--samples", "100000"]
    returncode, out, err = _signalled(where, args, sig)
    assert (returncode, out, err) == (code, "", "modelwright-autograd evaluate: interrupted\n")


def test_ctrl_c_during_export_is_one_line(tmp_path, checkpoint):
    """The signal comes as export starts importing torch (seconds); nothing is written."""
    out = tmp_path / "model.pt"
    where = "modelwright_autograd.cli.export:export_torch"
    returncode, stdout, err = _signalled(
        where, ["export", str(checkpoint), str(out)], signal.SIGINT
    )
    assert (returncode, stdout, err) == (130, "", "modelwright-autograd export: interrupted\n")
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------------- evaluate's data
def test_evaluate_on_new_data_does_not_call_it_the_training_set(checkpoint, capsys):
    assert cli.main(["evaluate", "--checkpoint", str(checkpoint), "--samples", "40"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "evaluated on new data" in lines[0] and "samples 40" in lines[0]
    assert lines[1].startswith("data ") and lines[1].endswith("(new data, not its training set)")
    assert "/40)" in lines[1]
    assert len(lines) == 2


@pytest.mark.parametrize("command", ["train", "evaluate"])
def test_noise_that_would_overflow_the_data_is_refused(checkpoint, command, capsys):
    args = (
        ["train", *SMALL] if command == "train" else ["evaluate", "--checkpoint", str(checkpoint)]
    )
    with pytest.raises(SystemExit) as info:
        cli.main([*args, "--noise", "1e308"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"--noise: must be at most {MAX_NOISE:g}, got 1e308" in err


# ---------------------------------------------------------------------- a shared run folder
def test_files_dropped_into_the_run_folder_keep_it_and_say_so(tmp_path, monkeypatch, capsys):
    """Someone puts a file into the (empty) run folder while the run trains: the rename
    into place must fail, the folder is kept with that file, and the message says so."""
    out = tmp_path / "run"
    real_training = cli_train.run_training

    def training_while_a_user_writes(config, staging, quiet):
        (out / "notes.txt").write_text("mine\n")
        return real_training(config, staging, quiet=quiet)

    monkeypatch.setattr(cli_train, "run_training", training_while_a_user_writes)
    assert cli.main(["train", *SMALL, "--out", str(out)]) == 1
    err = _one_error_line(capsys)
    assert err.startswith(f"modelwright-autograd train: cannot finish {out}: ")
    assert err.endswith(f"; {out} was kept: it holds files this run did not write\n")
    assert os.listdir(out) == ["notes.txt"] and os.listdir(tmp_path) == ["run"]


# ---------------------------------------------------------------------- control characters
def test_shown_path_escapes_what_is_not_printable():
    assert shown_path("a\nb\tc\x1b[31md\x7f") == "a\\nb\\tc\\x1b[31md\\x7f"
    assert shown_path(os.fsdecode(b"caf\xff")) == "caf\\udcff"
    assert shown_path("plain/é.json") == "plain/é.json"


def test_a_newline_in_a_path_stays_on_one_line(tmp_path, checkpoint, capsys):
    odd = tmp_path / "x\ny"
    assert cli.main(["evaluate", "--checkpoint", str(odd)]) == 2
    assert f"checkpoint {tmp_path}/x\\ny: " in _one_error_line(capsys)

    assert cli.main(["export", str(odd), str(tmp_path / "out\n.pt")]) == 2
    assert f"checkpoint {tmp_path}/x\\ny: " in _one_error_line(capsys)

    odd.write_text("a file, not a folder")
    with pytest.raises(SystemExit):
        cli.main(["train", *SMALL, "--out", str(odd)])
    err = capsys.readouterr().err.strip()
    assert err.splitlines()[-1].endswith(f"--out: {tmp_path}/x\\ny exists and is not a folder")
