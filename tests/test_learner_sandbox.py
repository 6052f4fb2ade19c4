"""Issue 23, items 1-12: `check` against engines that try to be reported as right or to
reach the grader. Each engine here did one of these before the grader ran the learner's
code in namespaces of its own (see supervise.py); the multi-process ones run real
processes and send real signals, and every test ends by making sure none is left.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from test_learner_hostile import (
    ENGINES,
    ENV,
    SOLVED,
    _engine,
    _grade,
    _processes_in,
    _start_check,
    needs_proc,
)

from modelwright_autograd.learner import child, supervise
from modelwright_autograd.learner.base import MAX_HANGS
from modelwright_autograd.learner.child import well_formed
from modelwright_autograd.learner.report import TRUST, Report, Row
from modelwright_autograd.learner.scalar.cases import CHAIN_LENGTH
from tests.learner_engines.write import write

SOLVED_NN = (ENGINES / "solved_nn.py").read_text()

# The grader's process found the way a learner's code would: by reading /proc. Without a
# PID namespace and a /proc of its own this finds the `check` that runs the engine.
FIND_GRADER = """
import os
def grader_pids():
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                words = f.read().split(b"\\0")
        except OSError:
            continue
        if b"modelwright_autograd" in words and b"check" in words and MARK in b" ".join(words):
            found.append(int(entry))
    return found
"""


def _kill_leftovers(folder: Path) -> list[int]:
    """Kill whatever still runs in ``folder`` (so a failing test leaves nothing behind)."""
    left = _processes_in(folder)
    for pid in left:
        try:
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left


def _isolated() -> bool:
    """True when `check` here runs the engine in a PID namespace (as on the CI machine)."""
    return "namespaces" in _engine_isolation()


def _engine_isolation() -> str:
    from modelwright_autograd.learner.locate import locate

    with tempfile.TemporaryDirectory() as folder:
        target = locate(write("div_sign", Path(folder)))
        with child.EngineProcess(target.load_request(), target.sys_path, 30.0) as process:
            process.load()
            return process.isolation


needs_namespaces = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="PID namespaces are Linux's"
)


def test_this_machine_gives_the_engine_its_own_namespaces():
    """CI runs as root on Linux: the isolation must be there for real, not a fallback."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        pytest.skip("namespaces and cgroups are checked where the tests run as root on Linux")
    words = _engine_isolation()
    assert words.startswith("PID, mount and user namespaces"), words
    assert "capped for all its processes" in words, words


@needs_proc
def test_a_cgroup_left_by_a_killed_supervisor_is_removed_by_the_next(tmp_path):
    if "capped for all its processes" not in _engine_isolation():
        pytest.skip("no cgroup here")
    own = supervise._own_cgroups()
    kind = "" if "" in own else "pids"
    parent = supervise.CGROUP / kind / own[kind].lstrip("/")
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True
    )
    stale = parent / f"{supervise.PREFIX}{int(dead.stdout)}"
    stale.mkdir()  # as a supervisor SIGKILLed before its cleanup leaves it
    try:
        _engine_isolation()  # the next check starts a supervisor
        assert not stale.exists()
    finally:
        if stale.exists():
            stale.rmdir()


# ---------------------------------------------------------------------- item 1
# backward() does nothing; on import the engine finds the probe's reply handlers and
# answers every request itself, with numbers from central differences of the forward.
FORGER = """
import sys, __main__

def _handlers():
    for module in [__main__, *list(sys.modules.values())]:
        handlers = getattr(module, "HANDLERS", None)
        if isinstance(handlers, dict) and "programs" in handlers:
            return module, handlers
    return None, None

_probe, _handlers = _handlers()

def _value(program, inputs):
    return _probe.programs.evaluate({**program, "inputs": inputs}, Value)[-1].data

def _programs(request):
    results = []
    for program in request["programs"]:
        xs = [float(x) for x in program["inputs"]]
        grads = []
        for i, x in enumerate(xs):
            h = 1e-3 * max(1.0, abs(x))
            at = lambda d: _value(program, xs[:i] + [x + d] + xs[i + 1:])
            grads.append((-at(2 * h) + 8 * at(h) - 8 * at(-h) + at(-2 * h)) / (12 * h))
        results.append({"out": float(_value(program, xs)), "out_grad": 1.0, "grads": grads})
    return {"results": results}

if _handlers is not None:
    open("found", "w").close()
    _handlers["programs"] = _programs
    _handlers["accumulate"] = lambda r: {"after_first": 3.0, "after_second": 4.0}
    _handlers["chain"] = lambda r: {"recursion": False, "grad": 1.0001 ** r["n"]}
    _original = _handlers["network_gradients"]
    def _network(request):
        reply = _original(request)
        return reply | {"grads": [pair[0] for pair in reply["differences"]]}
    _handlers["network_gradients"] = _network
    _handlers["train"] = lambda r: {"history": [[1.0, 0.5], [0.1, 0.95]], "parameters": 1}
"""


