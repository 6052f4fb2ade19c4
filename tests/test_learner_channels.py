"""`check` against engines that reach for what connects the grader to them: every wait on
the supervisor, the pipes of the supervisor and of the namespace's init, the probe's code,
the user's terminal and the shape of the replies. Each test runs the real processes (and
a real terminal for the terminal); none may hang, forge a pass or leave a process behind.
"""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from test_learner_hostile import (
    ENGINES,
    ENV,
    SOLVED,
    _grade,
    _processes_in,
    _start_check,
    needs_proc,
)

from modelwright_autograd.cli import main
from modelwright_autograd.learner import child, supervise
from modelwright_autograd.learner.child import well_formed
from modelwright_autograd.learner.locate import locate
from tests.learner_engines.write import source, write

needs_namespaces = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="PID namespaces are Linux's"
)
TENSOR_ENGINES = ENGINES / "tensor"


def _kill_leftovers(folder: Path) -> None:
    for pid in _processes_in(folder):
        try:
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _isolated() -> bool:
    """True when the engine here gets the namespaces (Linux with user namespaces, as CI)."""
    with tempfile.TemporaryDirectory() as folder:
        target = locate(write("div_sign", Path(folder)))
        with child.EngineProcess(target.load_request(), str(target.sys_path), 30.0) as process:
            process.load()
            return process.isolation.startswith("PID, mount and user namespaces")


