"""Faces from the wild in a training run: the held-out part, the training windows, the
record a model keeps of them.

A fixed part of the faces (:func:`facedetect.data._wild_faces.heldout_mask`, by subject
where known) is never trained on: it measures recall and, beside the held-out CBCL faces,
bounds the image operating point. Every other face gives one training window
(:func:`._augment.wild_training_windows`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, NamedTuple

import numpy as np

from ..data._cbcl import FRAMING
from ..data._face_windows import eye_line_for, face_windows
from ..data._wild_faces import (CALIBRATION_FRACTION, HELDOUT_FRACTION, WildFaces,
                               calibration_mask, heldout_mask)
from ..detector._api import Detector
from ..detector._multiscale import params_for
from ..errors import FacedetectError
from ._augment import MAX_SHIFT, wild_training_windows

if TYPE_CHECKING:
    from ..detector._model import HaarDetectorModel


class _WildSplit(NamedTuple):
    """The training windows, the held-out faces' windows, the calibration faces' windows
    (empty unless asked for) and the model's record of them."""

    train: np.ndarray
    heldout: np.ndarray
    record: dict
    calibration: np.ndarray


def split_wild_faces(faces: WildFaces, window, mirror: bool, jitter: int,
                     seed: int, grain: float = 0.0, posterize: float = 0.0,
                     framing: float = FRAMING, calibrate: bool = False,
                     max_shift: float = MAX_SHIFT) -> _WildSplit:
    """Training windows of the faces outside the held-out part (``grain`` and
    ``posterize``: see :func:`._augment.degraded`), and the held-out faces' plain windows
    (level eyes, no jitter, no mirror, no grain, all grey levels), each window
    ``framing`` eye distances wide. With ``calibrate``, the faces of
    :func:`~facedetect.data._wild_faces.calibration_mask` are not trained on: their plain
    windows calibrate the window operating point. ``max_shift``: the jitter's largest
    shift, in window pixels.

    Examples
    --------
    >>> from facedetect.data._wild_faces import WildFaces
    >>> crops = [np.full((40, 40), k, np.uint8) for k in range(50)]
    >>> eyes = np.tile([12.0, 15.0, 28.0, 15.0], (50, 1))
    >>> names = [f"face{k}" for k in range(50)]
    >>> faces = WildFaces(crops, eyes, names, names, [""] * 50, "f", "0" * 64)
    >>> split = split_wild_faces(faces, (19, 19), mirror=True, jitter=1, seed=0)
    >>> len(split.train), split.record["heldout_faces"]
    (46, 4)
    """
    held = heldout_mask(faces.groups)
    calibrating = calibration_mask(faces.groups) if calibrate else np.zeros_like(held)
    train_windows, kept = wild_training_windows(faces.subset(~held & ~calibrating), window,
                                                mirror, jitter, seed, grain, posterize,
                                                framing, max_shift)
    held_windows, held_kept = face_windows(faces.subset(held), window, framing=framing,
                                           eye_line=eye_line_for(framing))
    calibration_windows, calibration_kept = face_windows(
        faces.subset(calibrating), window, framing=framing, eye_line=eye_line_for(framing))
    record = {"source": faces.source, "sha256": faces.fingerprint, "faces": len(faces),
              "rows_skipped": faces.skipped, "train_faces": int(len(train_windows)),
              "heldout_faces": int(len(held_windows)),
              "windows_off_crop": int((~kept).sum() + (~held_kept).sum()
                                      + (~calibration_kept).sum()),
              "heldout_rule": f"{HELDOUT_FRACTION:g} of the subjects (each face its own "
                              "where the subject is unknown; subjects that share a "
                              "byte-identical image as one), by salted hash",
              "mirror": bool(mirror), "jitter": bool(jitter), "terms": faces.terms()}
    if calibrate:
        record["calibration_faces"] = int(len(calibration_windows))
        record["calibration_rule"] = (f"the next {CALIBRATION_FRACTION:g} of the subjects "
                                      "after the held-out part, on the same hash")
    if grain:
        record["grain"] = float(grain)
    if posterize:
        record["posterize"] = float(posterize)
    return _WildSplit(train_windows, held_windows, record, calibration_windows)


