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


@contextmanager
def redelivered_interrupts():
    """Within the block, a KeyboardInterrupt that C code swallowed is raised again.

    numba's compiler calls back into Python through ctypes while it compiles or loads
    cached machine code; an interrupt that lands in such a callback is only reported
    ("Exception ignored ...") and the run goes on to the end. Here it is not reported:
    the main thread is interrupted again a moment later, once it is back in Python.
    """
    import _thread
    import sys
    import threading

    previous = sys.unraisablehook

    def hook(unraisable):
        if isinstance(unraisable.exc_type, type) and issubclass(unraisable.exc_type,
                                                                KeyboardInterrupt):
            timer = threading.Timer(0.01, _thread.interrupt_main)
            timer.daemon = True
            timer.start()
            return
        previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


def quiet_compiler_finalizers() -> None:
    """After an interrupt, drop errors that numba's and llvmlite's finalizers raise.

    An interrupt that lands while numba compiles leaves llvmlite objects half-built; their
    ``__del__`` then fails as the interpreter exits ("Exception ignored in
    ObjectRef.__del__", with a traceback) after the command has said "interrupted" in one
    line. Those errors are a consequence of the interrupt, not news. Anything else is
    still reported.
    """
    import sys

    previous = sys.unraisablehook

    def hook(unraisable):
        owner = getattr(unraisable.object, "__module__", None) or ""
        if owner.split(".")[0] in ("llvmlite", "numba"):
            return
        previous(unraisable)

    sys.unraisablehook = hook