# ---------------------------------------------------------------------- every wait has a bound
def test_a_timeout_shorter_than_starting_python_is_refused_in_one_line(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["check", "--timeout", "0.001", "engine.py"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == "modelwright-autograd check: --timeout: must be at least 1, got 0.001"


@pytest.mark.parametrize("timeout", ["-1", "0", "0.5"])
def test_every_timeout_under_the_minimum_is_refused_with_the_minimum(capsys, timeout):
    """-1 and 0 said "must be greater than 0", as if 0.5 would do."""
    with pytest.raises(SystemExit) as stopped:
        main(["check", "--timeout", timeout, "engine.py"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == f"modelwright-autograd check: --timeout: must be at least 1, got {timeout}"


def test_a_timeout_shorter_than_starting_python_is_honoured_by_the_grader(tmp_path):
    """The grader's own API takes any timeout: the import times out instead of waiting on
    a supervisor that has not started yet (it waited forever)."""
    engine = tmp_path / "engine.py"
    engine.write_text(SOLVED)
    report = _grade(engine, timeout=0.001)
    assert not report.passed
    assert "did not finish in 0.001 s" in report.rows[0].diagnosis, report.to_text()
    assert not _processes_in(tmp_path)


# ---------------------------------------------------------------------- the init's pipe
# At import the engine writes to every pipe its namespace's init holds (but its own
# prints' pipe): a wait status of 19 (SIGSTOP) for the supervisor to end by, or enough
# bytes to fill the pipe, then it exits. Either hung `check` forever.
INIT_PIPE = """
import os
opened = 0
try:
    fds = os.listdir("/proc/1/fd")
except OSError:
    fds = []
for fd in fds:
    try:
        if int(fd) > 2 and os.readlink(f"/proc/1/fd/{fd}").startswith("pipe:"):
            w = os.open(f"/proc/1/fd/{fd}", os.O_WRONLY | os.O_NONBLOCK)
            opened += 1
            try:
                os.write(w, b"19\\n" if HOW == "stop" else b"x" * 2**20)
                while HOW == "fill":
                    os.write(w, b"x" * 4096)
            except BlockingIOError:
                pass
    except OSError:
        pass
with open("opened", "w") as f:
    f.write(str(opened))
os._exit(0)
"""


@needs_proc
@needs_namespaces
@pytest.mark.parametrize("how", ["stop", "fill"])
def test_the_engine_cannot_reach_the_pipe_of_its_namespace_s_init(tmp_path, how):
    if not _isolated():
        pytest.skip("no PID namespace here: the report's isolation line says so")
    engine = tmp_path / "engine.py"
    engine.write_text(f"HOW = {how!r}\n" + INIT_PIPE + SOLVED)
    proc = _start_check(engine, "--oracle", "fd")
    try:
        out, err = proc.communicate(timeout=120)  # it used to hang here forever
        assert (tmp_path / "opened").read_text() == "0"
        assert proc.returncode == 1, out + err
        assert "exited with code 0" in " ".join(out.split())  # wrapped lines
        assert not _processes_in(tmp_path)
    finally:
        proc.kill()
        _kill_leftovers(tmp_path)


def test_a_wait_status_that_would_stop_the_supervisor_ends_it_by_sigkill():
    assert supervise.wait_status(b"256\n") == 256  # exit code 1
    assert supervise.wait_status(b"11\n") == signal.SIGSEGV
    for said in (b"19\n", b"20\n", b"4991\n", b"x\n", b"", b"99999999\n", b"-9\n"):
        assert supervise.wait_status(said) == signal.SIGKILL, said


def test_a_supervisor_that_never_ends_is_killed_not_waited_for(tmp_path, monkeypatch):
    """Whatever stops the supervisor, the grader waits STOP_GRACE for it at most."""
    monkeypatch.setattr(child, "STOP_GRACE", 0.5)
    target = locate(write("div_sign", tmp_path))
    with child.EngineProcess(target.load_request(), str(target.sys_path), 30.0) as process:
        assert "mlp" in process.load()
        supervisor = process._proc
        os.kill(supervisor.pid, signal.SIGSTOP)  # as a wait status of 19 did
        os.close(process._replies)  # the probe's end, as when it dies
        process._replies = os.open(os.devnull, os.O_RDONLY)
        reply = process.ask({"do": "seed"}, 30.0)
        assert reply["failure"] == "crash"
        assert "its supervisor did not end within 0.5 s (killed)" in reply["how"]
        assert supervisor.poll() is not None


@needs_proc
def test_a_probe_that_stops_reading_cannot_block_the_grader_s_request(tmp_path):
    """A request larger than the pipe (the training data is) to a probe that no longer
    reads: the write waits no longer than the reply would."""
    target = locate(write("div_sign", tmp_path))
    with child.EngineProcess(target.load_request(), str(target.sys_path), 30.0) as process:
        assert "mlp" in process.load()
        *_, probe = supervise.descendants(process._proc.pid)
        os.kill(probe, signal.SIGSTOP)
        request = {"do": "seed", "padding": "x" * 2**20}
        assert process.ask(request, 0.5) == {"failure": "timeout", "seconds": 0.5}


# ---------------------------------------------------------------------- the probe's code
# backward() does nothing where the learner calls it. The engine looks through sys.modules
# for the probe's modules (at each new Tensor) and patches every function there to turn the
# real backward on once the probe calls it: the learner's own use sees a backward() that
# computes nothing, the probe's sees a right one.
TENSOR_FORGER = """
import sys, types

_real_backward = Tensor.backward
_graded = [False]
def _backward(self, *args, **kwargs):
    if _graded[0]:
        return _real_backward(self, *args, **kwargs)
Tensor.backward = _backward

def _patched(f):
    def g(*args, **kwargs):
        _graded[0] = True
        return f(*args, **kwargs)
    return g

_init = Tensor.__init__
def _looking(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    for name, module in list(sys.modules.items()):
        if name.startswith("_grader") and not getattr(module, "_forged", False):
            open("found", "a").write(name + "\\n")
            module._forged = True
            for key, value in list(vars(module).items()):
                if isinstance(value, types.FunctionType):
                    setattr(module, key, _patched(value))
            for key, value in list(getattr(module, "HANDLERS", {}).items()):
                module.HANDLERS[key] = _patched(value)
Tensor.__init__ = _looking
"""


@pytest.mark.slow
def test_a_tensor_engine_cannot_answer_for_the_probe_through_its_modules(tmp_path):
    engine = tmp_path / "engine.py"
    solved = (TENSOR_ENGINES / "solved_starter.py").read_text()
    engine.write_text(solved + TENSOR_FORGER)
    report = _grade(engine)
    assert not (tmp_path / "found").exists(), (tmp_path / "found").read_text()
    assert not report.passed, report.to_text()  # it passed the gate before
    status = {row.name: row.status for row in report.rows}
    assert status["seed"] == status["network gradients"] == "fail", report.to_text()


# backward() computes nothing where the learner calls it, and a thread started at import
# polls sys.modules for the grader's modules, catching any that is there for a moment.
# Their functions, patched, would turn the real backward() on for the probe's calls alone.
# It writes each module it catches to a file named "found".
RACING_FORGER = """
import sys, threading, time, types

_real_backward = Tensor.backward
_graded = [False]  # set once the probe has called a function of its modules
def _backward(self, *args, **kwargs):
    if _graded[0]:
        return _real_backward(self, *args, **kwargs)
    return None
Tensor.backward = _backward

def _patched(f):
    def g(*args, **kwargs):
        _graded[0] = True
        return f(*args, **kwargs)
    return g

_caught = {}
def _poll():
    end = time.monotonic() + 20
    while time.monotonic() < end:
        for name in [n for n in list(sys.modules) if n.startswith("_grader")]:
            if name not in _caught:
                _caught[name] = sys.modules.get(name)
                with open("found", "a") as f:
                    f.write(name + "\\n")
threading.Thread(target=_poll, daemon=True).start()

_init = Tensor.__init__
def _looking(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    for module in list(_caught.values()):
        if module is not None and not getattr(module, "_forged", False):
            module._forged = True
            for key, value in list(vars(module).items()):
                if isinstance(value, types.FunctionType):
                    setattr(module, key, _patched(value))
Tensor.__init__ = _looking
"""


@pytest.mark.slow
def test_an_engine_polling_sys_modules_from_a_thread_cannot_forge_a_pass(tmp_path):
    """The probe once put its programs module in sys.modules while loading it (dataclasses
    looked it up by name): a thread polling there caught it, now and then, and passed."""
    engine = tmp_path / "engine.py"
    engine.write_text((TENSOR_ENGINES / "solved_starter.py").read_text() + RACING_FORGER)
    report = _grade(engine)
    assert not (tmp_path / "found").exists(), (tmp_path / "found").read_text()
    assert not report.passed, report.to_text()
    assert {row.name: row.status for row in report.rows}["seed"] == "fail", report.to_text()


# A profile function runs at every call and return of the probe's main thread and writes
# down each module that has appeared in sys.modules since the one before (its name and
# file): a module the probe registers for the span of a call or more is in the list. The
# engine registers one such module of its own, "_flash", to show the recorder sees it.
RECORDER = """
import sys
_seen = set(sys.modules)
_count = [len(sys.modules)]


def _record(frame, event, arg):
    if len(sys.modules) != _count[0]:
        _count[0] = len(sys.modules)
        new = [(name, m) for name, m in list(sys.modules.items()) if name not in _seen]
        _seen.update(name for name, _ in new)
        with open("modules", "a") as f:
            for name, module in new:
                f.write(f"{name}\\t{getattr(module, '__file__', None)}\\n")


sys.setprofile(_record)
sys.modules["_flash"] = sys
len(_seen)  # a call while it is there
del sys.modules["_flash"]
"""


@pytest.mark.parametrize(
    "solved", [ENGINES / "solved_starter.py", TENSOR_ENGINES / "solved_starter.py"]
)
def test_no_module_of_the_grader_s_is_ever_in_sys_modules(tmp_path, solved):
    """The probes load their programs modules without a moment in sys.modules (the tensor
    probe's was there while it loaded, after the engine's code had started)."""
    engine = tmp_path / "engine.py"
    engine.write_text(RECORDER + solved.read_text())
    target = locate(engine)
    with child.EngineProcess(target.load_request(), str(target.sys_path), 30.0) as process:
        loaded = process.load()
        assert "mlp" in loaded, loaded  # the probe (and for a tensor engine, its own) loaded
    recorded = [line.split("\t") for line in (tmp_path / "modules").read_text().splitlines()]
    assert ["_flash", "None"] in recorded  # the recorder catches a module there for a moment
    package = str(Path(child.__file__).parents[1])
    ours = [
        (name, file)
        for name, file in recorded
        if name.startswith(("_grader", "modelwright_autograd")) or file.startswith(package)
    ]
    assert ours == []


# The network reply with every layer's gradients replaced: validating it once iterated
# over them and crashed `check` with a TypeError for an int or null.
NETWORK_GRADS = """
import json as _json
_dumps = _json.dumps
def _forged(o, *args, **kwargs):
    if isinstance(o, dict) and isinstance(o.get("layers"), dict):
        for entry in o["layers"].values():
            entry["grads"] = GRADS
    return _dumps(o, *args, **kwargs)
_json.dumps = _forged
"""


@pytest.mark.slow
@pytest.mark.parametrize("grads", ["5", "None"])
def test_a_network_reply_whose_grads_are_not_a_list_is_a_failing_row(tmp_path, grads):
    engine = tmp_path / "engine.py"
    solved = (TENSOR_ENGINES / "solved_starter.py").read_text()
    engine.write_text(solved + f"\nGRADS = {grads}\n" + NETWORK_GRADS)
    report = _grade(engine)
    row = next(row for row in report.rows if row.name == "network gradients")
    assert row.status == "fail" and "sent a malformed reply" in row.diagnosis, report.to_text()
    assert not report.passed


# ---------------------------------------------------------------------- the terminal
# The engine tries the user's terminal (the pty `check` runs on, its path given here as
# a learner's code would find it in /dev/pts), after unmounting what may hide it.
TERMINAL = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
for folder in (b"/dev/pts", b"/proc"):
    libc.umount2(folder, 2)  # MNT_DETACH
reached = []
for path in (PTY, "/dev/tty"):
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOCTTY)
        os.write(fd, b"\\r\\nFORGED BY THE ENGINE: BUILD GATE PASSED\\r\\n")
        reached.append(path)
    except OSError:
        pass
with open("reached", "w") as f:
    f.write(" ".join(reached))
"""


def _run_on_a_terminal(
    master: int, slave: int, argv: list[str], seconds: float = 120.0
) -> tuple[str, int]:
    """Run ``argv`` with the pty ``slave`` as its terminal (stdin, stdout, stderr and
    controlling terminal): what appeared on it, and the exit code."""
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=ENV)
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            if not select.select([master], [], [], 0.2)[0]:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: no process holds the terminal any more
                break
            if not chunk:
                break
            seen += chunk
        return seen.decode(errors="replace"), proc.wait(timeout=10)
    finally:
        proc.kill()
        os.close(master)


@needs_proc
@needs_namespaces
def test_the_engine_cannot_write_to_the_user_s_terminal(tmp_path):
    if not _isolated():
        pytest.skip("no mount namespace here: the report's isolation line says so")
    master, slave = pty.openpty()
    engine = tmp_path / "engine.py"
    engine.write_text(f"PTY = {os.ttyname(slave)!r}\n" + TERMINAL + source("div_sign"))
    command = [sys.executable, "-m", "modelwright_autograd", "check", "--oracle", "fd"]
    try:
        shown, code = _run_on_a_terminal(master, slave, [*command, str(engine)])
        assert (tmp_path / "reached").read_text() == ""
        assert "FORGED" not in shown
        assert code == 1, shown
        assert shown.rstrip().splitlines()[-1].startswith("not yet")
        assert not _processes_in(tmp_path)
    finally:
        _kill_leftovers(tmp_path)


# ---------------------------------------------------------------------- the replies' arrays
# Every array the probe sends gets another shape on its way out (json.dumps patched).
RESHAPED = """
import json
_dumps = json.dumps
def _reshaped(o):
    if isinstance(o, dict) and "shape" in o and "data" in o:
        shape, data = RESHAPE(o["shape"], o["data"])
        return {"shape": shape, "data": data}
    if isinstance(o, dict):
        return {key: _reshaped(value) for key, value in o.items()}
    if isinstance(o, list):
        return [_reshaped(value) for value in o]
    return o
json.dumps = lambda o, *args, **kwargs: _dumps(_reshaped(o), *args, **kwargs)
"""
RESHAPE_SOURCES = {  # each shape holds as many numbers as its data
    "65 dimensions": "lambda shape, data: ([1] * 64 + [len(data)], data)",
    "a dimension of 10**30": "lambda shape, data: ([0, 10**30], [])",
    "bool dimensions": "lambda shape, data: ([True, *shape], data)",
}
RESHAPES = {how: eval(source) for how, source in RESHAPE_SOURCES.items()}


@pytest.mark.parametrize("how", list(RESHAPES))
def test_an_array_of_a_shape_no_check_sends_is_malformed(how):
    request = {"do": "tensor_parts"}
    good = {"shape": [2, 3], "data": [float(i) for i in range(6)]}
    reply = {"data": good, "grad": None, "has_backward_method": True, "children": None}
    assert well_formed(request, reply)
    shape, data = RESHAPES[how](good["shape"], good["data"])
    assert not well_formed(request, reply | {"data": {"shape": shape, "data": data}})


@pytest.mark.slow
@pytest.mark.parametrize("how", list(RESHAPES))
def test_a_forged_array_shape_is_a_failing_row_not_a_crash(tmp_path, how):
    engine = tmp_path / "engine.py"
    solved = (TENSOR_ENGINES / "solved_starter.py").read_text()
    engine.write_text(f"RESHAPE = {RESHAPE_SOURCES[how]}\n" + RESHAPED + solved)
    report = _grade(engine)
    assert report.rows[0].status == "pass", report.to_text()  # its load reply has no array
    parts = report.rows[1]
    assert parts.status == "fail" and "sent a malformed reply" in parts.diagnosis
    assert not report.passed