def test_an_engine_cannot_answer_for_the_probe_through_its_modules(tmp_path):
    from modelwright_autograd.learner.starter import write_starter

    write_starter(tmp_path)
    (tmp_path / "nn.py").write_text(SOLVED_NN)  # the forger answers the network rows too
    engine = tmp_path / "engine.py"
    engine.write_text(SOLVED + "\nValue.backward = lambda self: None\n" + FORGER)
    report = _grade(tmp_path)
    assert not (tmp_path / "found").exists()  # no module holds the probe's handlers
    assert not report.passed, report.to_text()
    assert report.verdict.startswith("not yet")
    seed = next(row for row in report.rows if row.name == "seed")
    assert seed.status == "fail"  # the engine's own numbers: backward() never seeds
    footer = " ".join(report.to_text().split("\n\n")[-1].split())  # after the last blank
    assert footer.startswith(" ".join(TRUST.split()))  # the limit that remains, said there
    assert report.to_text().splitlines()[-1].startswith(report.verdict)  # still the last line


# ---------------------------------------------------------------------- item 2
def test_python_m_check_does_not_import_from_the_current_folder(tmp_path):
    write("div_sign", tmp_path)
    (tmp_path / "torch.py").write_text(
        "import pathlib\npathlib.Path('imported').write_text('the grader imported me')\n"
        "from modelwright_autograd.learner import report\n"
        "report.Report.passed = property(lambda self: True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "modelwright_autograd", "check", "div_sign.py"],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.rstrip().splitlines()[-1].startswith("not yet")
    assert not (tmp_path / "imported").exists()


# ---------------------------------------------------------------------- item 3
def test_a_wrong_gradient_on_the_long_chain_is_a_failure(tmp_path):
    walk = "        for node in reversed(topo):\n"
    assert SOLVED.count(walk) == 1
    engine = tmp_path / "engine.py"  # walks only the last 1,000 nodes of a long graph
    engine.write_text(SOLVED.replace(walk, "        for node in reversed(topo[-1000:]):\n"))
    report = _grade(engine)
    row = next(row for row in report.rows if row.name == f"{CHAIN_LENGTH:,}-node chain")
    assert row.status == "fail"
    assert "gradient is 0, expected" in row.diagnosis
    assert report.failed == 1


# ---------------------------------------------------------------------- items 4-7
def _signals_its_supervisor(signum: int) -> str:
    return f"""
import os, signal, time
supervisor = os.getppid()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.kill(supervisor, {int(signum)})
        with open("sent", "w") as f:
            f.write(str(supervisor))
        time.sleep(300)
    os._exit(0)
while not os.path.exists("sent"):
    time.sleep(0.01)
"""


@needs_proc
@needs_namespaces
@pytest.mark.parametrize("signum", [signal.SIGSTOP, signal.SIGKILL])
def test_a_grandchild_cannot_stop_or_kill_the_supervisor(tmp_path, signum):
    try:
        report = _grade(_engine(tmp_path, _signals_its_supervisor(signum)))
        assert (tmp_path / "sent").exists()
        assert report.rows[0].status == "pass", report.to_text()
        assert report.failed == 0, report.to_text()
        assert not _processes_in(tmp_path)  # the grandchild went with the namespace
    finally:
        _kill_leftovers(tmp_path)


GRADER_STDOUT = (
    FIND_GRADER
    + """
import time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        held = []
        for pid in grader_pids():
            for fd in (1, 2):
                out = open(f"/proc/{pid}/fd/{fd}", "w")
                out.write("\\x1b[2J\\x1b]0;owned\\x07")
                out.flush()
                held.append(out)
        with open("looked", "w") as f:
            f.write(str(len(held)))
        time.sleep(2)  # after the grader has printed its report
        for out in held:
            out.write("\\x1b[1A\\x1b[2KBUILD GATE PASSED\\n")
            out.flush()
        time.sleep(300)  # and keep them open
    os._exit(0)
while not os.path.exists("looked"):
    time.sleep(0.01)
"""
)


@needs_proc
@needs_namespaces
def test_the_engine_cannot_write_to_the_grader_s_terminal_or_hold_it_open(tmp_path):
    mark = str(tmp_path).encode()
    engine = tmp_path / "engine.py"
    engine.write_text(f"MARK = {mark!r}\n" + GRADER_STDOUT + "\n" + SOLVED)
    proc = _start_check(engine, "--oracle", "fd")
    try:
        out, err = proc.communicate(timeout=300)  # ends: nothing holds its stdout open
        assert (tmp_path / "looked").read_text() == "0"  # no grader to be seen
        assert "\x1b" not in out and "\x1b" not in err
        assert out.rstrip().splitlines()[-1].startswith("not yet")
        assert "BUILD GATE PASSED" not in out
        assert not _processes_in(tmp_path)
    finally:
        proc.kill()
        _kill_leftovers(tmp_path)


STOPS_THE_GRADER = (
    FIND_GRADER
    + """
import signal
for pid in grader_pids():
    try:
        os.kill(pid, signal.SIGSTOP)
    except OSError:
        pass
"""
)


@needs_proc
@needs_namespaces
def test_the_engine_cannot_stop_the_grader(tmp_path):
    engine = tmp_path / "engine.py"
    engine.write_text(f"MARK = {str(tmp_path).encode()!r}\n" + STOPS_THE_GRADER + SOLVED)
    proc = _start_check(engine, "--oracle", "fd")
    try:
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 1
        assert out.rstrip().splitlines()[-1].startswith("not yet")
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGCONT)
        pytest.fail("the engine stopped the grader")
    finally:
        proc.kill()
        _kill_leftovers(tmp_path)


