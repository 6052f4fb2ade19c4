"""The learner's engine in a child process: started, asked, timed out and killed here.

``EngineProcess.ask(request, timeout)`` sends one request to ``scalar/probe.py`` and waits
for its one-line reply, checked against the shape that request's reply has (the learner's
code shares the probe's process and can forge or flood it: a malformed or oversized reply
is a failure, like a crash). The probe runs under ``supervise.py``: in its own session and
process group, with a scrubbed environment and none of the grader's descriptors, and where
Linux allows it in PID, mount and user namespaces of its own and a cgroup capping the
memory and the number of all its processes (``isolation`` says which; see
docs/build-your-own.md#what-check-guarantees). When the reply does not come in time all of
its processes are killed; when the process dies (a crash, ``os._exit``, the memory cap) the
reply says how. Either way the next request starts a fresh process, so one hanging check
does not take the others with it. No wait here is unbounded: the supervisor's start, each
request's write and reply, and a dying supervisor's end each have a limit. The learner's
stdout/stderr come through a pipe read while waiting for replies; only its last lines are
kept, out of the report.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .backprop.replies import well_formed_backprop
from .lm.replies import well_formed_lm
from .tensor.programs import well_formed_tensor

PROBE = Path(__file__).with_name("scalar") / "probe.py"
SUPERVISE = Path(__file__).with_name("supervise.py")
REPLY_LIMIT = 4 * 2**20  # bytes of one reply; the largest real one is a few tens of KB
OUTPUT_KEPT = 16 * 2**10  # bytes of the learner's latest prints kept for the report
STOP_GRACE = 5.0  # seconds the supervisor gets to kill the learner's processes
START_LIMIT = 60.0  # seconds the supervisor gets to start, before any learner's code runs
DRAIN_LIMIT = 1.0  # seconds spent at most taking the learner's prints after a reply
MEMORY_LIMIT = 4 * 2**30  # bytes all the learner's processes together may use (a cgroup)
PROCESS_LIMIT = 512  # processes and threads they may have at once (a cgroup)
FILE_LIMIT = 16 * 2**20  # bytes of any one file the learner's process writes
# The environment variables the learner's process gets; no other (tokens, keys) reaches it.
KEPT_ENVIRONMENT = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR", "TERM")
# The probe runs as code, not as the module __main__, with -P so that the learner's folder
# does not shadow the standard library before the probe has imported it.
BOOT = (
    "import sys\n"
    "with open({path!r}, encoding='utf-8') as f:\n"
    "    code = compile(f.read(), {path!r}, 'exec')\n"
    "del f\n"
    "exec(code, {{'__name__': '__main__', '__file__': {path!r}, '__builtins__': __builtins__}})"
)


def child_environment() -> dict[str, str]:
    """The grader's environment cut down to what a Python program needs to run."""
    return {
        key: value
        for key, value in os.environ.items()
        if key in KEPT_ENVIRONMENT or key.startswith("LC_")
    }


