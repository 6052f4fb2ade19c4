"""The parent of the learner's process: when it ends, every process the learner started ends.

``python supervise.py PROBE ARGS...`` runs ``python PROBE ARGS...`` as its child and waits
for it. The learner's code may start processes of its own, even ones that leave the
process group with ``setsid()``; killing the group would miss those. So on Linux this
process is a *child subreaper*: any descendant whose parent exits is handed to it, not to
init, and when the probe ends, or this process gets SIGTERM/SIGHUP/SIGINT, or the grader
dies (``PR_SET_PDEATHSIG``), it kills and reaps every descendant it has. It then ends the
way the probe did (the same exit code or the same signal), so the grader can say how.
Standard library only: nothing of the grader's package runs here.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def prctl(option: int, value: int) -> bool:
    """Linux's prctl(2), or False where there is none (the group kill still applies)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def descendants(pid: int) -> list[int]:
    """Every living descendant of ``pid``, read from /proc (empty without /proc)."""
    found: list[int] = []
    stack = [pid]
    while stack:
        parent = stack.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            with contextlib.suppress(OSError):
                children = [int(c) for c in (task / "children").read_text().split()]
                found.extend(children)
                stack.extend(children)
    return found


def kill_descendants() -> None:
    """SIGKILL every descendant and reap it, until none is left (a process forking while
    it is killed leaves children that are this process's next round)."""
    for _ in range(1000):
        alive = descendants(os.getpid())
        for pid in alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        reaped = False
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                reaped = True
        if not alive and not reaped:
            return
        if alive and not reaped:
            time.sleep(0.001)


class Stop(Exception):
    """A signal asking this process to end (the grader closing the engine)."""


def _stop(signum: int, frame: object) -> None:
    raise Stop


def _no_core() -> None:
    with contextlib.suppress(ImportError, ValueError, OSError):
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def main() -> None:
    _no_core()
    subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1)
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)  # the grader died: clean up all the same
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, _stop)
    grader = os.getppid()
    if grader == 1:  # the grader died before prctl took effect
        return
    status = 0
    try:
        probe = os.fork()
        if probe == 0:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # no probe outlives its supervisor
            os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
        for fd in sys.argv[2:]:  # the probe's pipe ends: only the probe holds them
            with contextlib.suppress(ValueError, OSError):
                os.close(int(fd))
        while True:  # reap orphans handed to us until the probe itself ends
            pid, status = os.waitpid(-1, 0) if subreaper else os.waitpid(probe, 0)
            if pid == probe:
                break
    except Stop:
        status = signal.SIGKILL  # as if killed: the grader asked for it
    finally:
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(signum, signal.SIG_IGN)
        kill_descendants()
    if os.WIFSIGNALED(status):  # end by the same signal (no core file: see _no_core)
        signum = os.WTERMSIG(status)
        with contextlib.suppress(OSError, ValueError):  # SIGKILL's action is fixed
            signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    sys.exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


if __name__ == "__main__":
    main()
