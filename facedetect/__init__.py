"""facedetect: cost-sensitive face detectors (AdaBoostDB) over Haar features."""

import os

# numba's OpenMP threads spin between parallel regions by default. On a machine where
# another process holds a core, the spinning thread takes the time the working one needs:
# detect ran 1.8x slower with one core busy, and 1.05x with passive waiting
# (benchmarks/under_load.py). Set before the OpenMP runtime loads; a user's own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.2.0"

from .errors import FacedetectError

__all__ = ["FacedetectError", "__version__"]
