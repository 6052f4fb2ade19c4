"""The learner's engine in a child process: started, asked, timed out and killed here.

``EngineProcess.ask(request, timeout)`` sends one request to ``probe.py`` running in its own
process group and waits for its one-line reply. When the reply does not come in time the
whole group is killed; when the process dies (a crash, ``os._exit``, the memory cap) the
reply says how. Either way the next request starts a fresh process, so one hanging check
does not take the others with it. The learner's stdout/stderr go to temporary files, kept
out of the report.
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

PROBE = Path(__file__).with_name("probe.py")


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
            [sys.executable, str(PROBE), str(request_read), str(reply_write)],
            stdin=subprocess.DEVNULL,
            stdout=self._output,
            stderr=self._output,
            pass_fds=(request_read, reply_write),
            cwd=self.cwd,
            start_new_session=True,  # its own process group: killed as one, no Ctrl-C
        )
        os.close(request_read)
        os.close(reply_write)
        self._requests = os.fdopen(request_write, "w", encoding="utf-8")
        self._replies = reply_read
        self._buffer = b""
        return self._exchange(self.load_request, self.load_timeout)

    def _exchange(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
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
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError:  # the learner's code wrote into the reply pipe itself
            self.close()
            return {"failure": "crash", "how": "sent a garbled reply", "output": []}

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
        return [line for line in text.splitlines() if line.strip()][-lines:]

    def printed(self) -> bool:
        self._output.seek(0, os.SEEK_END)
        return self._output.tell() > 0

    def close(self) -> None:
        """Kill the process group (if running) and forget it; the next ask restarts."""
        if self._proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait()
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
