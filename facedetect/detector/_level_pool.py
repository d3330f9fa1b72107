"""Pyramid levels scanned side by side, on a small pool of threads.

A photograph's levels are independent, so each is scanned by one thread with the serial
kernels (which release the GIL) while another thread scans the next; threads take levels
in order, largest first, as they come free. Results come back in level order, so a scan
gives the same windows, in the same order, on any number of threads.

Only cores that are free take part: beside a process that holds a core, a second thread
made ``detect`` slower (0.52x OpenCV's time instead of 0.45x with one thread, on the
2-core machine), as OpenMP's evenly split parallel regions did before (2x slower). Where
the kernel says how many threads are runnable (``/proc/loadavg``), the scan uses no more
threads than cores left free by the others.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Iterator

__all__ = ["busy_cores", "level_threads", "ordered_map"]

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


LOADAVG = "/proc/loadavg"
TASKS = "/proc/self/task"
READINGS = 3
READING_GAP = 0.0002   # seconds


def level_threads() -> int:
    """How many levels are scanned at once: numba's thread count (``NUMBA_NUM_THREADS``,
    by default the machine's cores), so that one setting bounds all of a scan's threads,
    less the cores other runnable threads hold now (:func:`busy_cores`).

    Examples
    --------
    >>> level_threads() >= 1
    True
    """
    import numba
    return max(1, int(numba.config.NUMBA_NUM_THREADS) - busy_cores())


def busy_cores() -> int:
    """Threads of other processes runnable now (Linux: ``/proc/loadavg`` counts every
    runnable thread, less this process's own in ``/proc/self/task``, whose threads, and
    OpenCV's, may still be winding down from the last scan); 0 where it cannot be read.
    The smallest of ``READINGS`` readings ``READING_GAP`` seconds apart: a kernel thread
    that wakes for a moment is seen in one of them now and then (a tenth of idle calls
    with one reading), a process that holds a core in all.

    Examples
    --------
    >>> busy_cores() >= 0
    True
    """
    busy = _busy_once()
    for _ in range(READINGS - 1):
        if not busy:
            break
        time.sleep(READING_GAP)
        busy = min(busy, _busy_once())
    return busy


def _busy_once() -> int:
    try:
        # This process's threads first: one that stops running between the two reads is
        # then not taken for another process's.
        own = 0
        for task in os.scandir(TASKS):
            with open(os.path.join(task.path, "stat"), encoding="ascii") as handle:
                # the state follows the command name, which ends with the last ")"
                own += handle.read().rpartition(")")[2].split()[0] == "R"
        with open(LOADAVG, encoding="ascii") as handle:
            running = int(handle.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return 0
    return max(0, running - max(own, 1))


def _executor(workers: int) -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None or _pool._max_workers != workers:
            _pool = ThreadPoolExecutor(workers, thread_name_prefix="facedetect-levels")
        return _pool


def ordered_map(function: Callable, items: Iterable, workers: int) -> Iterator:
    """``function(item)`` for every item, in the items' order, computed on ``workers``
    threads with at most ``workers + 1`` items started ahead of the one yielded (so that a
    caller who stops early, as the scan does past its window limit, leaves little work
    running). One worker: a plain ``map`` on the calling thread.

    Examples
    --------
    >>> list(ordered_map(lambda x: x * x, range(6), workers=2))
    [0, 1, 4, 9, 16, 25]
    """
    if workers <= 1:
        yield from map(function, items)
        return
    executor = _executor(workers)
    pending: deque = deque()
    try:
        for item in items:
            pending.append(executor.submit(function, item))
            if len(pending) > workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()
