"""Independent blocks of array work shared among a few threads.

NumPy's ufuncs and BLAS release the GIL while they run, so Python threads that each
run a share of the blocks use that many cores. The rules that split their work this way
(attention over the first batch dim, dropout, layer norm over rows, GELU) get the same
numbers at every thread count: nothing a block computes depends on where it starts (a
sum over rows is one product over all of them, before the blocks). Work of fewer than
two blocks a thread stays on the calling thread, so at two threads attention on a batch
of fewer than four items uses one, and a batch of one is a single block however large.
docs/language-models.md measures what it gains. ``set_num_threads`` sets the count, as
``torch.set_num_threads``; NumPy's BLAS keeps its own (threadpoolctl, or
OPENBLAS_NUM_THREADS, sets that); ``limit`` sets both for a block (``train --threads``).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import signal
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

from threadpoolctl import ThreadpoolController

Span = tuple[int, int]

#: Elements a block aims at (1 MiB of float32), so its passes run in the CPU's cache; a
#: smaller block pays more in calls than it gains (the CPU GPT's GELU forward and
#: backward, 1 thread: 1.2 ms a layer at this size, 1.4 at 32Ki, 2.1 at 8Ki).
BLOCK_ELEMENTS = 262_144


def _default_threads() -> int:
    """OMP_NUM_THREADS if it is a positive integer (torch reads it too), else the CPUs
    this process may run on."""
    text = os.environ.get("OMP_NUM_THREADS", "")
    if text.isdigit() and int(text) > 0:
        return int(text)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


_threads = _default_threads()
_pool: ThreadPoolExecutor | None = None
_pool_pid = 0  # the process that made the pool: a forked child makes its own
_pool_size = 0
_running = threading.Lock()  # held by the run on threads (other callers wait for it)


def set_num_threads(n: int) -> None:
    """Use ``n`` threads (1: the caller's only) for the work split here."""
    global _threads
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"set_num_threads: n must be a positive integer, got {n!r}")
    _threads = n


def get_num_threads() -> int:
    """How many threads the work split here uses."""
    return _threads


@contextlib.contextmanager
def limit(n: int) -> Iterator[None]:
    """Within the block, ``n`` threads here and in NumPy's BLAS; both put back after."""
    old = get_num_threads()
    set_num_threads(n)
    try:
        with _blas_controller().limit(limits=n, user_api="blas"):
            yield
    finally:
        set_num_threads(old)


def spans(n: int, item_size: int) -> list[Span]:
    """[0, n) cut into contiguous spans of about ``BLOCK_ELEMENTS / item_size`` items (an
    item being ``item_size`` elements, an item at least): one span if all fit in one
    block, else as many as a multiple of the thread count, or n if fewer, so that the
    threads get shares as equal as n allows."""
    if n <= 0:
        return []
    count = math.ceil(n * max(item_size, 1) / BLOCK_ELEMENTS)
    if count > 1:  # work of one block is done quicker than it is handed to another thread
        count = math.ceil(count / _threads) * _threads
    step = math.ceil(n / min(count, n))
    return [(i, min(i + step, n)) for i in range(0, n, step)]


def run(work: Callable[[int, int], None], parts: list[Span]) -> None:
    """Call ``work(start, stop)`` for every span: in order on this thread when there is one
    thread or fewer than two spans a thread, else each thread takes an equal run of
    consecutive spans (this thread the first). A thread stops at an exception; the first
    is raised here once every thread has stopped."""
    # two spans a thread at least: fewer pay more to hand over (and to share the cores
    # with BLAS's threads, which keep spinning for a while after a product) than they save
    threads = min(_threads, len(parts) // 2)
    if threads <= 1:
        for start, stop in parts:
            work(start, stop)
        return
    share = math.ceil(len(parts) / threads)
    runs = [parts[i : i + share] for i in range(0, len(parts), share)]

    def run_all(mine: list[Span]) -> None:
        for start, stop in mine:
            work(start, stop)

    # each thread's products on one BLAS thread: BLAS's own threads on top of these would
    # ask for more cores than there are (twice as slow on attention's, measured). One
    # run at a time shares the pool and sets the limit (so a block must not call run)
    with _running, _blas_controller().limit(limits=1, user_api="blas"):
        pool = _executor()
        futures = [pool.submit(run_all, mine) for mine in runs[1:]]
        try:
            run_all(runs[0])
        finally:
            errors = [f.exception() for f in futures]  # waits for each
    for error in errors:
        if error is not None:
            raise error


@functools.cache
def _blas_controller() -> ThreadpoolController:
    """threadpoolctl's handle on NumPy's BLAS (made once: finding it takes a millisecond)."""
    return ThreadpoolController()


def _block_signals() -> None:
    """A helper thread blocks Ctrl-C and SIGTERM, so that they reach the main thread (whose
    handlers decide what they do) and wake it wherever it waits, as launch.py arranges for
    the threads started while the command line is imported."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


def _executor() -> ThreadPoolExecutor:
    """The pool of helper threads (the caller is the other one), made at first use and
    again in a forked child or after the count grew."""
    global _pool, _pool_pid, _pool_size
    if _pool is None or _pool_pid != os.getpid() or _pool_size < _threads - 1:
        if _pool is not None and _pool_pid == os.getpid():
            _pool.shutdown(wait=False)  # its idle threads end
        _pool_size = _threads - 1
        _pool = ThreadPoolExecutor(
            _pool_size, thread_name_prefix="modelwright", initializer=_block_signals
        )
        _pool_pid = os.getpid()
    return _pool