# A detection finds a face when it holds both eye centres and is not much wider than the
# detector's own face boxes. Detectors frame faces differently (OpenCV's cascades about 2.5
# eye distances, the default model's box 3.3), so a fixed width in eye distances would
# leave one detector more room than another: the limit is this many times the detector's
# own median box width (in eye distances, over the crops where one of its boxes holds
# both eyes), the same margin for every detector.
MAX_WIDTH_OVER_MEDIAN = 1.5


def eyes_found(boxes: np.ndarray, eyes, max_eye_distances: float = float("inf")) -> bool:
    """Whether one of the ``(x, y, w, h)`` boxes holds both eyes and is at most
    ``max_eye_distances`` eye distances wide.

    Parameters
    ----------
    boxes : (n, 4) array
        Boxes ``(x, y, w, h)`` in the crop's pixels.
    eyes : sequence of 4 floats
        ``left_x, left_y, right_x, right_y``.
    max_eye_distances : float
        The widest box that counts, in eye distances.

    Returns
    -------
    bool

    Examples
    --------
    >>> eyes_found(np.array([[0, 0, 40, 40]]), [12.0, 15.0, 28.0, 15.0], 4.0)
    True
    >>> eyes_found(np.array([[0, 0, 20, 40], [0, 0, 90, 90]]), [12.0, 15.0, 28.0, 15.0], 4.0)
    False
    """
    widths = _box_widths_holding_eyes(boxes, eyes)
    return bool(len(widths)) and float(widths.min()) <= max_eye_distances


def _box_widths_holding_eyes(boxes: np.ndarray, eyes) -> np.ndarray:
    """Widths (the larger side), in eye distances, of the boxes that hold both eyes.

    Examples
    --------
    >>> _box_widths_holding_eyes(np.array([[0, 0, 40, 40], [20, 0, 9, 9]]), [12, 15, 28, 15])
    array([2.5])
    """
    lx, ly, rx, ry = (float(v) for v in eyes)
    distance = float(np.hypot(rx - lx, ry - ly))
    boxes = np.asarray(boxes, dtype=float).reshape(-1, 4)
    x, y, w, h = boxes.T
    holds = ((x <= min(lx, rx)) & (max(lx, rx) <= x + w)
             & (y <= min(ly, ry)) & (max(ly, ry) <= y + h))
    return np.maximum(w, h)[holds] / distance


def heldout_faces(model: HaarDetectorModel, faces: WildFaces) -> WildFaces:
    """The held-out part of ``faces``, refusing faces other than a model's own.

    The held-out part is :func:`~facedetect.data.heldout_mask` of the faces' groups: the
    same faces whatever the model. A model whose training record names faces from the
    wild refuses faces with another fingerprint; a model with no such record (trained on
    CBCL's faces alone) takes any.

    Parameters
    ----------
    model : HaarDetectorModel
        The model whose ``training.wild_faces`` record, if any, the faces must match.
    faces : WildFaces
        The faces from the wild (:func:`~facedetect.data.load_wild_faces`).

    Returns
    -------
    WildFaces
        The held-out faces, with the fingerprint of ``faces``.

    Raises
    ------
    FacedetectError
        When the model records faces with another fingerprint.

    See Also
    --------
    evaluate_wild_faces : the model's recall on these faces.
    crop_recall : any detector's recall on these faces.
    facedetect.data.heldout_mask : which faces are held out.

    Examples
    --------
    >>> import facedetect
    >>> from facedetect.data import WildFaces
    >>> model = facedetect.load_model("default")
    >>> own = model.document["training"]["wild_faces"]["sha256"]
    >>> names = [f"face{k}" for k in range(50)]
    >>> faces = WildFaces([np.zeros((40, 40), np.uint8)] * 50,
    ...                   np.tile([12.0, 15.0, 28.0, 15.0], (50, 1)), names, names,
    ...                   [""] * 50, "f", own)
    >>> len(heldout_faces(model, faces))
    4
    >>> faces.fingerprint = "0" * 64
    >>> heldout_faces(model, faces)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    facedetect.errors.FacedetectError: f: not the faces the model was trained on ...
    """
    record = ((model.document.get("training") or {}).get("wild_faces") or {})
    if record and record.get("sha256") != faces.fingerprint:
        raise FacedetectError(f"{faces.source}: not the faces the model was trained on "
                              f"(fingerprint {faces.fingerprint[:12]} vs recorded "
                              f"{str(record.get('sha256'))[:12]}); its held-out part does "
                              "not apply")
    return faces.subset(heldout_mask(faces.groups))


