"""SIGTERM handled like Ctrl-C, so that a killed run cleans up as an interrupted one does."""

from __future__ import annotations

import signal
from contextlib import contextmanager


@contextmanager
def terminate_as_interrupt():
    """Within the block, SIGTERM (``kill``, ``timeout``) raises KeyboardInterrupt: temporary
    files are removed, locks released and checkpoints written as after Ctrl-C. Outside the
    main thread, where signals cannot be caught, it does nothing."""
    def handler(signum, frame):
        raise KeyboardInterrupt
    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
