"""The learner's engine in a child process: started, asked, timed out and killed here.

``EngineProcess.ask(request, timeout)`` sends one request to ``probe.py`` running in its own
process group and waits for its one-line reply, checked against the shape that request's
reply has (the learner's code shares the probe's process and can forge or flood it: a
malformed or oversized reply is a failure, like a crash). The probe runs under
``supervise.py``, which kills every process the learner's code started when it ends. When
the reply does not come in time all of them are killed; when the process dies (a crash,
``os._exit``, the memory cap) the reply says how. Either way the next request starts a
fresh process, so one hanging check does not take the others with it. The learner's
stdout/stderr go to temporary files, kept out of the report.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .tensor_programs import well_formed_tensor

PROBE = Path(__file__).with_name("probe.py")
SUPERVISE = Path(__file__).with_name("supervise.py")
REPLY_LIMIT = 4 * 2**20  # bytes of one reply; the largest real one is a few tens of KB
STOP_GRACE = 5.0  # seconds the supervisor gets to kill the learner's processes


class EngineProcess:
    """One child process running the learner's engine, restarted when it dies."""

    def __init__(self, load_request: dict[str, Any], cwd: str, load_timeout: float) -> None:
        self.load_request = load_request
        self.cwd = cwd
        self.load_timeout = load_timeout
        self.loaded: dict[str, Any] | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._requests: Any = None
        self._replies = -1
        self._buffer = b""
        self._output = tempfile.TemporaryFile()  # noqa: SIM115 (closed by __exit__)

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
        or a crash. A process killed by an earlier request is restarted first."""
        if self._proc is None:
            loaded = self.load()
            if "error" in loaded or "failure" in loaded:
                return {"failure": "crash", "how": "could not import the engine again"}
        return self._exchange(request, timeout)

    def _start(self) -> dict[str, Any]:
        request_read, request_write = os.pipe()
        reply_read, reply_write = os.pipe()
        self._proc = subprocess.Popen(
            [sys.executable, str(SUPERVISE), str(PROBE), str(request_read), str(reply_write)],
            stdin=subprocess.DEVNULL,
            stdout=self._output,
            stderr=self._output,
            pass_fds=(request_read, reply_write),
            cwd=self.cwd,
            start_new_session=True,  # its own process group: no Ctrl-C from the terminal
        )
        os.close(request_read)
        os.close(reply_write)
        self._requests = os.fdopen(request_write, "w", encoding="utf-8")
        self._replies = reply_read
        self._buffer = b""
        return self._exchange(self.load_request, self.load_timeout)

    def _exchange(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send ``request``; the reply, checked against the shape its request expects
        (the learner's code runs in the same process as the probe and can forge it)."""
        try:
            self._requests.write(json.dumps(request) + "\n")
            self._requests.flush()
        except BrokenPipeError:
            return self._died()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                return {"failure": "timeout", "seconds": timeout}
            ready, _, _ = select.select([self._replies], [], [], left)
            if ready:
                chunk = os.read(self._replies, 1 << 16)
                if not chunk:
                    return self._died()
                self._buffer += chunk
                if len(self._buffer) > REPLY_LIMIT and b"\n" not in self._buffer:
                    return self._malformed()
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            reply = json.loads(line)
        except (ValueError, RecursionError):  # the learner's code wrote into the pipe
            return self._malformed()
        if not well_formed(request, reply):
            return self._malformed()
        return bounded(reply)

    def _malformed(self) -> dict[str, Any]:
        self.close()
        return {"failure": "crash", "how": "sent a malformed reply", "output": []}

    def _died(self) -> dict[str, Any]:
        assert self._proc is not None
        code = self._proc.wait()
        self.close()
        if code < 0:
            try:
                how = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with code {code}"
        return {"failure": "crash", "how": how, "output": self.output_tail(3)}

    def output_tail(self, lines: int) -> list[str]:
        """The last ``lines`` lines the learner's code printed (stdout and stderr)."""
        self._output.seek(0, os.SEEK_END)
        size = self._output.tell()
        self._output.seek(max(0, size - 4096))
        text = self._output.read().decode("utf-8", "replace")
        self._output.seek(0, os.SEEK_END)
        shown = [line for line in text.splitlines() if line.strip()][-lines:]
        return [_cut(line, LINE_LIMIT) for line in shown]

    def close(self) -> None:
        """Stop the learner's processes (if running) and forget them; the next ask
        restarts. The supervisor kills every descendant on SIGTERM; should it not end
        in time, its process group is killed."""
        if self._proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
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
        if self._requests is not None:
            with contextlib.suppress(BrokenPipeError):
                self._requests.close()
            self._requests = None
        if self._replies >= 0:
            os.close(self._replies)
            self._replies = -1

    def __enter__(self) -> EngineProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
        self._output.close()


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
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _numbers(x: Any, n: int | None = None) -> bool:
    return isinstance(x, list) and all(map(_number, x)) and (n is None or len(x) == n)


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
    calls, where = r.get("calls"), r.get("where")
    return (
        r.get("traced") is True
        and isinstance(calls, list)
        and all(isinstance(i, int) and first <= i < last for i in calls)
        and isinstance(r.get("copies"), bool)
        and _grads(r, first)
        and isinstance(where, dict)
        and all(isinstance(where.get(k), str) for k in ("backward", "init"))
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
    return all(isinstance(level.get(k), int) for k in ("count", "distinct", "values")) and (
        isinstance(level.get("where"), str) and isinstance(level.get("same"), bool)
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
        return _number(reply.get("after_first")) and _number(reply.get("after_second"))
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
        )
    if do == "seed":
        return _number(reply.get("grad"))
    if do == "walk":
        return reply.get("traced") is False or _walk(request["program"], reply)
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
        return _number(reply.get("mlp")) and (
            "neuron" not in reply
            or (_number(reply["neuron"]) and isinstance(reply.get("where"), str))
        )
    if do == "train":
        history = reply.get("history")
        return (
            isinstance(history, list)
            and len(history) >= 1
            and all(_numbers(entry, 2) for entry in history)
        )
    return False
