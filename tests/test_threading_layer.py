"""numba runs facedetect's parallel kernels on OpenMP, the layer every figure is measured
on, even where a TBB library is installed (numba's own first choice), unless the user
chose a layer."""

from __future__ import annotations

import os
import subprocess
import sys

from facedetect._utils.threads import LAYER_VARIABLES

PROBE = ("import numba, numpy as np\n"
         "import facedetect\n"
         "from facedetect.training._binned import quantile_bins\n"
         "quantile_bins(np.ones((4, 8), np.float32))\n"
         "print(numba.config.THREADING_LAYER_PRIORITY[0], numba.threading_layer())\n")


def _probe(**extra) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k not in LAYER_VARIABLES}
    done = subprocess.run([sys.executable, "-c", PROBE], env=dict(env, **extra),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def _openmp_loads() -> bool:
    try:
        from numba.np.ufunc import omppool  # noqa: F401
    except ImportError:
        return False
    return True


def test_numba_is_asked_for_openmp_first_even_when_imported_before_facedetect():
    first, layer = _probe()
    assert first == "omp"
    if _openmp_loads():
        assert layer == "omp"


def test_the_users_own_threading_layer_wins():
    first, layer = _probe(NUMBA_THREADING_LAYER_PRIORITY="workqueue omp tbb")
    assert (first, layer) == ("workqueue", "workqueue")
    _, layer = _probe(NUMBA_THREADING_LAYER="workqueue")
    assert layer == "workqueue"