class _CropRecall(NamedTuple):
    """Per source ``{"faces": n, "recall": r}``, and the widest box that counted."""

    by_source: dict
    max_eye_distances: float


def crop_recall(detect: Callable[[np.ndarray], np.ndarray],
                faces: WildFaces) -> _CropRecall:
    """Per source, the fraction of crops in which ``detect(crop) -> (n, 4) boxes`` finds
    the face, and the crops scored.

    A box finds the face when it holds both eyes and is at most ``MAX_WIDTH_OVER_MEDIAN``
    times the detector's median box width, in eye distances (see :func:`eyes_found`).
    The median is over the crops where one of its boxes holds both eyes, of the narrowest
    such box in each. Any detector can be scored: ``detect`` only has to return boxes.
    The two results come as a named tuple.

    Parameters
    ----------
    detect : callable
        Takes a grey crop, an (h, w) uint8 array, and returns its ``(x, y, w, h)`` boxes
        as an (n, 4) array, in the crop's pixels.
    faces : WildFaces
        The faces to find, usually the held-out part (:func:`heldout_faces`).

    Returns
    -------
    by_source : dict
        For each source, in name order, ``{"faces": n, "recall": r}``: the crops scored
        and the fraction found, rounded to 4 decimals.
    max_eye_distances : float
        The widest box that counted, in eye distances, rounded to 3 decimals (0.0 when
        no box holds both eyes).

    See Also
    --------
    evaluate_wild_faces : a model's recall, of windows and of crops.
    heldout_faces : the faces usually scored.

    Examples
    --------
    >>> from facedetect.data import WildFaces
    >>> crops = [np.full((40, 40), k, np.uint8) for k in range(4)]
    >>> eyes = np.tile([12.0, 15.0, 28.0, 15.0], (4, 1))
    >>> names = ["a0", "a1", "b0", "b1"]
    >>> faces = WildFaces(crops, eyes, names, names, ["a", "a", "b", "b"], "f", "0" * 64)
    >>> boxes = [[[0, 0, 40, 40]], [[0, 0, 40, 40]], [[0, 0, 96, 96]], np.empty((0, 4))]
    >>> result = crop_recall(lambda crop: np.array(boxes[crop[0, 0]]), faces)

    The stand-in detector gives one list of boxes per crop. The eyes are 16 pixels
    apart, so the 40 pixel boxes are 2.5 eye distances wide and the limit is 1.5 times
    that; the 96 pixel box, 6 eye distances wide, does not count.

    >>> result.by_source
    {'a': {'faces': 2, 'recall': 1.0}, 'b': {'faces': 2, 'recall': 0.0}}
    >>> result.max_eye_distances
    3.75
    """
    widths = [_box_widths_holding_eyes(detect(crop), eyes)
              for crop, eyes in zip(faces.crops, faces.eyes)]
    narrowest = [float(w.min()) for w in widths if len(w)]
    limit = MAX_WIDTH_OVER_MEDIAN * float(np.median(narrowest)) if narrowest else 0.0
    found = np.array([len(w) > 0 and float(w.min()) <= limit for w in widths], dtype=bool)
    sources = np.array(faces.sources)
    recall = {source: {"faces": int((sources == source).sum()),
                       "recall": round(float(found[sources == source].mean()), 4)}
              for source in sorted(set(faces.sources))}
    return _CropRecall(recall, round(limit, 3))


