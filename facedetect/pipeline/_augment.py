"""Jittered copies of the training faces: small rotations, scalings and shifts.

Faces in photographs are rarely aligned as exactly as the CBCL crops: heads tilt, and the
scanner meets a face only at the pyramid's scales and the grid's positions. Training on
faces turned by a few degrees, resized by a few percent and moved by a pixel or so
teaches the detector to accept them (Rowley, Baluja and Kanade trained on such variants).
"""

from __future__ import annotations

import cv2
import numpy as np

from ..data._cbcl import FRAMING
from ..data._face_windows import eye_line_for, face_windows
from ._jitter import CBCL_JITTER_SHIFT, MAX_ANGLE, MAX_SCALE

# The shift's default, in window pixels either way along each axis: CBCL's recipe (the
# recipe for OpenCV's format moves its faces further: TrainConfig.jitter_shift).
MAX_SHIFT = CBCL_JITTER_SHIFT
# The jitter draws from its own stream, apart from the split's (which uses the seed itself).
SEED_OFFSET = 12345
WILD_SEED_OFFSET = 54321
GRAIN_STREAM = 2   # the grain's own stream beside the wild faces' jitter (seed, GRAIN_STREAM)
NEGATIVE_GRAIN_STREAM = 3   # mined negatives' grain: (seed, NEGATIVE_GRAIN_STREAM, stage)
POSTERIZE_STREAM = 4   # which windows are posterised, and how: its own stream (see grain)
# A posterised window keeps this many grey levels, drawn uniformly (a cheap print or a
# palette image). Down to 2 (a binarised scan) cost 0.04 more of the clean held-out crops
# and found fewer of the posterised ones (docs/detector-training.md).
POSTERIZE_LEVELS = (4, 8)


def jitter_transforms(count: int, rng: np.random.Generator,
                      max_shift: float = MAX_SHIFT) -> np.ndarray:
    """``(count, 4)`` random transforms: angle in degrees, scale, x shift, y shift (each
    shift uniform within ``max_shift`` pixels either way).

    Examples
    --------
    >>> t = jitter_transforms(1000, np.random.default_rng(0), max_shift=1.5)
    >>> t.shape, bool(np.abs(t[:, 2:]).max() <= 1.5), bool(np.abs(t[:, 2:]).max() > 1.4)
    ((1000, 4), True, True)
    """
    # The same seed draws the same numbers whatever max_shift is: every face is moved
    # the same way, only further.
    return np.column_stack([rng.uniform(-MAX_ANGLE, MAX_ANGLE, count),
                            1.0 + rng.uniform(-MAX_SCALE, MAX_SCALE, count),
                            rng.uniform(-max_shift, max_shift, count),
                            rng.uniform(-max_shift, max_shift, count)])


