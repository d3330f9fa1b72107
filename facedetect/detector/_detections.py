"""What a detection returns: face boxes from detector windows (:func:`window_to_box`, by a
model's box mapping), and :class:`Detections`, one :class:`Face` per face.

The window-to-box mapping: a 19x19 CBCL window covers the face from the brows to the
mouth. The reported face box has the window's centre moved down by ``BOX_SHIFT`` window
heights and its side multiplied by ``BOX_SCALE``. Both constants were chosen once on the
MIT+CMU development images (``facedetect evaluate-images --calibrate``) and are frozen;
a model's detection section may carry its own (:func:`box_mapping`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..modelfile._detection import BOX_SCALE, BOX_SHIFT

if TYPE_CHECKING:
    from ._model import HaarDetectorModel


@dataclass
class Detections:
    """What :func:`detect_faces` (and ``facedetect.detect``) found in one image.

    Attributes
    ----------
    boxes : (n, 4) float array
        ``x, y, w, h`` of each face box, in image pixels.
    scores : (n,) array
        The best window score of each face's group.
    neighbors : (n,) int array
        The windows in each group.
    windows : (n, 4) int array
        The grouped detector windows (a face box is its window widened).
    raw_count : int
        Windows above the threshold before grouping.
    scanned : int
        Windows scanned.
    seconds : float
        Time taken.

    See Also
    --------
    facedetect.detect : what returns them.
    facedetect.detector.Face : one record per face.

    Examples
    --------
    >>> from skimage import data
    >>> import facedetect
    >>> found = facedetect.detect(data.astronaut())
    >>> found.boxes.shape[1], len(found.scores) == len(found.neighbors) == len(found)
    (4, True)
    >>> best = max(found, key=lambda face: face.score)   # one record per face
    >>> [int(v) for v in best.box]
    [157, 56, 135, 135]
    """

    boxes: np.ndarray      # (n, 4) float: x, y, w, h of face boxes in image pixels
    scores: np.ndarray     # best window score of each group
    neighbors: np.ndarray  # windows in each group
    windows: np.ndarray    # (n, 4) int: the grouped detector windows
    raw_count: int         # windows above threshold before grouping
    scanned: int           # windows scanned
    seconds: float

    def __len__(self) -> int:
        """The faces found."""
        return len(self.boxes)

    def __iter__(self):
        """One :class:`Face` per face found, in the order of ``boxes``."""
        for box, score, count in zip(self.boxes, self.scores, self.neighbors):
            yield Face(tuple(float(v) for v in box), float(score), int(count))


class Face(NamedTuple):
    """One face of :class:`Detections`.

    Attributes
    ----------
    box : (x, y, w, h) floats
        The face box in image pixels.
    score : float
        The best window score of its group.
    neighbors : int
        The windows in its group.

    See Also
    --------
    Detections : iterating it yields these.

    Examples
    --------
    >>> face = Face((10.0, 20.0, 30.0, 30.0), 4.5, 7)
    >>> x, y, w, h = face.box
    >>> face.score, w
    (4.5, 30.0)
    """

    box: tuple[float, float, float, float]
    score: float
    neighbors: int


def box_mapping(model: HaarDetectorModel) -> tuple[float, float]:
    """``(scale, shift)`` from a model's windows to its object boxes (its detection
    section's: see :func:`facedetect.modelfile._detection.framing_box`).

    Parameters
    ----------
    model : HaarDetectorModel
        Or any object: where it has no ``detection`` section, or the section no
        ``box_scale`` or ``box_shift``, ``BOX_SCALE`` or ``BOX_SHIFT`` stands in.

    Returns
    -------
    scale : float
        The box's side over the window's.
    shift : float
        How far the box's centre lies below the window's, in window heights.

    See Also
    --------
    window_to_box : the mapping applied to windows.

    Examples
    --------
    >>> import facedetect
    >>> scale, shift = box_mapping(facedetect.load_model("default"))
    >>> scale == facedetect.load_model("default").detection["box_scale"]
    True
    >>> box_mapping(None) == (BOX_SCALE, BOX_SHIFT)   # no detection section
    True
    """
    detection = getattr(model, "detection", None) or {}
    return (float(detection.get("box_scale", BOX_SCALE)),
            float(detection.get("box_shift", BOX_SHIFT)))


def window_to_box(windows: np.ndarray, scale: float = BOX_SCALE,
                  shift: float = BOX_SHIFT) -> np.ndarray:
    """Face boxes ``(x, y, w, h)`` for detector windows ``(x, y, w, h)``.

    Parameters
    ----------
    windows : (n, 4) array_like
        Detector windows ``x, y, w, h`` in image pixels.
    scale : float
        The box's side over the window's (a model's own: :func:`box_mapping`).
    shift : float
        How far the box's centre lies below the window's, in window heights.

    Returns
    -------
    (n, 4) float64 array
        The boxes, each centred ``shift`` window heights below its window's centre.

    See Also
    --------
    box_mapping : a model's ``scale`` and ``shift``.
    Detections : where ``detect`` returns the boxes.

    Examples
    --------
    >>> window_to_box([[100, 100, 20, 20]])   # twice the side, centre 2 px lower
    array([[90., 92., 40., 40.]])
    """
    windows = np.asarray(windows, dtype=np.float64).reshape(-1, 4)
    cx = windows[:, 0] + windows[:, 2] / 2
    cy = windows[:, 1] + windows[:, 3] / 2 + shift * windows[:, 3]
    w = windows[:, 2] * scale
    h = windows[:, 3] * scale
    return np.column_stack([cx - w / 2, cy - h / 2, w, h])
