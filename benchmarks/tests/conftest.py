"""The benchmarks' own tests (``pytest benchmarks/tests``; the product suite does not
collect them). As in tests/conftest.py, the library's search for faces from the wild and
negative pictures is off, so that a test trains on what it passes."""

from __future__ import annotations

import os

for _name in ("FACEDETECT_FACES", "FACEDETECT_NEGATIVES"):
    os.environ[_name] = "none"
