"""Hard-negative bootstrapping: scan face-free pictures, keep the false alarms, retrain.

A mono-stage detector trained only on the 4,548 CBCL non-faces fires on texture; every
window it accepts on a face-free picture is a false positive that makes a good negative.

Mining visits the pictures in a seeded order and stops once ``limit`` windows are found,
taking at most ``limit / PICTURE_SHARE`` from any one picture so that no single texture
fills the quota. Its progress (the next picture, the windows so far) is a
:class:`MiningState`, which a checkpoint stores, so an interrupted scan resumes where it
stopped and finds the same windows.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np

from .._utils.progress import progress_bar
from ..detector._multiscale import DetectionParams, positive_windows
from ..detector._scan import LevelScanner
from ..errors import FacedetectError
from ..images import read_picture

# Pictures that ship with scikit-image (no download) and show no human face.
SKIMAGE_NEGATIVES = ("coffee", "chelsea", "brick", "grass", "gravel", "rocket", "moon",
                     "coins", "text", "page", "hubble_deep_field", "cell", "clock",
                     "immunohistochemistry", "retina", "stereo_motorcycle")
# Coarser than detection: bootstrapping needs many false positives, not every one.
BOOTSTRAP_SCAN = DetectionParams(scale_factor=1.25, step=2, min_size=19)
# The levels a one-stage run mines, as its detection section will scan them (a cascade
# mines bilinear levels: cascade.py).
MINING_PYRAMID = "area"
# No picture gives more than 1/PICTURE_SHARE of a stage's hard negatives.
PICTURE_SHARE = 50
# Below this many pictures each is also scanned turned and mirrored (8 orientations).
FEW_PICTURES = 64


def skimage_negatives() -> tuple[list[np.ndarray], list[str]]:
    """scikit-image's bundled face-free pictures, grey: the fallback negative set.

    The pictures are those named in ``SKIMAGE_NEGATIVES``, in that order. They ship with
    scikit-image, so nothing is downloaded. Colour pictures are turned grey; of
    ``stereo_motorcycle`` (a left view, a right view and a disparity map) the left view
    is kept.

    Returns
    -------
    images : list of (h, w) uint8 arrays
        The grey pictures.
    names : list of str
        ``"skimage.data.NAME"`` for each picture, in the same order.

    See Also
    --------
    NegativeSet.find : falls back to these pictures when no negatives folder is found.
    random_windows : windows of face-free pictures at random places.

    Examples
    --------
    >>> images, names = skimage_negatives()
    >>> len(images), names[0], images[0].shape, images[0].dtype
    (16, 'skimage.data.coffee', (400, 600), dtype('uint8'))
    """
    from PIL import Image
    from skimage import data

    from ..images import to_grey
    # stereo_motorcycle is a (left, right, disparity) triple: its left view is the photo.
    pictures = [getattr(data, name)() for name in SKIMAGE_NEGATIVES]
    images = [to_grey(Image.fromarray(p[0] if isinstance(p, tuple) else p))
              for p in pictures]
    return images, [f"skimage.data.{name}" for name in SKIMAGE_NEGATIVES]


@dataclass
class NegativeSet:
    """Face-free pictures: the part to mine (paths or grey arrays) and the calibration part
    (paths) that sets the operating points; ``fingerprint`` identifies the folder's
    content. The folder's held-out fifth, which measures false alarms, is in neither.

    Attributes
    ----------
    mining : list of pathlib.Path or of (h, w) uint8 arrays
        The pictures hard negatives are mined from: paths for a folder, grey arrays for
        scikit-image's pictures.
    calibration : list of pathlib.Path
        The pictures that set the image operating point
        (:func:`facedetect.detector._calibrate.calibrate`); empty for scikit-image's
        pictures.
    source : str
        Where the pictures come from: the folder, or ``"scikit-image"``.
    fingerprint : str
        For a folder, the SHA-256 of its pictures' names and sizes; for scikit-image's
        pictures, ``"skimage:"`` and their names. A resumed run refuses a folder whose
        fingerprint changed.

    See Also
    --------
    facedetect.data.find_negatives : where :meth:`find` looks for the folder.
    facedetect.data.split_negatives : the held-out fifth, in neither part.
    facedetect.data.split_training_negatives : the mining and calibration parts.
    skimage_negatives : the pictures used when no folder is found.

    Examples
    --------
    >>> import tempfile
    >>> from PIL import Image
    >>> folder = Path(tempfile.mkdtemp())
    >>> for k in range(10):
    ...     Image.fromarray(np.zeros((30, 30), np.uint8)).save(folder / f"p{k}.png")
    >>> negatives = NegativeSet.find(folder)
    >>> len(negatives.mining), len(negatives.calibration), negatives.source == str(folder)
    (5, 2, True)
    """

    mining: list
    calibration: list
    source: str
    fingerprint: str

    @classmethod
    def find(cls, folder: str | Path | None = None,
             warn: Callable[[str], None] | None = None) -> NegativeSet:
        """The negatives folder found the way data is found (see
        :mod:`facedetect.data._negatives`), or scikit-image's pictures with a warning
        (one line to ``warn``, default print).

        Raises
        ------
        FacedetectError
            When the folder has no pictures, or none in the mining part.
        """
        from ..data._negatives import (find_negatives, fingerprint, negative_files,
                                      split_negatives, split_training_negatives)
        found = find_negatives(folder)
        if found is None:
            (warn or print)("warning: no negatives folder found; bootstrapping from "
                            "scikit-image's 16 pictures. Put face-free pictures in "
                            "./data/negatives (or pass --negatives DIR, or set "
                            "FACEDETECT_NEGATIVES) for a detector that works on photographs")
            images, names = skimage_negatives()
            return cls(images, [], "scikit-image", "skimage:" + ",".join(names))
        files = negative_files(found)
        if not files:
            raise FacedetectError(f"{found}: no pictures in the negatives folder")
        training, _ = split_negatives(files)
        mining, calibration = split_training_negatives(training)
        if not mining:
            raise FacedetectError(f"{found}: none of its {len(files)} pictures falls in the "
                                  "mining part (a fifth is held out, a fifth of the rest "
                                  "calibrates); add pictures")
        return cls(mining, calibration, str(found), fingerprint(files))


def dihedral_variants(image: np.ndarray) -> list[np.ndarray]:
    """The eight rotations and mirror images of a picture. A face-free picture stays
    face-free turned or mirrored, and its textures then meet the detector's features at
    new orientations: eight times the hard-negative material from the same pictures."""
    turns = [np.ascontiguousarray(np.rot90(image, k)) for k in range(4)]
    return turns + [np.ascontiguousarray(turn[:, ::-1]) for turn in turns]


@dataclass
class MiningState:
    """How far one stage's mining got: resumable."""

    position: int = 0                    # pictures visited, in the seeded order
    windows: list = field(default_factory=list)   # (n, h, w) uint8 arrays found so far
    skipped: list = field(default_factory=list)   # unreadable pictures, by name
    scanned: int = 0    # windows scanned in the pictures visited
    accepted: int = 0   # of them, those the model accepts (before a picture's share is drawn)

    @property
    def count(self) -> int:
        return int(sum(len(w) for w in self.windows))


