"""The held-out sets the quality benchmarks score alike (``peers``, ``levers``,
``trainers``): the wild-face sources compared with OpenCV, and the grainy and posterised
forms of crops and pictures.

- The compared sources are MTFL and Caltech, whose crops are loose enough for OpenCV's
  framing; UTKFace and Yale B are reported apart.
- Grainy: Gaussian grain (sd ``GRAIN``, seeded by the picture's bytes) added at the
  picture's own resolution, as a scan or a high-ISO print has it.
- Posterised: ``LEVELS`` grey levels (equal bins of 0..255, each pixel its bin's middle),
  as a photocopy or a cheap print has them.
"""

from __future__ import annotations

import zlib

import numpy as np

from facedetect.pipeline import posterize_window

COMPARED = ("mtfl", "mtfl-sun2013", "caltech-webfaces")
GRAIN = 20.0   # grey levels, sd
LEVELS = 4


def grainy(crop: np.ndarray) -> np.ndarray:
    """``crop`` with Gaussian grain of sd ``GRAIN``, the same every run."""
    rng = np.random.default_rng(zlib.crc32(crop.tobytes()))
    return np.clip(crop + rng.normal(0.0, GRAIN, crop.shape), 0, 255).astype(np.uint8)


def posterised(picture: np.ndarray) -> np.ndarray:
    """``picture`` in ``LEVELS`` grey levels: equal bins of 0..255, each its middle."""
    return posterize_window(picture, LEVELS, 0.0)


def compared_only(faces):
    """The faces of the ``COMPARED`` sources."""
    return faces.subset(np.isin(faces.sources, COMPARED))


def pooled(recall: dict, sources) -> float:
    """The recall of ``sources`` pooled by their face counts (per-source ``recall`` as
    :func:`facedetect.pipeline.crop_recall` gives it)."""
    faces = sum(recall[s]["faces"] for s in sources if s in recall)
    return round(sum(recall[s]["recall"] * recall[s]["faces"] for s in sources
                     if s in recall) / max(faces, 1), 4)
