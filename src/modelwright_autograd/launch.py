"""The program's entry point (the ``modelwright-autograd`` script and ``python -m
modelwright_autograd``): Ctrl-C and SIGTERM are handled before the command line's imports.

Importing the command line takes about half a second (NumPy, scikit-learn, matplotlib);
a signal then would print a traceback (SIGINT) or end the process silently with -15
(SIGTERM). So this module, which imports only the standard library, first installs
handlers that end the program with one line and the shell's exit code, and blocks both
signals while the imports run: the threads they start (NumPy's BLAS threads) inherit the
block, so a signal sent to the process later always reaches the main thread, whose
handlers decide what it does (``cli.main``'s, and ``RunFolder``'s holding it while a run
folder is claimed or committed). A signal that came during the imports acts as they end.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence

#: The signals handled from the very start, and the exit code each ends with.
_EXIT = {signal.SIGINT: 128 + signal.SIGINT, signal.SIGTERM: 128 + signal.SIGTERM}


def _command(argv: Sequence[str]) -> str:
    """The command's name for the one-line message, if the first word looks like one."""
    word = argv[0] if argv else ""
    return f" {word}" if word.isalpha() and word.isascii() and len(word) <= 20 else ""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv`` (default: sys.argv[1:]) and return its exit code."""
    words = list(sys.argv[1:] if argv is None else argv)
    message = f"modelwright-autograd{_command(words)}: interrupted\n".encode()

    def starting(signum: int, frame: object) -> None:
        os.write(2, message)  # nothing has been written or started yet: leave at once
        os._exit(_EXIT[signum])

    for signum in _EXIT:
        if signal.getsignal(signum) is not signal.SIG_IGN:  # as Python: ignored stays so
            signal.signal(signum, starting)
    signal.pthread_sigmask(signal.SIG_BLOCK, set(_EXIT))
    try:
        from .cli import main as run  # the imports; threads started here keep the block
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, set(_EXIT))  # one held now acts
    return run(words)
