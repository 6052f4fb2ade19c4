"""`check` and `init` against a hostile learner: engines that fork away, forge replies,
flood the pipe or the terminal, and paths that are not files. Each must end in a clear row
or a one-line error with the documented exit code, and leave no process behind.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import modelwright_autograd
from modelwright_autograd.cli import main
from modelwright_autograd.learner import starter
from modelwright_autograd.learner.child import REPLY_LIMIT, well_formed
from modelwright_autograd.learner.locate import MAX_SOURCE_BYTES, locate
from modelwright_autograd.learner.scalar.grader import grade
from modelwright_autograd.learner.scalar.oracle import finite_difference_oracle
from modelwright_autograd.learner.starter import ENTRIES

ENGINES = Path(__file__).parent / "learner_engines"
SOLVED = (ENGINES / "solved_starter.py").read_text()
HANGS = (ENGINES / "hangs.py").read_text()
ENV = {**os.environ, "PYTHONPATH": str(Path(modelwright_autograd.__file__).parents[1])}
needs_proc = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs /proc")

# Started at import, before Value is defined: a grandchild in a session of its own.
ESCAPES = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open("grandchild.pid", "w") as f:
            f.write(str(os.getpid()))
        time.sleep(300)
    os._exit(0)
"""


def _processes_in(folder: Path) -> list[int]:
    """Processes (not zombies) whose working folder is ``folder``: the learner's code
    runs there, and so does anything it starts."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cwd = os.readlink(entry / "cwd")
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if cwd == str(folder) and state != "Z":
                pids.append(int(entry.name))
    return pids


def _engine(tmp_path: Path, prefix: str, name: str = "engine.py") -> Path:
    path = tmp_path / name
    path.write_text(prefix + "\n" + SOLVED)
    return path


def _grade(path: Path, timeout: float = 15.0):
    return grade(locate(path), finite_difference_oracle(), timeout, 60.0)


def _start_check(engine: Path, *options: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "modelwright_autograd", "check", *options, str(engine)]
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV
    )


def _wait_for(condition, seconds: float = 30.0) -> bool:
    """True as soon as ``condition()`` is, False if it never is within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


# ---------------------------------------------------------------------- processes
@needs_proc
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_end_the_check_and_kill_every_process(tmp_path, signum):
    engine = tmp_path / "engine.py"
    engine.write_text(ESCAPES + HANGS)
    proc = _start_check(engine, "--timeout", "60", "--oracle", "fd")
    # the probe, its supervisor and the setsid grandchild
    assert _wait_for(lambda: len(_processes_in(tmp_path)) >= 3), "the engine never started"
    time.sleep(0.5)  # into the hanging backward()
    assert len(_processes_in(tmp_path)) == 3  # the one between them has exited
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signum
    name = signal.Signals(signum).name
    assert err.strip() == f"modelwright-autograd check: interrupted ({name})"
    assert _wait_for(lambda: not _processes_in(tmp_path), 5.0), _processes_in(tmp_path)


@needs_proc
def test_a_killed_grader_leaves_no_process_behind(tmp_path):
    engine = tmp_path / "engine.py"
    engine.write_text(ESCAPES + HANGS)
    proc = _start_check(engine, "--timeout", "60", "--oracle", "fd")
    assert _wait_for(lambda: len(_processes_in(tmp_path)) >= 3), "the engine never started"
    time.sleep(0.5)
    assert len(_processes_in(tmp_path)) == 3
    proc.kill()  # SIGKILL: no handler runs in the grader
    proc.communicate(timeout=30)
    assert _wait_for(lambda: not _processes_in(tmp_path), 10.0), _processes_in(tmp_path)


@needs_proc
def test_a_grandchild_that_leaves_the_session_is_killed(tmp_path):
    report = _grade(_engine(tmp_path, ESCAPES))
    assert report.rows[0].status == "pass"  # the engine itself is fine
    assert (tmp_path / "grandchild.pid").exists()  # it ran
    assert not _processes_in(tmp_path)  # killed and reaped, not even a zombie


