"""Hard-negative bootstrapping: scan face-free pictures, keep the false alarms, retrain.

A mono-stage detector trained only on the 4,548 CBCL non-faces fires on texture; every
window it accepts on a face-free picture is a false positive that makes a good negative.
"""

from __future__ import annotations

import numpy as np

from ..detector.detect import DetectionParams, positive_windows
from ..detector.images import expand_inputs, read_grey
from ..detector.scan import LevelScanner
from ..errors import FacedetectError

# Pictures that ship with scikit-image (no download) and show no human face.
SKIMAGE_NEGATIVES = ("coffee", "chelsea", "brick", "grass", "gravel", "rocket", "moon",
                     "coins", "text", "page", "hubble_deep_field", "cell", "clock",
                     "immunohistochemistry", "retina", "stereo_motorcycle")
# Coarser than detection: bootstrapping needs many false positives, not every one.
BOOTSTRAP_SCAN = DetectionParams(scale_factor=1.25, step=2, min_size=19)


def load_negative_images(folder=None) -> tuple[list[np.ndarray], list[str]]:
    """Grey face-free images from ``folder``, or scikit-image's bundled pictures."""
    if folder is None:
        from skimage import data
        from PIL import Image
        from ..detector.images import to_grey
        # stereo_motorcycle is a (left, right, disparity) triple: its left view is the photo.
        pictures = [getattr(data, name)() for name in SKIMAGE_NEGATIVES]
        images = [to_grey(Image.fromarray(p[0] if isinstance(p, tuple) else p))
                  for p in pictures]
        return images, [f"skimage.data.{name}" for name in SKIMAGE_NEGATIVES]
    files = expand_inputs([folder])
    if not files:
        raise FacedetectError(f"--negatives {folder}: no images found")
    return [read_grey(path) for path in files], [str(path) for path in files]


def dihedral_variants(image: np.ndarray) -> list[np.ndarray]:
    """The eight rotations and mirror images of a picture. A face-free picture stays
    face-free turned or mirrored, and its textures then meet the detector's features at
    new orientations: eight times the hard-negative material from the same pictures."""
    turns = [np.ascontiguousarray(np.rot90(image, k)) for k in range(4)]
    return turns + [np.ascontiguousarray(turn[:, ::-1]) for turn in turns]


def hard_negatives(model, images, limit: int, seed: int, threshold: float = 0.0,
                   params: DetectionParams = BOOTSTRAP_SCAN) -> np.ndarray:
    """Up to ``limit`` windows of the face-free ``images`` scoring above ``threshold``,
    drawn with ``seed``."""
    scanner = LevelScanner(model, threshold)
    found = [positive_windows(variant, scanner, params)
             for image in images for variant in dihedral_variants(image)]
    windows = np.concatenate(found) if found else np.empty((0, *model.window[::-1]), np.uint8)
    if len(windows) > limit:
        keep = np.sort(np.random.default_rng(seed).choice(len(windows), limit, replace=False))
        windows = windows[keep]
    return windows