def hard_negatives(model, pictures, limit: int, seed: int, threshold: float = 0.0, *,
                   state: MiningState | None = None, progress: bool = False,
                   warn=None, pyramid: str = MINING_PYRAMID) -> np.ndarray:
    """Up to ``limit`` windows of the face-free ``pictures`` (grey arrays or image paths)
    that score above ``threshold``, found in the seeded visiting order.

    ``state`` continues an interrupted mining run (:func:`mining_steps` yields it after
    each picture, for checkpoints). Unreadable files are skipped with one line each to
    ``warn``; if no picture at all can be read that is an error.
    """
    state = state if state is not None else MiningState()
    for _ in mining_steps(model, pictures, limit, seed, threshold, state=state,
                          progress=progress, warn=warn, pyramid=pyramid):
        pass
    return mined_windows(model, state)


def mining_steps(model, pictures, limit: int, seed: int, threshold: float = 0.0, *,
                 state: MiningState, progress: bool = False, warn=None,
                 pyramid: str = MINING_PYRAMID):
    """:func:`hard_negatives` one picture at a time: yields ``state`` after each.
    ``pyramid``: how levels are resized, as the model will scan (:mod:`.detector.pyramid`;
    a cascade scans as OpenCV does, ``"linear"``)."""
    warn = warn or (lambda line: print(line, file=sys.stderr))
    order = np.random.default_rng(seed).permutation(len(pictures))
    per_picture = max(1, limit // PICTURE_SHARE) if len(pictures) >= FEW_PICTURES else limit
    # Training has the machine to itself: every scan call in parallel (on the cores other
    # processes leave free: _scan_levels).
    scanner = LevelScanner(model, threshold, parallel_min_windows=0)
    scan = replace(BOOTSTRAP_SCAN, min_size=max(BOOTSTRAP_SCAN.min_size, *model.window),
                   pyramid=pyramid)
    rng_seed = [seed, 0]
    bar = progress_bar(total=limit, initial=min(state.count, limit), desc="mining", unit="window",
               disable=not progress, leave=False)
    try:
        while state.position < len(order) and state.count < limit:
            index = int(order[state.position])
            picture = read_picture(pictures[index], warn)
            if picture is None:
                state.skipped.append(str(pictures[index]))
            else:
                variants = (dihedral_variants(picture) if len(pictures) < FEW_PICTURES
                            else [picture])
                found = [positive_windows(v, scanner, scan) for v in variants]
                state.scanned += sum(scanned for _, scanned in found)
                found = np.concatenate([windows for windows, _ in found])
                state.accepted += len(found)
                if len(found) > per_picture:  # a draw of its own per picture: resumable
                    rng = np.random.default_rng(rng_seed + [state.position])
                    found = found[np.sort(rng.choice(len(found), per_picture, replace=False))]
                found = found[:limit - state.count]
                if len(found):
                    state.windows.append(found)
                    bar.update(len(found))
            state.position += 1
            yield state
    finally:
        bar.close()
    if len(state.skipped) == len(order) and len(order):
        raise FacedetectError(f"none of the {len(order)} negative pictures could be read")


def mined_windows(model, state: MiningState) -> np.ndarray:
    """The windows a finished mining run collected."""
    if not state.windows:
        return np.empty((0, *model.window[::-1]), np.uint8)
    return np.concatenate(state.windows)


def random_windows(pictures: list, count: int, seed: int,
                   window: tuple[int, int] = (19, 19),
                   warn: Callable[[str], None] | None = None,
                   pyramid: str = "area") -> np.ndarray:
    """``count`` windows at random places and pyramid levels (resized by ``pyramid``) of
    the ``pictures`` (grey arrays or paths), at most ``count / PICTURE_SHARE`` from one
    picture: the first negatives of a cascade, before there is a detector to mine with.

    The pictures are visited in a seeded order. The ``count / PICTURE_SHARE`` cap holds
    only when there are at least ``PICTURE_SHARE`` pictures; with fewer, one picture may
    give every window. The levels are those a bootstrap scan visits (``BOOTSTRAP_SCAN``).

    Parameters
    ----------
    pictures : list of (h, w) uint8 arrays or of paths
        Face-free pictures. A path that cannot be read is skipped with one line to
        ``warn``.
    count : int
        The number of windows wanted.
    seed : int
        The same seed gives the same windows.
    window : (int, int)
        The window's ``(width, height)``.
    warn : callable, optional
        Takes warning lines (default: stderr).
    pyramid : str
        How levels are resized (:mod:`facedetect.detector._pyramid`).

    Returns
    -------
    (m, height, width) uint8 array
        The windows, ``m <= count``. There are fewer when the pictures cannot give
        ``count``: too few of them under the cap, too small (a picture smaller than the
        window gives none) or unreadable.

    See Also
    --------
    NegativeSet : the mining part of a negatives folder, the usual ``pictures``.
    skimage_negatives : face-free pictures that need no folder.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> pictures = [rng.integers(0, 256, (60, 80), dtype=np.uint8) for _ in range(3)]
    >>> random_windows(pictures, 10, seed=0).shape
    (10, 19, 19)
    >>> random_windows(pictures, 5, seed=0, window=(24, 20)).shape
    (5, 20, 24)
    >>> random_windows([np.zeros((10, 10), np.uint8)], 5, seed=0).shape
    (0, 19, 19)
    """
    from ..detector._multiscale import pyramid_scales
    from ..detector._pyramid import Pyramid

    warn = warn or (lambda line: print(line, file=sys.stderr))
    win_w, win_h = window
    rng = np.random.default_rng([seed, 1])
    per_picture = max(1, count // PICTURE_SHARE) if len(pictures) >= PICTURE_SHARE else count
    found, total = [], 0
    for index in rng.permutation(len(pictures)):
        picture = read_picture(pictures[int(index)], warn)
        if picture is None:
            continue
        height, width = picture.shape
        scan = replace(BOOTSTRAP_SCAN, min_size=max(BOOTSTRAP_SCAN.min_size, win_w, win_h),
                       pyramid=pyramid)
        scales = pyramid_scales(width, height, (win_w, win_h), scan)
        levels = {}   # each level resized once, however many windows it gives
        resized = Pyramid(picture, scan.pyramid)
        for _ in range(min(per_picture, count - total) if scales else 0):
            scale = scales[rng.integers(len(scales))]
            if scale not in levels:
                size = (max(win_w, int(round(width / scale))),
                        max(win_h, int(round(height / scale))))
                levels[scale] = resized.level(size)
            level = levels[scale]
            y = rng.integers(level.shape[0] - win_h + 1)
            x = rng.integers(level.shape[1] - win_w + 1)
            found.append(level[y:y + win_h, x:x + win_w])
            total += 1
        if total >= count:
            break
    if not found:
        return np.empty((0, win_h, win_w), np.uint8)
    return np.stack(found)