# ---------------------------------------------------------------------- replies
FORGED = {
    "a reply written into the pipe": (
        "import os, sys\n"
        'os.write(int(sys.argv[2]), b\'{"out": "x", "grads": ["y"], "mlp": 1}\\n\' * 50)'
    ),
    "float patched": "import builtins\nbuiltins.float = lambda *a: 'notafloat'",
    "json.dumps patched": "import json\njson.dumps = lambda *a, **k: '[]'",
    "a huge reply": "import json\njson.dumps = lambda *a, **k: '\"' + 'A' * (8 * 2**20) + '\"'",
    "no newline, ever": (
        "import os, sys\nw = int(sys.argv[2])\nwhile True:\n    os.write(w, b'A' * 2**20)"
    ),
}


@pytest.mark.parametrize("how", list(FORGED))
def test_a_forged_reply_is_a_failing_row_not_our_traceback(tmp_path, how):
    report = _grade(_engine(tmp_path, FORGED[how]))
    assert report.failed >= 1
    failing = [row for row in report.rows if row.status == "fail"]
    if how == "float patched":  # Value(2.0).data is a str: each check says so
        assert any("malformed reply" in row.diagnosis for row in failing)
    else:
        assert failing[0].diagnosis.endswith("sent a malformed reply")


def test_reply_shapes():
    programs = {"do": "programs", "programs": [{"inputs": [1.0, 2.0], "steps": [["add", 0, 1]]}]}
    good = {"out": 3.0, "out_grad": 1.0, "grads": [1.0, 1.0]}
    assert well_formed(programs, {"results": [good]})
    assert not well_formed(programs, {"results": [good | {"grads": [1.0]}]})
    assert not well_formed(programs, {"results": [good | {"out": "3"}]})
    assert not well_formed(programs, {"results": [good, good]})
    assert not well_formed(programs, {"results": [{"stage": "forward", "error": "x"}]})
    assert not well_formed(programs, [])
    assert well_formed({"do": "shape"}, {"error": {"type": "E", "message": "", "where": ""}})
    assert not well_formed({"do": "shape"}, {"data": 2.0, "grad": True})
    assert not well_formed({"do": "load"}, {"mlp": True})  # which classes, then?
    assert not well_formed({"do": "train"}, {"history": []})
    assert not well_formed({"do": "chain"}, {"recursion": False})
    accumulate = {"after_first": 3.0, "after_second": 4.0, "after_other": 4.0}
    accumulate |= {"same_graph": 18.0, "defaults": []}
    assert well_formed({"do": "accumulate"}, accumulate)
    assert not well_formed({"do": "accumulate"}, accumulate | {"defaults": [3]})
    assert not well_formed({"do": "accumulate"}, accumulate | {"after_other": 10**400})
    train = {"history": [[1.0, 0.5]], "zero_outputs": 0, "no_gradient": 0, "where": ""}
    train["parameters"] = 113
    assert well_formed({"do": "train"}, train)
    assert not well_formed({"do": "train"}, train | {"zero_outputs": True})
    assert not well_formed({"do": "train"}, train | {"no_gradient": -1})
    uncounted = {key: value for key, value in train.items() if key != "parameters"}
    assert not well_formed({"do": "train"}, uncounted | {"no_gradient": 1})  # of how many?
    walk = {"do": "walk", "program": {"inputs": [1.0, 2.0], "steps": [["add", 0, 1]]}}
    traced = {"traced": True, "calls": [2], "grads_at_call": [1.0], "copies": False}
    traced |= {"equal": [], "out_grad": 1.0, "grads": [1.0, 1.0]}
    traced |= {"where": {"backward": "", "init": "", "eq": "", "rules": [""]}}
    assert well_formed(walk, traced)
    assert not well_formed(walk, traced | {"grads_at_call": []})  # one per call
    assert not well_formed(walk, traced | {"equal": [[0, 9]]})  # no slot 9
    rule = {"do": "rule", "program": walk["program"], "upstream": 3.0, "starts": [0.5, -0.25]}
    assert well_formed(rule, {"ran": True, "grads": [3.5, 2.75]})
    assert well_formed(rule, {"ran": False})
    assert not well_formed(rule, {"ran": True, "grads": [3.5]})  # one per input
    assert not well_formed(rule, {"ran": "yes"})
    assert well_formed({"do": "train"}, {"returned": "a list of 1", "where": ""})
    assert not well_formed({"do": "train"}, {"returned": 1, "where": ""})
    assert REPLY_LIMIT < 2**24  # the grader's buffer stays small


