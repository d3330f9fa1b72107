"""Pyramid levels: an image resized to each scale the detector scans.

A training face is area-averaged down to the window (``data/_face_windows.py``), so the
pictures it is compared with must be too: a bilinear resize reads only the four pixels
nearest each sample, and a picture shrunk by 3 keeps all its grain and halftone
(aliasing) where the faces the model learnt from had none. ``"area"`` levels are area
averages, cut from the nearest octave (the image halved by 2x2 means, once per image):
close to ``cv2.INTER_AREA`` from the image itself (each halving rounds to uint8), in a
third of the time, since an octave serves the seven levels it holds. ``"linear"`` is OpenCV's
``detectMultiScale`` resize, kept for models whose detection section predates this.
"""

from __future__ import annotations

import cv2
import numpy as np

from ..modelfile._fields import PYRAMIDS


class Pyramid:
    """Levels of one grey image, by ``method`` (``"area"`` or ``"linear"``).

    Parameters
    ----------
    grey : (h, w) uint8 array
    method : str
        ``"area"``: each level an area average of the octave at most twice its size;
        ``"linear"``: ``cv2.INTER_LINEAR`` from the image (OpenCV's rule).
    smallest : (width, height), optional
        The smallest level to be asked for: octaves are made down to it, before any level
        (levels may then be made side by side on threads).

    Examples
    --------
    >>> stripes = np.tile(np.array([0, 255], np.uint8), (64, 32))   # one-pixel stripes
    >>> level = Pyramid(stripes, "area", (21, 21)).level((21, 21))
    >>> int(level.min()), int(level.max())      # averaged away: no aliasing
    (128, 128)
    >>> aliased = Pyramid(stripes, "linear").level((21, 21))
    >>> int(aliased.max()) - int(aliased.min()) > 100
    True
    """

    def __init__(self, grey: np.ndarray, method: str = "area", smallest=None):
        if method not in PYRAMIDS:
            raise ValueError(f"pyramid must be one of {PYRAMIDS}, not {method!r}")
        self.grey = grey
        self.method = method
        self.octaves = [grey]
        if method == "area" and smallest is not None:
            while (self.octaves[-1].shape[1] >= 2 * smallest[0]
                   and self.octaves[-1].shape[0] >= 2 * smallest[1]):
                self.octaves.append(halved(self.octaves[-1]))

    def level(self, size) -> np.ndarray:
        """The image resized to ``size = (width, height)``."""
        height, width = self.grey.shape
        if tuple(size) == (width, height):
            return self.grey
        if self.method == "linear" or size[0] > width or size[1] > height:
            return cv2.resize(self.grey, tuple(size), interpolation=cv2.INTER_LINEAR)
        source = self.grey
        for octave in self.octaves[1:]:
            if octave.shape[1] < size[0] or octave.shape[0] < size[1]:
                break
            source = octave
        if source.shape[::-1] == tuple(size):
            return source
        return cv2.resize(source, tuple(size), interpolation=cv2.INTER_AREA)


def halved(grey: np.ndarray) -> np.ndarray:
    """``grey`` at half size: means of 2x2 blocks (an odd last row or column is averaged
    in by ``cv2.INTER_AREA``'s weights).

    Examples
    --------
    >>> halved(np.array([[0, 2, 4, 6], [2, 4, 6, 8]], np.uint8)).tolist()
    [[2, 6]]
    """
    height, width = grey.shape
    size = (max(1, (width + 1) // 2), max(1, (height + 1) // 2))
    return cv2.resize(grey, size, interpolation=cv2.INTER_AREA)
