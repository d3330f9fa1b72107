"""The installed programs' entry points: the command's module is imported inside the
interrupt guard, so Ctrl-C at any moment (while numpy, numba and OpenCV load, while the
arguments are parsed) ends in one line and exit 130, as it does during the work.

Only the standard library (and :mod:`facedetect._utils.interrupts`, which uses nothing else) is
imported here, before the guard.
"""

from __future__ import annotations

import importlib
import sys

EXIT_INTERRUPTED = 130


def _launch(module: str, prog: str) -> int:
    import signal
    from .._utils.interrupts import redelivered_interrupts   # the standard library only
    interrupted = []

    def on_interrupt(signum, frame):
        interrupted.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_interrupt)
    try:
        with redelivered_interrupts():
            try:
                return importlib.import_module(module).main()
            except Exception:
                # C code that an interrupt lands in may report it as its own error (numpy's
                # import: "PyCapsule_Import could not import module"; scipy's FFT, imported
                # by the work itself: "initialization failed"): Ctrl-C.
                if interrupted:
                    return _interrupted(prog)
                raise
    except KeyboardInterrupt:
        return _interrupted(prog)


def _interrupted(prog: str) -> int:
    from .._utils.interrupts import quiet_compiler_finalizers
    quiet_compiler_finalizers()
    print(f"{prog}: interrupted", file=sys.stderr)
    return EXIT_INTERRUPTED


def facedetect() -> int:
    return _launch("facedetect.cli._main", "facedetect")


def train_detector() -> int:
    return _launch("facedetect.cli._train_cmd", "train-detector")


def evaluate_detector() -> int:
    return _launch("facedetect.cli._evaluate_cmd", "evaluate-detector")


def detect() -> int:
    return _launch("facedetect.cli._detect_cmd", "detect")
