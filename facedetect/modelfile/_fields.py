"""The kinds and ranges of a model file's fields: the checks every section's schema is
written with, and the ranges code outside the schema shares (the scan settings')."""

from __future__ import annotations

import math

from ..errors import FacedetectError

__all__ = ["MAX_ALPHA", "MAX_STUMPS", "MAX_THRESHOLD", "PYRAMIDS", "SCAN_LIMITS", "fail",
           "is_finite", "is_int", "is_list"]

# How a model's pyramid levels are resized (detection.pyramid): area averages, or OpenCV's
# bilinear resize.
PYRAMIDS = ("area", "linear")

MAX_STUMPS = 100_000
# Far beyond any trained model (alphas are a few units, feature values at most ~1e6), and
# small enough that sums of 100,000 stumps stay finite and fit OpenCV's float32.
MAX_ALPHA = 1e6
MAX_THRESHOLD = 1e9

# The scan settings' ranges, declared once: detection's check (detector/_params.py), the
# detect command's flags and a model file's detection section all read them. Below a
# pyramid step of 1.01 a face draws windows on hundreds of levels, and grouping them grows
# as their square (1.001 took 23 GB on a 628x454 picture); OpenCV's default is 1.1.
# (kind, low, high, ends, None allowed), as facedetect.limits.check_limited reads them.
SCAN_LIMITS = {"scale_factor": ("float", 1.01, 10.0, "[]", False),
               "step": ("int", 1, 1000, "[]", False),
               "min_size": ("int", 1, 100_000, "[]", False),
               "max_size": ("int", 1, 100_000, "[]", True),
               "threshold": ("float", -1e9, 1e9, "[]", False),
               "min_neighbors": ("int", 0, 1000, "[]", False),
               "neighbor_margin": ("float", 0.0, 1e6, "[]", False)}


def fail(path, message: str):
    raise FacedetectError(f"{path}: invalid model file: {message}")


def is_int(value, low: int = -2 ** 63, high: int = 2 ** 63) -> bool:
    """An integer (not a bool) within ``[low, high]``."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def is_finite(value, low: float = -math.inf, high: float = math.inf) -> bool:
    """A finite number (not a bool) within ``[low, high]``."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and low <= value <= high)


def is_list(value, check, min_length: int = 0, max_length: int = 10 ** 7) -> bool:
    """A list of ``min_length..max_length`` items that all pass ``check``."""
    return (isinstance(value, list) and min_length <= len(value) <= max_length
            and all(check(item) for item in value))
