"""Pyramid levels scanned side by side, on a small pool of threads.

A photograph's levels are independent, so each is scanned by one thread with the serial
kernels (which release the GIL) while another thread scans the next; the calling thread
and the pool's take levels in order, largest first, as they come free. Results come back
in level order, so a scan gives the same windows, in the same order, on any number of
threads.

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
    """``function(item)`` for every item, in the items' order, computed by the calling
    thread and ``workers - 1`` pool threads, each taking the next item as it comes free.
    One worker: a plain ``map`` on the calling thread.

    The caller works rather than waits. Waiting, it left the pool's threads to the kernel's
    placement, which after the caller had kept one core busy (a long single-threaded call
    before ``detect``, such as dlib's HOG) often put them on one core, and ``detect`` took
    a quarter longer than with the caller working (benchmarks/results/level_placement.md).
    A caller who stops early gets control back once the items being computed are done,
    and no item starts after.

    Examples
    --------
    >>> list(ordered_map(lambda x: x * x, range(6), workers=2))
    [0, 1, 4, 9, 16, 25]
    """
    if workers <= 1:
        yield from map(function, items)
        return
    shared = _SharedItems(function, items)
    executor = _executor(workers - 1)
    helpers = []
    try:
        helpers += [executor.submit(shared.work) for _ in range(workers - 1)]
        index = 0
        while True:
            if not shared.compute_next():   # nothing left to take: wait for the rest
                if not shared.wait_for(index):
                    break
            while shared.ready(index):
                yield shared.pop(index)
                index += 1
    finally:
        for helper in helpers:   # one still queued behind another scan's never starts
            helper.cancel()
        shared.stop()


class _SharedItems:
    """The items of :func:`ordered_map`, taken in order by whichever thread is free, and
    their results (or exceptions) by index."""

    def __init__(self, function: Callable, items: Iterable):
        self.function = function
        self.items = iter(items)
        self.results: dict = {}
        self.taken = 0        # items taken so far: the next one's index
        self.busy: set = set()   # threads computing an item now
        self.exhausted = False
        self.stopped = False
        self.condition = threading.Condition()

    def compute_next(self) -> bool:
        """Take the next item and store its result; False once none is left."""
        with self.condition:
            if self.exhausted or self.stopped:
                return False
            index = self.taken
            try:
                item = next(self.items)
            except BaseException as error:
                # the items' own error comes in its place, as from map; they end there
                if not isinstance(error, StopIteration):
                    self.results[index] = (False, error)
                    self.taken += 1
                self.exhausted = True
                self.condition.notify_all()
                return False
            self.taken += 1
            self.busy.add(threading.get_ident())
        try:
            outcome = (True, self.function(item))
        except BaseException as error:   # raised in order, by the caller
            outcome = (False, error)
        with self.condition:
            self.results[index] = outcome
            self.busy.discard(threading.get_ident())
            self.condition.notify_all()
        return True

    def work(self) -> None:
        """A pool thread's part: items until none is left or the caller stops."""
        while self.compute_next():
            pass

    def ready(self, index: int) -> bool:
        with self.condition:
            return index in self.results

    def wait_for(self, index: int) -> bool:
        """Wait until item ``index`` has its result; False if there is no such item."""
        with self.condition:
            while index not in self.results:
                if self.exhausted and index >= self.taken:
                    return False
                self.condition.wait()
            return True

    def pop(self, index: int):
        with self.condition:
            ok, value = self.results.pop(index)
        if not ok:
            raise value
        return value

    def stop(self) -> None:
        """No item is taken after this; returns once the items being computed are done,
        except this thread's own: the garbage collector may close the caller's generator
        from inside one of its helpers' items."""
        with self.condition:
            self.stopped = True
            me = threading.get_ident()
            self.condition.wait_for(lambda: not self.busy - {me})
