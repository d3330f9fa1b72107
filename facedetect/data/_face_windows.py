"""Training windows cut from faces with eye positions (:func:`face_windows`).

The face is turned so that its eyes are level and framed as a CBCL window is: a square of
side ``FRAMING`` times the eye distance, centred on the eye midpoint across, with the eye
line ``EYE_LINE`` of its side below its top edge (:func:`window_transform`); a looser
framing keeps the window's centre where CBCL's is (:func:`eye_line_for`). A crop is
area-averaged down before the turn where the window is much smaller than it, as the
detector's pyramid levels are.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import cv2
import numpy as np

from ._cbcl import FRAMING

if TYPE_CHECKING:
    from ._wild_faces import WildFaces

# The CBCL framing, fitted to the CBCL mean face (the faces folder's PROVENANCE.md):
# window side / eye distance (FRAMING), eye line below the window's top / window side.
EYE_LINE = 0.28
# A looser framing keeps the window's centre where CBCL's is, this many eye distances
# below the eye midpoint (the faces folder's crops are centred there too).
CENTRE_BELOW_EYES = 0.385
# A window may reach past its crop by this fraction of its side (filled by reflecting the
# border, as CBCL's jittered copies are): Extended Yale B's crops are 1.70 eye distances
# wide, and a window turned by 8 degrees and enlarged by 6% needs about 2.1 of them. At
# 0.05, 982 of its 1,160 training faces were lost to the jitter; at 0.15, none.
OUTSIDE_TOLERANCE = 0.15


def eye_line_for(framing: float) -> float:
    """The eye line (below the window's top, a fraction of its side) of a window
    ``framing`` eye distances wide whose centre sits where CBCL's does.

    The window's centre stays ``CENTRE_BELOW_EYES`` eye distances below the eye midpoint,
    so the eye line is ``0.5 - CENTRE_BELOW_EYES / framing``. CBCL's own framing
    (``FRAMING``, 1.75) gives CBCL's eye line (``EYE_LINE``, 0.28).

    Parameters
    ----------
    framing : float
        The window's side in eye distances.

    Returns
    -------
    float
        The eye line's distance below the window's top, as a fraction of the window's side.

    See Also
    --------
    face_windows : cuts windows with this eye line (its ``eye_line`` argument).
    framed_windows : reframes CBCL's windows about the same centre.

    Examples
    --------
    >>> round(eye_line_for(FRAMING), 6) == EYE_LINE, round(eye_line_for(2.2), 3)
    (True, 0.325)
    """
    return 0.5 - CENTRE_BELOW_EYES / framing


def window_transform(eyes, window: tuple[int, int], jitter=(0.0, 1.0, 0.0, 0.0),
                     framing: float = FRAMING, eye_line: float = EYE_LINE) -> np.ndarray:
    """The 2x3 affine map from crop pixels to window pixels for one face.

    The eyes come out level and ``width / framing`` pixels apart (the window is
    ``framing`` eye distances wide), their midpoint centred across and ``eye_line`` of
    the height below the top. ``jitter`` is
    ``(angle in degrees, scale, dx, dy in window pixels)``: the face turned and scaled
    about its eye midpoint, then shifted. Pixel centres sit at whole coordinates.

    Examples
    --------
    >>> m = window_transform([10.0, 20.0, 30.0, 20.0], (19, 19))
    >>> np.round(m @ [20.0, 20.0, 1.0], 3).tolist()   # the eye midpoint
    [9.0, 4.82]
    >>> round(float(np.hypot(*(m[:, :2] @ [20.0, 0.0]))), 3)   # eye distance in the window
    10.857
    """
    lx, ly, rx, ry = (float(v) for v in eyes)
    width, height = window
    angle, scale, dx, dy = jitter
    distance = math.hypot(rx - lx, ry - ly)
    size = scale * width / (framing * distance)
    turn = math.atan2(ry - ly, rx - lx) + math.radians(angle)
    cos, sin = size * math.cos(turn), size * math.sin(turn)
    linear = np.array([[cos, sin], [-sin, cos]])   # rotates by -turn, scales by size
    middle = np.array([(lx + rx) / 2, (ly + ry) / 2])
    target = np.array([(width - 1) / 2 + dx, eye_line * height - 0.5 + dy])
    return np.column_stack([linear, target - linear @ middle])


def face_windows(faces: WildFaces, window: tuple[int, int],
                 jitter: np.ndarray | None = None, mirror: np.ndarray | None = None,
                 framing: float = FRAMING, eye_line: float = EYE_LINE
                 ) -> tuple[np.ndarray, np.ndarray]:
    """One window per face, cut from its eyes (:func:`window_transform`).

    Each face is turned so that its eyes are level, scaled so that the window is
    ``framing`` eye distances wide, and placed with its eye midpoint centred across and
    ``eye_line`` of the window's height below its top. Where one window pixel spans more
    than 1.5 crop pixels, the crop is area-averaged down first. The border beyond a crop
    is filled by reflection.

    Parameters
    ----------
    faces : WildFaces
        The crops and their eye positions (:func:`load_wild_faces`).
    window : (int, int)
        ``(width, height)`` of the windows, in pixels.
    jitter : (n, 4) float array, optional
        ``(angle in degrees, scale, dx, dy in window pixels)`` per face: the face is turned
        and scaled about its eye midpoint, then shifted. None (the default) is no jitter.
    mirror : (n,) bool array, optional
        True for the windows flipped left to right. None (the default) flips none.
    framing : float
        The window's width in eye distances (default ``FRAMING``, CBCL's).
    eye_line : float
        The eye line below the window's top, a fraction of its side (default
        ``EYE_LINE``, CBCL's); :func:`eye_line_for` gives it for another framing.

    Returns
    -------
    windows : (m, height, width) uint8 array
        The windows of the faces kept, in the faces' order.
    kept : (n,) bool array
        False for a face whose window reaches past its crop by more than
        ``OUTSIDE_TOLERANCE`` of the window's side (skipped).

    See Also
    --------
    eye_line_for : the eye line that keeps CBCL's window centre for another framing.
    load_wild_faces : reads the faces.
    framed_windows : CBCL's windows in another window size and framing.

    Examples
    --------
    >>> crop = np.tile(np.arange(40, dtype=np.uint8) * 5, (40, 1))
    >>> from facedetect.data._wild_faces import WildFaces
    >>> faces = WildFaces([crop], np.array([[12.0, 15.0, 28.0, 15.0]]), ["a"], ["a"], [""],
    ...                   "", "")
    >>> windows, kept = face_windows(faces, (19, 19))
    >>> windows.shape, kept.tolist(), int(windows[0, 9, 0]) < int(windows[0, 9, 18])
    ((1, 19, 19), [True], True)
    """
    width, height = window
    count = len(faces)
    jitter = np.tile([0.0, 1.0, 0.0, 0.0], (count, 1)) if jitter is None else jitter
    out = np.empty((count, height, width), np.uint8)
    kept = np.zeros(count, dtype=bool)
    for k in range(count):
        matrix = window_transform(faces.eyes[k], window, jitter[k], framing, eye_line)
        crop = faces.crops[k]
        shrink = 1.0 / math.sqrt(abs(np.linalg.det(matrix[:, :2])))
        if shrink > 1.5:    # area-average first: a straight warp would alias
            crop, matrix = _shrunk(crop, matrix, shrink)
        if not _inside(matrix, crop.shape, window):
            continue
        kept[k] = True
        out[k] = cv2.warpAffine(crop, matrix, (width, height), flags=cv2.INTER_LINEAR,
                                borderMode=cv2.BORDER_REFLECT_101)
        if mirror is not None and mirror[k]:
            out[k] = out[k, :, ::-1]
    return out[kept], kept


def _shrunk(crop: np.ndarray, matrix: np.ndarray, shrink: float):
    """The crop area-averaged by about ``shrink`` and the map adjusted to it."""
    factor = shrink    # the warp is then near 1:1 (exactly INTER_AREA for a level face)
    height, width = crop.shape
    size = (max(1, round(width / factor)), max(1, round(height / factor)))
    small = cv2.resize(crop, size, interpolation=cv2.INTER_AREA)
    fx, fy = width / size[0], height / size[1]
    # small pixel (u, v) sits at crop ((u + .5) fx - .5, (v + .5) fy - .5)
    to_crop = np.array([[fx, 0.0, 0.5 * fx - 0.5], [0.0, fy, 0.5 * fy - 0.5], [0, 0, 1]])
    return small, (np.vstack([matrix, [0, 0, 1]]) @ to_crop)[:2]


def _inside(matrix: np.ndarray, shape, window) -> bool:
    """Whether the window's corners map into the crop, within the tolerance."""
    width, height = window
    inverse = cv2.invertAffineTransform(matrix)
    corners = np.array([[-0.5, -0.5, 1], [width - 0.5, -0.5, 1], [-0.5, height - 0.5, 1],
                        [width - 0.5, height - 0.5, 1]]) @ inverse.T
    margin = OUTSIDE_TOLERANCE * max(width, height) / math.sqrt(
        abs(np.linalg.det(matrix[:, :2])))
    return bool((corners[:, 0] >= -0.5 - margin).all()
                and (corners[:, 0] <= shape[1] - 0.5 + margin).all()
                and (corners[:, 1] >= -0.5 - margin).all()
                and (corners[:, 1] <= shape[0] - 0.5 + margin).all())
