"""Settings every test process shares."""

from __future__ import annotations

import signal


def pytest_configure(config: object) -> None:
    """Give SIGINT Python's usual handler when the runner was started with it ignored (a
    shell's background job: ``pytest &``, nohup). A program started with SIGINT ignored
    keeps it ignored, as the CLI does on purpose, so without this every child the Ctrl-C
    tests start would run to its end and those tests would fail for the runner's reason,
    not the code's. A handler, unlike "ignored", is not inherited past exec."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