# ---------------------------------------------------------------------- item 8
def test_an_engine_that_hangs_on_every_re_import_counts_as_hanging(tmp_path):
    engine = tmp_path / "engine.py"
    engine.write_text(
        "import os, time\n"
        "if os.path.exists('imported'):\n"
        "    while True:\n"
        "        time.sleep(1)\n"
        "open('imported', 'w').close()\n"
        "class Value:\n"
        "    def __init__(self, data):\n"
        "        os._exit(3)  # every check crashes the process: the next one re-imports\n"
    )
    report = _grade(engine, timeout=1.0)
    hung = [row for row in report.rows if "did not finish in 1 s" in row.diagnosis]
    assert len(hung) == MAX_HANGS, report.to_text()
    assert report.rows[-1].name == "the other checks"
    assert f"the engine hung {MAX_HANGS} times" in report.rows[-1].diagnosis


# ---------------------------------------------------------------------- item 9
EATS_TOGETHER = """
import os, time
MiB = 2**20
for i in range(3):  # three children holding 40 MiB each, alive
    if os.fork() == 0:
        held = b"x" * (40 * MiB)
        open(f"child{i}", "w").close()
        time.sleep(300)
        os._exit(0)
while not all(os.path.exists(f"child{i}") for i in range(3)):
    time.sleep(0.01)
mine = [b"y" * (20 * MiB) for _ in range(10)]  # 200 MiB more in the probe itself
"""


@needs_proc
@needs_namespaces
def test_the_memory_cap_counts_every_process_together(tmp_path, monkeypatch):
    if "capped for all its processes" not in _engine_isolation():
        pytest.skip("no cgroup here: the cap is per process (the report says so)")
    monkeypatch.setattr(child, "MEMORY_LIMIT", 256 * 2**20)
    try:
        report = _grade(_engine(tmp_path, EATS_TOGETHER))
        row = report.rows[0]
        assert row.status == "fail", report.to_text()
        assert "passed the 0.25 GiB memory cap" in row.diagnosis, row.diagnosis
        assert not _processes_in(tmp_path)
    finally:
        _kill_leftovers(tmp_path)


THREADS = """
import threading, time
threading.stack_size(256 * 1024)
started = 0
try:
    for _ in range(2 * LIMIT):
        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
        started += 1
except RuntimeError:  # can't start new thread: the cgroup's pids.max
    pass
with open("started", "w") as f:
    f.write(str(started))
"""


@needs_proc
@needs_namespaces
def test_the_process_cap_counts_every_thread_and_process_together(tmp_path):
    if "capped for all its processes" not in _engine_isolation():
        pytest.skip("no cgroup here: only the user's own limits apply (the report says so)")
    try:
        engine = _engine(tmp_path, f"LIMIT = {child.PROCESS_LIMIT}\n" + THREADS)
        report = _grade(engine)
        assert report.rows[0].status == "pass", report.to_text()
        assert 0 < int((tmp_path / "started").read_text()) < child.PROCESS_LIMIT
        assert not _processes_in(tmp_path)
    finally:
        _kill_leftovers(tmp_path)


# ---------------------------------------------------------------------- item 10
HUGE_OUT = """
import json, re
_dumps = json.dumps
json.dumps = lambda o, *a, **k: re.sub(r'"out": [^,}]+', '"out": 1' + '0' * 400, _dumps(o))
"""