class EngineProcess:
    """One child process running the learner's engine, restarted when it dies."""

    def __init__(self, load_request: dict[str, Any], cwd: str, load_timeout: float) -> None:
        self.load_request = load_request
        self.cwd = cwd
        self.load_timeout = load_timeout
        self.loaded: dict[str, Any] | None = None
        self.isolation = ""  # what keeps the learner's processes apart (the supervisor's words)
        self.isolated = False  # True when every layer is there (namespaces and cgroup)
        self._proc: subprocess.Popen[bytes] | None = None
        self._requests = -1
        self._replies = -1
        self._status = -1
        self._output = -1
        self._buffer = b""
        self._printed = b""  # the end of what the learner's code printed

    def load(self) -> dict[str, Any]:
        """Start the process and import the engine: the probe's answer (what it found, or
        ``error``) or ``failure`` (a timeout or a crash while importing)."""
        self.close()
        self.loaded = self._start()
        if "error" in self.loaded or "failure" in self.loaded:
            self.close()
        return self.loaded

    def ask(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        """The probe's reply to ``request``, or ``{"failure": ...}`` describing a timeout
        or a crash. A process killed by an earlier request is restarted first; an import
        that hangs this time is a timeout like any other."""
        if self._proc is None:
            loaded = self.load()
            if loaded.get("failure") == "timeout":
                return loaded
            if "error" in loaded or "failure" in loaded:
                return {"failure": "crash", "how": "could not import the engine again"}
        return self._exchange(request, timeout)

    def _start(self) -> dict[str, Any]:
        request_read, request_write = os.pipe()
        reply_read, reply_write = os.pipe()
        status_read, status_write = os.pipe()
        output_read, output_write = os.pipe()
        fds = (request_read, reply_write)
        limits = [MEMORY_LIMIT, PROCESS_LIMIT, FILE_LIMIT]
        config = {"fds": fds, "status": status_write, "limits": limits, "cwd": self.cwd}
        boot = BOOT.format(path=str(PROBE))
        self._proc = subprocess.Popen(
            [sys.executable, str(SUPERVISE), json.dumps(config), sys.executable, "-P", "-c", boot]
            + [str(fd) for fd in fds],
            stdin=subprocess.DEVNULL,
            stdout=output_write,
            stderr=output_write,
            pass_fds=(*fds, status_write),
            cwd="/",  # only the learner's own processes work in their folder (see supervise)
            env=child_environment(),
            start_new_session=True,  # its own process group: no Ctrl-C from the terminal
        )
        for fd in (request_read, reply_write, status_write, output_write):
            os.close(fd)
        os.set_blocking(request_write, False)  # a probe that stops reading must not block us
        self._requests = request_write
        self._replies, self._status, self._output = reply_read, status_read, output_read
        self._buffer = b""
        try:
            started = self._supervisor_line(START_LIMIT)
        except TimeoutError:
            self.close()
            return {"failure": "crash", "how": f"did not start in {START_LIMIT:g} s"}
        if started is None:
            return self._died()
        self.isolation = str(started.get("isolation", ""))
        self.isolated = started.get("complete") is True
        return self._exchange(self.load_request, self.load_timeout)

    def _supervisor_line(self, timeout: float) -> dict[str, Any] | None:
        """The supervisor's first status line (written before the learner's code runs),
        or None when it ended without one; TimeoutError when it says nothing in time."""
        line = b""
        deadline = time.monotonic() + timeout
        while not line.endswith(b"\n"):
            if not _readable(self._status, deadline - time.monotonic()):
                raise TimeoutError
            chunk = os.read(self._status, 4096)
            if not chunk:
                return None
            line += chunk
        with contextlib.suppress(ValueError):
            return json.loads(line)
        return None

    def _exchange(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send ``request``; the reply, checked against the shape its request expects
        (the learner's code runs in the same process as the probe and can forge it)."""
        unsent = (json.dumps(request) + "\n").encode()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                return {"failure": "timeout", "seconds": timeout}
            watched = [self._replies] + ([self._output] if self._output >= 0 else [])
            ready, writable, _ = select.select(
                watched, [self._requests] if unsent else [], [], left
            )
            if writable:
                try:
                    unsent = unsent[os.write(self._requests, unsent) :]
                except BrokenPipeError:
                    return self._died()
            if self._output in ready:
                self._read_output()
            if self._replies in ready:
                chunk = os.read(self._replies, 1 << 16)
                if not chunk:
                    return self._died()
                self._buffer += chunk
                if len(self._buffer) > REPLY_LIMIT and b"\n" not in self._buffer:
                    return self._malformed()
        line, self._buffer = self._buffer.split(b"\n", 1)
        self._drain_output(0.0)  # printed before the reply
        try:
            reply = json.loads(line)
        except (ValueError, RecursionError):  # the learner's code wrote into the pipe
            return self._malformed()
        if not well_formed(request, reply):
            return self._malformed()
        return bounded(reply)

    def _drain_output(self, quiet: float) -> None:
        """Take what the learner's code printed until the pipe is quiet for ``quiet``
        seconds, for at most DRAIN_LIMIT seconds (a process that never stops printing
        must not hold the grader)."""
        deadline = time.monotonic() + DRAIN_LIMIT
        while self._output >= 0 and time.monotonic() < deadline and _readable(self._output, quiet):
            self._read_output()

    def _read_output(self) -> None:
        """Take what the learner's code printed: its end is kept, the rest dropped."""
        chunk = os.read(self._output, 1 << 16)
        if not chunk:  # every writer is gone
            os.close(self._output)
            self._output = -1
            return
        self._printed = (self._printed + chunk)[-OUTPUT_KEPT:]

    def _malformed(self) -> dict[str, Any]:
        self.close()
        return {"failure": "crash", "how": "sent a malformed reply", "output": []}

    def _died(self) -> dict[str, Any]:
        """The failure of a process whose pipe closed: how it ended, and its last words.
        Its supervisor is waited for STOP_GRACE seconds at most, then killed."""
        assert self._proc is not None
        try:
            code = self._proc.wait(STOP_GRACE)
        except subprocess.TimeoutExpired:  # stopped or stuck: whatever the engine did
            self._drain_output(0.05)
            self.close()
            how = f"ended, and its supervisor did not end within {STOP_GRACE:g} s (killed)"
            return {"failure": "crash", "how": how, "output": self.output_tail(3)}
        memory_cap = self._memory_cap_hit()
        self._drain_output(0.05)  # its last words
        self.close()
        if memory_cap:
            how = (
                f"was killed: its processes together passed the {MEMORY_LIMIT / 2**30:g} GiB "
                "memory cap"
            )
        elif code < 0:
            try:
                how = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with code {code}"
        return {"failure": "crash", "how": how, "output": self.output_tail(3)}

    def _memory_cap_hit(self) -> bool:
        """True when the supervisor's last status line says the memory cap killed a process
        (the supervisor has ended: the pipe holds all it will say)."""
        if self._status < 0:
            return False
        text = b""
        while (
            len(text) < 2**16 and _readable(self._status) and (chunk := os.read(self._status, 4096))
        ):
            text += chunk
        return any(b"memory_cap" in line for line in text.splitlines())

    def output_tail(self, lines: int) -> list[str]:
        """The last ``lines`` lines the learner's code printed (stdout and stderr)."""
        text = self._printed[-4096:].decode("utf-8", "replace")
        shown = [line for line in text.splitlines() if line.strip()][-lines:]
        return [_cut(line, LINE_LIMIT) for line in shown]

    def close(self) -> None:
        """Stop the learner's processes (if running) and forget them; the next ask
        restarts. The supervisor kills every descendant on SIGTERM; should it not end
        in time, its process group is killed."""
        if self._proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                self._proc.send_signal(signal.SIGCONT)  # a stopped one could not end
                self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(STOP_GRACE)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self._proc.pid, signal.SIGKILL)
                self._proc.wait()
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, signal.SIGKILL)  # whatever is left of the group
            self._proc = None
        for fd in (self._requests, self._replies, self._status, self._output):
            if fd >= 0:
                os.close(fd)
        self._requests = self._replies = self._status = self._output = -1

    def __enter__(self) -> EngineProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _readable(fd: int, wait: float = 0.05) -> bool:
    """True when ``fd`` has data or is at its end within ``wait`` seconds (a pipe the
    learner's code keeps open must not block the grader)."""
    return bool(select.select([fd], [], [], max(0.0, wait))[0])


# ---------------------------------------------------------------------- the replies
TEXT_LIMIT = 300  # characters of any one string from the learner's process
LINE_LIMIT = 200  # characters of one line the learner's code printed


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def bounded(reply: Any) -> Any:
    """The reply with every string cut to TEXT_LIMIT characters."""
    if isinstance(reply, str):
        return _cut(reply, TEXT_LIMIT)
    if isinstance(reply, list):
        return [bounded(item) for item in reply]
    if isinstance(reply, dict):
        return {key: bounded(item) for key, item in reply.items()}
    return reply


def _number(x: Any) -> bool:
    """A float: the probe sends every number through float(); JSON's unbounded integers
    (10**400) would overflow the grader's arithmetic."""
    return isinstance(x, float)


def _numbers(x: Any, n: int | None = None) -> bool:
    return isinstance(x, list) and all(map(_number, x)) and (n is None or len(x) == n)


def _count(x: Any) -> bool:
    """A small whole number (a bool is not one)."""
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**31


def _error(x: Any) -> bool:
    return isinstance(x, dict) and all(
        isinstance(x.get(k), str) for k in ("type", "message", "where")
    )


def _result(program: dict[str, Any], r: Any) -> bool:
    """One program's result: its numbers, or the stage and error that stopped it."""
    if not isinstance(r, dict):
        return False
    n = len(program["inputs"])
    if "error" in r:
        rules = r.get("rules")
        rules_ok = rules is None or (
            isinstance(rules, dict)
            and (_error(rules.get("error")) if "error" in rules else _grads(rules, n))
        )
        return r.get("stage") in ("forward", "backward") and _error(r["error"]) and rules_ok
    return _number(r.get("out")) and _grads(r, n)


def _grads(r: dict[str, Any], n: int) -> bool:
    return _number(r.get("out_grad")) and _numbers(r.get("grads"), n)


def _texts(x: Any) -> bool:
    return isinstance(x, list) and all(isinstance(t, str) for t in x)


def _walk(program: dict[str, Any], r: dict[str, Any]) -> bool:
    """A traced walk: the slots called (op nodes only), copies or not, and where."""
    first, last = len(program["inputs"]), len(program["inputs"]) + len(program["steps"])
    calls, where, equal = r.get("calls"), r.get("where"), r.get("equal")
    return (
        r.get("traced") is True
        and isinstance(calls, list)
        and all(isinstance(i, int) and first <= i < last for i in calls)
        and _numbers(r.get("grads_at_call"), len(calls))
        and isinstance(r.get("copies"), bool)
        and isinstance(equal, list)
        and all(isinstance(pair, list) and len(pair) == 2 for pair in equal)
        and all(_count(i) and i < last for pair in equal for i in pair)
        and _grads(r, first)
        and isinstance(where, dict)
        and all(isinstance(where.get(k), str) for k in ("backward", "init", "eq"))
        and _texts(where.get("rules"))
    )


def _level(level: Any) -> bool:
    """One of Neuron / Layer / MLP in a parameters reply."""
    if not isinstance(level, dict) or level.get("name") not in ("Neuron", "Layer", "MLP"):
        return False
    if "error" in level:
        return _error(level["error"])
    if "skipped" in level:
        return level["skipped"] is True
    parts = level.get("parts")
    return all(isinstance(level.get(k), int) for k in ("count", "distinct", "values")) and (
        all(isinstance(level.get(k), str) for k in ("where", "init"))
        and isinstance(level.get("same"), bool)
        and isinstance(parts, list)
        and len(parts) in (0, 2)
        and all(map(_count, parts))
    )


def well_formed(request: dict[str, Any], reply: Any) -> bool:
    """True when ``reply`` has the keys and types the probe's answer to ``request`` has."""
    if not isinstance(reply, dict):
        return False
    if "error" in reply:
        return _error(reply["error"])
    do = request["do"]
    if do.startswith("tensor_"):
        return well_formed_tensor(request, reply)
    if do.startswith("backprop_"):
        return well_formed_backprop(request, reply)
    if do.startswith("lm_"):
        return well_formed_lm(request, reply)
    if do == "borrowed":
        modules = reply.get("modules")
        return isinstance(modules, list) and all(m in request["names"] for m in modules)
    if do == "load":
        library = reply.get("library", [] if reply.get("mlp") is False else None)
        return isinstance(reply.get("mlp"), bool) and (
            isinstance(library, list) and all(isinstance(n, str) for n in library)
        )
    if do == "programs":
        results, programs = reply.get("results"), request["programs"]
        return (
            isinstance(results, list)
            and len(results) == len(programs)
            and all(_result(p, r) for p, r in zip(programs, results))
        )
    if do == "shape":
        children = reply.get("children")
        return (
            _number(reply.get("data"))
            and _number(reply.get("grad"))
            and (children is None or isinstance(children, str))
            and isinstance(reply.get("has_backward_method"), bool)
        )
    if do == "leaf_backward":
        ran = reply.get("ran")
        return ran is False or (
            ran is True and _number(reply.get("grad_after")) and _number(reply.get("data_after"))
        )
    if do == "accumulate":
        return all(
            _number(reply.get(k))
            for k in ("after_first", "after_second", "after_other", "same_graph")
        ) and _texts(reply.get("defaults"))
    if do == "chain":
        recursion = reply.get("recursion")
        return recursion is True or (recursion is False and _number(reply.get("grad")))
    if do == "network_gradients":
        grads, differences = reply.get("grads"), reply.get("differences")
        return (
            _numbers(grads)
            and isinstance(differences, list)
            and len(differences) == len(grads)
            and all(_numbers(pair, 2) for pair in differences)
            and isinstance(reply.get("distinct"), int)
            and not isinstance(reply.get("distinct"), bool)
        )
    if do == "seed":
        return _number(reply.get("grad"))
    if do == "walk":
        return reply.get("traced") is False or _walk(request["program"], reply)
    if do == "rule":
        n = len(request["program"]["inputs"])
        return reply.get("ran") is False or (
            reply.get("ran") is True and _numbers(reply.get("grads"), n)
        )
    if do == "parameters":
        levels = reply.get("levels")
        return isinstance(levels, list) and all(map(_level, levels))
    if do == "zero_grad":
        return reply.get("defined") is False or (
            reply.get("defined") is True
            and all(isinstance(reply.get(k), int) for k in ("count", "left"))
            and isinstance(reply.get("where"), str)
        )
    if do == "affine":
        constant = reply.get("constant")
        return (
            _number(reply.get("mlp"))
            and (constant is None or _number(constant))
            and (
                "neuron" not in reply
                or (_number(reply["neuron"]) and isinstance(reply.get("where"), str))
            )
        )
    if do == "train":
        history = reply.get("history")
        if "returned" in reply:  # the model's output is not a Value
            return isinstance(reply["returned"], str) and isinstance(reply.get("where"), str)
        return (
            isinstance(history, list)
            and len(history) >= 1
            and all(_numbers(entry, 2) for entry in history)
            and _count(reply.get("zero_outputs"))
            and _count(reply.get("no_gradient"))
            and _count(reply.get("parameters"))
            and isinstance(reply.get("where"), str)
        )
    return False
