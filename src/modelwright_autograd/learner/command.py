"""One of the learner's commands (their tests, git), run to its end under ``supervise.py``
as the engine's probe runs: in its own session, with a scrubbed environment, in PID, mount
and user namespaces and a cgroup where Linux allows, every process it starts killed when it
ends, and stopped at a deadline. Only the end of what it printed is kept."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from .child import (
    FILE_LIMIT,
    MEMORY_LIMIT,
    OUTPUT_KEPT,
    PROCESS_LIMIT,
    STOP_GRACE,
    SUPERVISE,
    child_environment,
)


@dataclass
class Finished:
    """How a command ended: its exit code (None when a signal or the deadline ended it),
    and the end of what it printed (stdout and stderr together)."""

    code: int | None
    timed_out: bool
    output: str
    how: str  # "exited with code 1", "was killed by SIGSEGV", "timed out after 90 s"


def run_supervised(
    command: list[str], cwd: str, timeout: float, environment: dict[str, str] | None = None
) -> Finished:
    """Run ``command`` (its first word an absolute path) in ``cwd`` under the supervisor,
    for at most ``timeout`` seconds; the environment is ``child_environment()`` plus
    ``environment``."""
    status_read, status_write = os.pipe()
    output_read, output_write = os.pipe()
    config = {
        "fds": [],
        "status": status_write,
        "limits": [MEMORY_LIMIT, PROCESS_LIMIT, FILE_LIMIT],
        "cwd": cwd,
    }
    process = subprocess.Popen(
        [sys.executable, str(SUPERVISE), json.dumps(config), *command],
        stdin=subprocess.DEVNULL,
        stdout=output_write,
        stderr=output_write,
        pass_fds=(status_write,),
        cwd="/",
        env={**child_environment(), **(environment or {})},
        start_new_session=True,
    )
    os.close(status_write)
    os.close(output_write)
    kept, finished = b"", False
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:  # until every writer is gone: the supervisor
            left = deadline - time.monotonic()  # kills all the rest before it ends
            if select.select([output_read], [], [], max(0.0, left))[0]:
                chunk = os.read(output_read, 1 << 16)
                if not chunk:
                    finished = True
                    break
                kept = (kept + chunk)[-OUTPUT_KEPT:]
    finally:  # a timeout, Ctrl-C or SIGTERM: the command is stopped at once
        _stop(process, now=not finished)
        os.close(output_read)
        os.close(status_read)
    output = kept.decode("utf-8", "replace")
    code = process.returncode
    if not finished:
        return Finished(None, True, output, f"did not finish in {timeout:g} s (stopped)")
    if code < 0:
        try:
            how = f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            how = f"was killed by signal {-code}"
        return Finished(None, False, output, how)
    return Finished(code, False, output, f"exited with code {code}")


def _stop(process: subprocess.Popen[bytes], now: bool) -> None:
    """Wait for the supervisor (it is ending), or with ``now`` stop it: SIGTERM makes it
    kill every process of the command; one that does not end in time is killed."""
    if now:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            process.send_signal(signal.SIGCONT)
            process.send_signal(signal.SIGTERM)
    try:
        process.wait(STOP_GRACE)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # whatever is left of its group