def test_a_reply_with_an_enormous_integer_is_malformed_not_a_crash(tmp_path):
    programs = {"do": "programs", "programs": [{"inputs": [1.0], "steps": [["neg", 0]]}]}
    good = {"out": -1.0, "out_grad": 1.0, "grads": [-1.0]}
    assert well_formed(programs, {"results": [good]})
    assert not well_formed(programs, {"results": [good | {"out": 10**400}]})
    assert not well_formed(programs, {"results": [good | {"out": -1}]})
    report = _grade(_engine(tmp_path, HUGE_OUT))
    mul = next(row for row in report.rows if row.name == "a * b")
    assert mul.status == "fail" and "sent a malformed reply" in mul.diagnosis


# ---------------------------------------------------------------------- item 11
@pytest.mark.slow
def test_a_print_for_every_node_does_not_fail_the_gate(tmp_path):
    from modelwright_autograd.learner.starter import write_starter

    write_starter(tmp_path)
    (tmp_path / "nn.py").write_text(SOLVED_NN)
    noisy = (
        "\n_init = Value.__init__\n"
        "def _noisy(self, *args, **kwargs):\n"
        "    print('a new node', '.' * 200)\n"
        "    _init(self, *args, **kwargs)\n"
        "Value.__init__ = _noisy\n"
    )
    (tmp_path / "engine.py").write_text(SOLVED + noisy)
    report = _grade(tmp_path)
    assert report.passed, report.to_text()
    assert report.engine_output[-1].startswith("a new node")


def test_a_file_past_the_cap_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(child, "FILE_LIMIT", 2**20)
    prefix = "with open('big.bin', 'wb') as f:\n    f.write(b'x' * 2 * 2**20)\n"
    row = _grade(_engine(tmp_path, prefix)).rows[0]
    assert row.status == "fail"
    assert "File too large" in row.diagnosis
    assert "may write files of at most 1 MiB" in row.diagnosis


# ---------------------------------------------------------------------- item 12
@needs_proc
def test_the_engine_gets_no_secrets_and_none_of_the_grader_s_files(tmp_path, monkeypatch):
    monkeypatch.setenv("MODELWRIGHT_TEST_TOKEN", "s3cret-token")
    prefix = (
        "import json, os\n"
        "fds = {}\n"
        "for fd in os.listdir('/proc/self/fd'):\n"
        "    try:\n"
        "        fds[fd] = os.readlink(f'/proc/self/fd/{fd}')\n"
        "    except OSError:  # the folder listdir read, closed by now\n"
        "        pass\n"
        "with open('seen.json', 'w') as f:\n"
        "    json.dump({'environ': dict(os.environ), 'fds': fds}, f)\n"
    )
    _grade(_engine(tmp_path, prefix))
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert "MODELWRIGHT_TEST_TOKEN" not in seen["environ"]
    assert "s3cret-token" not in json.dumps(seen["environ"])
    assert seen["environ"]["PATH"] == os.environ["PATH"]
    # stdin is /dev/null, the rest pipes (prints, requests, replies): no file of the grader's
    targets = [t for fd, t in seen["fds"].items() if fd != "0"]
    assert targets and all(t.startswith("pipe:") for t in targets), seen["fds"]
    assert seen["fds"]["0"] == "/dev/null"


# ---------------------------------------------------------------------- the fallback
def test_without_namespaces_or_cgroups_the_report_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(supervise, "_call", lambda name, *args: "Operation not permitted")
    assert supervise.enter_namespaces() == (False, "no PID namespace (Operation not permitted)")
    monkeypatch.setattr(supervise, "CGROUP", tmp_path / "missing")
    group, note = supervise.Cgroup.create("x", 2**30, 10)
    assert group is None and note.startswith(("cgroups not writable", "no memory"))
    words = supervise._words(False, "no PID namespace (Operation not permitted)", None, note)
    assert words.startswith("own session only (no PID namespace")
    assert "memory capped per process only" in words
    rows = [Row("engine loads", "pass", "Value from engine")]
    fallback = Report("engine.py", "fd", rows, isolation=words, isolated=False).to_text()
    assert fallback.splitlines()[2] == f"isolation: {words}"[: len(fallback.splitlines()[2])]
    complete = Report("engine.py", "fd", rows, isolation="all there", isolated=True).to_text()
    assert "isolation" not in complete


def test_a_quick_probe_whose_two_lines_arrive_in_one_read_keeps_its_status():
    """The inner process writes its mount line, then the probe's wait status; a probe that
    ends at once (git status) can have both in the pipe before the outer process reads.
    Read as one line, the status was lost and the command reported killed by SIGKILL."""
    read, write = os.pipe()
    os.write(write, b"proc\n256\n")  # mounted, then "exited with code 1"
    os.close(write)
    line, rest = supervise.read_line(read)
    os.close(read)
    assert line == b"proc" and rest == b"256\n"
    assert os.waitstatus_to_exitcode(supervise.wait_status(rest)) == 1
