"""Which threads numba runs its parallel kernels on (OpenMP), and how they wait between
parallel regions: spinning for training, sleeping for detection beside other work.

numba takes Intel TBB before OpenMP wherever a TBB library is installed (Debian's
libopencv-dev brings one). Every figure of this project is measured on OpenMP, the wait
policy below is OpenMP's, and with TBB a ``traincascade`` beside a busy core finished its
cascade and then spun for minutes in TBB's shutdown (``tbb::finalize`` in numba's
``unload_tbb``) until the benchmark's cap killed it. So facedetect asks numba for OpenMP
first (:func:`prefer_openmp`, at import), unless the user chose a layer.

By default OpenMP's idle threads spin. Beside a process that holds a core, the spinning
thread takes the time the working one needs: ``detect`` ran 1.8x slower with one core busy,
and 1.05x with passive waiting. Boosting on an idle machine is the other way round: passive
waiting made a round 1.5x slower, as its threads sleep and wake between the many short
parallel regions of a round (``python -m benchmarks.boosting --busy``). So the policy is
chosen per command, before the OpenMP runtime loads (it reads the setting once):
``detect`` and ``evaluate-images`` wait passively, training keeps OpenMP's default. A
user's own
``OMP_WAIT_POLICY`` wins.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager

__all__ = ["numba_threads", "wait_passively", "prefer_openmp"]

POLICY_VARIABLE = "OMP_WAIT_POLICY"
LAYER_VARIABLES = ("NUMBA_THREADING_LAYER", "NUMBA_THREADING_LAYER_PRIORITY")
OPENMP_FIRST = "omp tbb workqueue"


def prefer_openmp() -> None:
    """Ask numba for its OpenMP threading layer before TBB (then its own work queue),
    unless the user set ``NUMBA_THREADING_LAYER`` or ``NUMBA_THREADING_LAYER_PRIORITY``;
    effective only before the first parallel kernel runs.

    Examples
    --------
    >>> saved = {name: os.environ.pop(name, None) for name in LAYER_VARIABLES}
    >>> prefer_openmp()
    >>> os.environ["NUMBA_THREADING_LAYER_PRIORITY"]
    'omp tbb workqueue'
    >>> os.environ["NUMBA_THREADING_LAYER_PRIORITY"] = "tbb omp workqueue"   # the user's
    >>> prefer_openmp()
    >>> os.environ["NUMBA_THREADING_LAYER_PRIORITY"]
    'tbb omp workqueue'
    >>> for name, value in saved.items():
    ...     _ = os.environ.pop(name, None)
    ...     if value is not None:
    ...         os.environ[name] = value
    """
    if any(os.environ.get(name) for name in LAYER_VARIABLES):
        return
    os.environ["NUMBA_THREADING_LAYER_PRIORITY"] = OPENMP_FIRST
    numba = sys.modules.get("numba")
    if numba is not None:   # imported already: it read its settings then
        numba.config.reload_config()


def wait_passively() -> None:
    """Let idle OpenMP threads sleep (``OMP_WAIT_POLICY=PASSIVE``) unless the user chose;
    effective only before the first parallel kernel runs.

    Examples
    --------
    >>> saved = os.environ.pop(POLICY_VARIABLE, None)
    >>> wait_passively()
    >>> os.environ[POLICY_VARIABLE]
    'PASSIVE'
    >>> os.environ[POLICY_VARIABLE] = "ACTIVE"     # the user's own choice wins
    >>> wait_passively()
    >>> os.environ[POLICY_VARIABLE]
    'ACTIVE'
    >>> _ = os.environ.pop(POLICY_VARIABLE)
    >>> if saved is not None:
    ...     os.environ[POLICY_VARIABLE] = saved
    """
    os.environ.setdefault(POLICY_VARIABLE, "PASSIVE")


@contextmanager
def numba_threads(count: int | None):
    """numba's parallel kernels on at most ``count`` threads inside the block (numba's
    setting for this thread, never raised), and the setting as before after it. None, or
    a count of numba's threads or more, changes nothing, and numba need not start its
    threads.

    Examples
    --------
    >>> import numba
    >>> before = numba.get_num_threads()
    >>> with numba_threads(1):
    ...     numba.get_num_threads()
    1
    >>> numba.get_num_threads() == before
    True
    """
    import numba
    if count is None or count >= numba.config.NUMBA_NUM_THREADS:
        yield
        return
    before = numba.get_num_threads()
    numba.set_num_threads(max(1, min(count, before)))
    try:
        yield
    finally:
        numba.set_num_threads(before)