# The training reply without its "parameters" count, for a run that says some parameters
# got no gradient: the grader's words for that read the count, and crashed with a KeyError.
TRAIN_WITHOUT_COUNT = """
import json
_dumps = json.dumps
def _forged(o, *args, **kwargs):
    if isinstance(o, dict) and "history" in o:
        o = {"history": [[1.0, 0.5], [1.0, 0.5]], "zero_outputs": 0, "no_gradient": 1}
        o["where"] = ""
    return _dumps(o, *args, **kwargs)
json.dumps = _forged
"""


def test_a_training_reply_without_its_parameter_count_is_a_failing_row(tmp_path):
    (tmp_path / "engine.py").write_text(SOLVED + TRAIN_WITHOUT_COUNT)
    (tmp_path / "nn.py").write_text((ENGINES / "solved_nn.py").read_text())
    report = _grade(tmp_path)
    status = {row.name: row for row in report.rows}
    assert status["network gradients"].status == "pass", report.to_text()
    assert status["network trains"].status == "fail", report.to_text()
    assert "sent a malformed reply" in status["network trains"].diagnosis


# ---------------------------------------------------------------------- the report
def test_escape_sequences_from_the_engine_never_reach_the_terminal(tmp_path, capsys):
    prefix = (
        'print("\\x1b[2J\\x1b[31mBUILD GATE PASSED\\x1b]0;t\\x07")\n'
        'raise RuntimeError("\\x1b[2J\\x1b[1;32mBUILD GATE PASSED\\r\\nfake line\\u202e")'
    )
    engine = _engine(tmp_path, prefix, "weird\x1b[2Jname.py")
    assert main(["check", "--oracle", "fd", str(engine)]) == 1
    out = capsys.readouterr().out
    assert all(c.isprintable() for line in out.splitlines() for c in line)
    assert "\\x1b[2J" in out and "\\r\\nfake line\\u202e" in out
    assert out.rstrip().splitlines()[-1].startswith("not yet")
    assert sum(line.startswith("BUILD GATE PASSED") for line in out.splitlines()) == 0


def test_every_field_from_the_engine_is_bounded(tmp_path, capsys):
    prefix = 'print("y" * 5000)\nE = type("E" * 100000, (Exception,), {})\nraise E("boom" * 10000)'
    assert main(["check", "--oracle", "fd", "--json", str(_engine(tmp_path, prefix))]) == 1
    data = json.loads(capsys.readouterr().out)
    assert len(data["checks"][0]["diagnosis"]) < 1000
    assert [len(line) for line in data["engine_output"]] == [200]
    assert main(["check", "--oracle", "fd", str(_engine(tmp_path, prefix))]) == 1
    assert len(capsys.readouterr().out) < 3000


def test_an_add_returning_another_class_is_named(tmp_path):
    suffix = (
        "\nclass Other:\n"
        "    def __init__(self, d):\n"
        "        self.data, self.grad, self._prev = d, 0.0, set()\n"
        "    def backward(self):\n"
        "        self.grad = 1.0\n"
        "Value.__add__ = lambda s, o: Other(s.data + getattr(o, 'data', o))\n"
    )
    path = tmp_path / "engine.py"
    path.write_text(SOLVED + suffix)
    row = next(r for r in _grade(path).rows if r.name == "a + b")
    assert row.status == "fail"
    assert row.diagnosis.startswith("a + b returned a Other, not a Value")