def evaluate_wild_faces(model: HaarDetectorModel, faces: WildFaces) -> dict:
    """Recall on the held-out faces from the wild, of windows and of whole crops.

    Windows: each held-out face framed as in training (no jitter), scored by the model,
    at its window operating point and at the threshold ``detect`` uses. Crops: ``detect``
    on each held-out crop at the model's image operating point, a face found as
    :func:`crop_recall` counts it, per source. A model trained on CBCL's faces alone is
    scored on the same fixed held-out part; a model trained on other faces from the wild
    is refused (:func:`heldout_faces`).

    Parameters
    ----------
    model : HaarDetectorModel
        The model to score.
    faces : WildFaces
        The faces from the wild the model was trained on, or any faces for a model
        trained without them (:func:`~facedetect.data.load_wild_faces`).

    Returns
    -------
    dict
        ``faces``: the held-out faces. ``windows_off_crop``: those whose window left
        their crop (not scored). ``window_threshold``: the window operating point, and
        ``window_recall``: the fraction of windows scored above it. ``image_threshold``:
        the threshold ``detect`` uses, and ``window_recall_at_image_threshold``.
        ``crops`` and ``crop_box_max_eye_distances``: :func:`crop_recall`'s two results.
        Recalls are rounded to 4 decimals.

    Raises
    ------
    FacedetectError
        When the model records other faces, or no held-out face gives a window.

    See Also
    --------
    heldout_faces : the faces scored.
    crop_recall : the crop recall of any detector.
    facedetect.data.load_wild_faces : reads the faces.

    Examples
    --------
    >>> import facedetect
    >>> from PIL import Image
    >>> from skimage import data
    >>> from facedetect.data import WildFaces
    >>> from facedetect.images import to_grey
    >>> model = facedetect.load_model("default")
    >>> crop = to_grey(Image.fromarray(data.astronaut()))[40:240, 130:330]
    >>> names = [f"face{k}" for k in range(50)]
    >>> faces = WildFaces([crop] * 50, np.tile([72.0, 61.0, 118.0, 63.0], (50, 1)), names,
    ...                   names, ["astronaut"] * 50, "astronaut",
    ...                   model.document["training"]["wild_faces"]["sha256"])

    The astronaut's face, 50 times over: stamped with the fingerprint the model records,
    the copies stand in for its own faces, and 4 of them are held out.

    >>> report = evaluate_wild_faces(model, faces)
    >>> report["faces"], report["window_recall"], report["crops"]
    (4, 1.0, {'astronaut': {'faces': 4, 'recall': 1.0}})
    """
    held = heldout_faces(model, faces)
    framing = model.framing
    windows, kept = face_windows(held, tuple(model.window), framing=framing,
                                 eye_line=eye_line_for(framing))
    if len(windows) == 0:
        raise FacedetectError(f"{faces.source}: none of its {len(faces)} faces is in the "
                              "held-out tenth of the subjects (too few subjects to measure)")
    scores = model.decision_function(windows)
    params = params_for(model)
    report = {"faces": len(held), "windows_off_crop": int((~kept).sum()),
              "window_recall": round(float(np.mean(scores > model.window_threshold)), 4),
              "window_threshold": model.window_threshold,
              "image_threshold": float(params.threshold),
              "window_recall_at_image_threshold":
                  round(float(np.mean(scores > params.threshold)), 4)}
    detector = Detector(model)   # prepared once for every crop
    crops = crop_recall(lambda crop: detector.detect(crop).boxes, held)
    report["crops"] = crops.by_source
    report["crop_box_max_eye_distances"] = crops.max_eye_distances
    return report

