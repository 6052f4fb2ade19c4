"""Ctrl-C and SIGTERM while a command runs: both raise, so a command ends in order and
says what it kept; the exit codes are the shell's 128 + the signal's number."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


class Terminated(Exception):
    """SIGTERM, turned into an exception so a run ends as in-order as after Ctrl-C."""


def _terminated(signum: int, frame: object) -> None:
    raise Terminated


@contextlib.contextmanager
def interrupts_raise() -> Iterator[None]:
    """Within the block, SIGINT raises KeyboardInterrupt and SIGTERM Terminated, whatever
    handled them before (launch.py's, which end the program at once while it starts),
    unless it is ignored. Python runs signal handlers in the main thread only, so
    elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    wanted = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: _terminated}
    previous = {  # a signal the program was started ignoring (``nohup``, ``cmd &``) stays so
        signum: signal.signal(signum, handler)
        for signum, handler in wanted.items()
        if signal.getsignal(signum) is not signal.SIG_IGN
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)


class Interrupts:
    """Ctrl-C and SIGTERM for a run that keeps what it has saved (``interrupts_raise_once``):
    the first raises, as ``interrupts_raise``'s do; every later one, and any after
    ``finishing()``, is only noted in ``noted``, so the run's last writes and its rename
    into place are never cut short, however many arrive."""

    def __init__(self) -> None:
        self.raised = False
        self.done = False  # finishing(): the steps are over, only bounded writes remain
        self.noted: list[int] = []

    def finishing(self) -> None:
        """From now on signals are noted, not raised."""
        self.done = True

    def stopped_by(self) -> type[BaseException] | None:
        """The exception of the first signal noted, if any was."""
        if not self.noted:
            return None
        return KeyboardInterrupt if self.noted[0] == signal.SIGINT else Terminated

    def _handle(self, signum: int, frame: object) -> None:
        if self.raised or self.done:
            self.noted.append(signum)
            return
        self.raised = True
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated


@contextlib.contextmanager
def interrupts_raise_once() -> Iterator[Interrupts]:
    """As ``interrupts_raise``, but only the first signal raises (see ``Interrupts``)."""
    interrupts = Interrupts()
    if threading.current_thread() is not threading.main_thread():
        yield interrupts
        return
    previous = {
        signum: signal.signal(signum, interrupts._handle)
        for signum in (signal.SIGINT, signal.SIGTERM)
        if signal.getsignal(signum) is not signal.SIG_IGN
    }
    try:
        yield interrupts
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)


#: Exit codes of an interrupted run: the shell's 128 + the signal's number.
EXIT_INTERRUPTED = {KeyboardInterrupt: 128 + signal.SIGINT, Terminated: 128 + signal.SIGTERM}