# ---------------------------------------------------------------------- paths
def _refused(capsys, *argv: str) -> str:
    assert main(["check", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("modelwright-autograd check: error:")
    return err


def test_check_refuses_what_is_not_a_regular_source_file(tmp_path, capsys):
    os.mkfifo(tmp_path / "fifo.py")
    assert "fifo.py is a FIFO" in _refused(capsys, str(tmp_path / "fifo.py"))
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    assert "/dev/zero is not a .py file" in _refused(capsys, str(tmp_path / "zero.py"))
    with open(tmp_path / "sparse.py", "wb") as f:
        f.truncate(2 * 2**30)
    err = _refused(capsys, str(tmp_path / "sparse.py"))
    assert f"is 2,147,483,648 bytes: more than the {MAX_SOURCE_BYTES:,}" in err
    for path in ("/dev/null", str(tmp_path / "fifo.py"), "/dev/zero"):
        assert Path(path).name in _refused(capsys, path)
    os.mkfifo(tmp_path / "pipe")
    assert "pipe is not a .py file or a folder" in _refused(capsys, str(tmp_path / "pipe"))
    (tmp_path / "loop.py").symlink_to(tmp_path / "loop.py")
    assert "loop.py is a loop of symbolic links" in _refused(capsys, str(tmp_path / "loop.py"))
    folder = tmp_path / "folder"
    folder.mkdir()
    os.mkfifo(folder / "engine.py")  # never opened for reading: it would block
    assert "defines a class Value" in _refused(capsys, str(folder))
    assert "x" * 300 in _refused(capsys, str(tmp_path / ("x" * 300)))


@pytest.mark.skipif(not Path("/proc/1").is_dir(), reason="needs /proc")
def test_check_of_a_folder_it_may_not_read_is_a_clear_error(capsys):
    assert "/proc" in _refused(capsys, "/proc")


def test_empty_paths_and_timeouts_past_the_cap_are_usage_errors(capsys):
    for argv in (["check", ""], ["init", ""], ["check", "--timeout", "1e300", "x.py"]):
        with pytest.raises(SystemExit) as stopped:
            main(argv)
        assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "got an empty string" in err and "must be at most 600" in err
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    assert "at most 600" in capsys.readouterr().out


def test_a_newline_in_a_path_stays_one_pasteable_word(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["init", "new\nline"]) == 0
    out = capsys.readouterr().out
    assert "modelwright-autograd check $'new\\nline'" in out
    engine = tmp_path / "new\nline.py"
    engine.write_text(SOLVED.replace("self.grad += out.grad\n", "self.grad = out.grad\n", 1))
    row = next(r for r in _grade(engine).rows if r.name == "reuse")
    code = "\n".join(row.reproduce)  # the lines run, and import the engine by its name
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# ---------------------------------------------------------------------- init
def test_init_on_a_full_disk_leaves_nothing_behind(tmp_path, capsys, monkeypatch):
    written = []

    def full(path, write, binary=False):
        if len(written) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written.append(path)
        Path(path).write_text("x")

    monkeypatch.setattr(starter, "atomic_write", full)
    assert main(["init", str(tmp_path / "mine")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left on device" in err and "mine" in err
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    assert main(["init", str(tmp_path / "mine")]) == 0  # nothing blocks the next one
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == sorted(ENTRIES)


def test_init_on_a_real_full_filesystem(tmp_path, capsys):
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", str(disk)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        assert main(["init", str(disk / "mine")]) == 1
        assert "No space left on device" in capsys.readouterr().err
        assert list(disk.iterdir()) == []
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_init_with_a_name_too_long_is_a_usage_error(tmp_path, capsys):
    assert main(["init", str(tmp_path / ("x" * 300))]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "File name too long" in err
    assert list(tmp_path.iterdir()) == []