def jittered_faces(faces: np.ndarray, copies: int, seed: int,
                   max_shift: float = MAX_SHIFT) -> np.ndarray:
    """``copies`` randomly turned, scaled and shifted variants of every face.

    Parameters
    ----------
    faces : (n, h, w) uint8 array
    copies : variants per face
    seed : the run's seed; the same seed gives the same variants
    max_shift : the largest shift either way along each axis, in pixels

    Returns
    -------
    (n * copies, h, w) uint8 array, the variants of face 0 first.
    """
    faces = np.asarray(faces, dtype=np.uint8)
    n, height, width = faces.shape
    if copies <= 0 or n == 0:
        return np.empty((0, height, width), np.uint8)
    transforms = jitter_transforms(n * copies, np.random.default_rng(SEED_OFFSET + seed),
                                   max_shift)
    centre = ((width - 1) / 2.0, (height - 1) / 2.0)
    out = np.empty((n * copies, height, width), np.uint8)
    for k, (angle, scale, dx, dy) in enumerate(transforms):
        matrix = cv2.getRotationMatrix2D(centre, angle, scale)
        matrix[:, 2] += (dx, dy)
        # Reflected borders: the corners a turn uncovers get nearby texture, not black.
        out[k] = cv2.warpAffine(faces[k // copies], matrix, (width, height),
                                flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT_101)
    return out


def grained(windows: np.ndarray, max_sd: float, rng: np.random.Generator) -> np.ndarray:
    """``windows`` with Gaussian grain, each its own sd drawn uniformly in [0, max_sd]
    grey levels: faces as a grainy scan or a high-ISO photograph shows them at the
    window's size, where the pyramid's averaging has not removed the grain.

    Examples
    --------
    >>> flat = np.full((4, 19, 19), 128, np.uint8)
    >>> noisy = grained(flat, 20.0, np.random.default_rng(0))
    >>> noisy.shape, noisy.dtype, bool((noisy != 128).any()), bool(noisy.std() < 20)
    ((4, 19, 19), dtype('uint8'), True, True)
    """
    if max_sd <= 0 or len(windows) == 0:
        return windows
    sd = rng.uniform(0.0, max_sd, len(windows))[:, None, None]
    noise = rng.standard_normal(windows.shape) * sd
    return np.clip(np.rint(windows + noise), 0, 255).astype(np.uint8)


def posterized(windows: np.ndarray, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """``windows`` with a random ``fraction`` of them reduced to a few grey levels, as a
    photocopy, a cheap print or a palette image shows a face (:func:`posterize_window`,
    the levels drawn in :data:`POSTERIZE_LEVELS`, the bins at a random offset).
    Gradients become flat patches with hard edges, which is what defeats features that
    learnt smooth shading.

    Examples
    --------
    >>> ramp = np.tile(np.arange(0, 247, 13, dtype=np.uint8), (3, 19, 1))
    >>> out = posterized(ramp, 1.0, np.random.default_rng(0))
    >>> out.shape, out.dtype, [len(np.unique(w)) <= 9 for w in out]
    ((3, 19, 19), dtype('uint8'), [True, True, True])
    >>> bool((posterized(ramp, 0.0, np.random.default_rng(0)) == ramp).all())
    True
    """
    if fraction <= 0 or len(windows) == 0:
        return windows
    # Every draw is made for every window, so which windows change does not shift the
    # stream: the same seed gives the same windows whatever the fraction.
    chosen = rng.random(len(windows)) < fraction
    levels = rng.integers(POSTERIZE_LEVELS[0], POSTERIZE_LEVELS[1] + 1, len(windows))
    offsets = rng.random(len(windows))
    out = windows.copy()
    for k in np.flatnonzero(chosen):
        out[k] = posterize_window(windows[k], int(levels[k]), float(offsets[k]))
    return out


def posterize_window(window: np.ndarray, levels: int, offset: float) -> np.ndarray:
    """``window`` in ``levels`` grey levels: 0..255 cut into bins of ``256 / levels``,
    moved by ``offset`` (a fraction of a bin), each pixel set to its bin's middle (with
    an offset, the bins cut at either end make ``levels + 1`` at most).

    Parameters
    ----------
    window : array of grey levels
        A window or a whole picture, of any shape (0..255).
    levels : int
        The number of bins across 0..255.
    offset : float
        How far the bins are moved down, as a fraction of a bin (in [0, 1)).

    Returns
    -------
    uint8 array
        The posterised grey levels, in the shape of ``window``. A bin's middle beyond
        0..255 (the cut bins at either end) is clipped to 0 or 255.

    See Also
    --------
    posterized : posterises a random fraction of the training windows with this.
    grained : the other degradation of the training windows.

    Examples
    --------
    >>> posterize_window(np.array([0, 127, 128, 255], np.uint8), 2, 0.0)
    array([ 64,  64, 192, 192], dtype=uint8)

    Half a bin's offset: the bins are cut at 64 and 192, three grey levels remain.

    >>> posterize_window(np.array([0, 63, 64, 191, 192, 255], np.uint8), 2, 0.5)
    array([  0,   0, 128, 128, 255, 255], dtype=uint8)
    """
    width = 256.0 / levels
    shift = offset * width
    bins = np.floor((window + shift) / width)
    return np.clip(np.rint(bins * width - shift + width / 2), 0, 255).astype(np.uint8)


def degraded(windows: np.ndarray, grain: float, posterize: float, seed: int,
             stream) -> np.ndarray:
    """``windows`` grained (:func:`grained`), then posterised (:func:`posterized`): grain
    before the levels, as a scan's noise comes before its quantisation. ``stream``
    names the caller's draws beside ``seed`` (faces and each mining stage their own)."""
    stream = list(np.atleast_1d(stream))
    windows = grained(windows, grain, np.random.default_rng([seed, *stream]))
    return posterized(windows, posterize,
                      np.random.default_rng([seed, POSTERIZE_STREAM, *stream]))


def wild_training_windows(faces, window, mirror: bool, jitter: int, seed: int,
                          grain: float = 0.0, posterize: float = 0.0,
                          framing: float = FRAMING, max_shift: float = MAX_SHIFT):
    """One training window per face with landmarks (:mod:`facedetect.data._wild_faces`):
    turned to level eyes and framed from them, then, with ``jitter`` > 0, turned, scaled
    and shifted at random as :func:`jitter_transforms` draws, with ``mirror`` flipped
    left to right at random (half of them), and with ``grain`` > 0 :func:`grained` up to
    that sd, and ``posterize`` > 0 :func:`posterized` in that fraction. One view per
    face: 24,000 faces already vary more than eight views of one face do, and every view
    costs boosting time. ``framing``: the window's width in eye distances;
    ``max_shift``: the jitter's largest shift in window pixels.

    Returns
    -------
    windows : (m, h, w) uint8 array
    kept : (n,) bool array, False for the faces whose window left their crop (skipped)
    """
    rng = np.random.default_rng(WILD_SEED_OFFSET + seed)
    transforms = jitter_transforms(len(faces), rng, max_shift) if jitter else None
    flips = rng.random(len(faces)) < 0.5 if mirror else None
    windows, kept = face_windows(faces, window, transforms, flips, framing,
                                 eye_line_for(framing))
    return degraded(windows, grain, posterize, WILD_SEED_OFFSET + seed, GRAIN_STREAM), kept


def degraded_negatives(windows: np.ndarray, grain: float, posterize: float, seed: int,
                       stage: int) -> np.ndarray:
    """Mined negatives with the same grain and levels as the faces (:func:`degraded`), so
    that neither tells a face from a non-face: grained faces beside clean negatives taught
    an earlier model that grain is a face."""
    return degraded(windows, grain, posterize, WILD_SEED_OFFSET + seed,
                    (NEGATIVE_GRAIN_STREAM, stage))
