"""The image operating point of any model: the threshold and grouping ``detect`` uses by
default, chosen on face-free calibration pictures by running ``detect``'s own scan.

The window operating point (``model.window_threshold``) answers "is this window a face?"
at the cost asked for. A whole photograph is another question: it holds hundreds of
thousands of windows, so what a user sees is the false alarms per megapixel after
grouping. :func:`image_operating_point` chooses the threshold from pictures the model
never trained on, and ``facedetect calibrate`` and training call it alike:

- the calibration pictures are scanned once by a :class:`~facedetect.Detector` at the
  lowest candidate threshold (:meth:`~facedetect.Detector.raw_windows`), and each
  candidate's groups give the false alarms per megapixel there;
- faces, where given, bound the candidates from below: none below the score that keeps
  ``1 - FACE_QUANTILE`` of them is tried (lower gains nothing at the window level);
  without faces the candidates start at the window threshold;
- the threshold is the lowest candidate whose rate, and that of every higher candidate,
  is at most the target: the highest recall at the stated rate. Grouping is OpenCV's rule
  with ``MIN_NEIGHBORS``, fixed beforehand.

With training faces, soft rejection
(:func:`facedetect.detector._pruning.soft_rejection_thresholds`) is then learnt at the
chosen threshold, rejecting at most ``SOFT_REJECTION_LOSS`` of the faces the model accepts
there. That scan drops more windows than the search scan (whose levels were learnt at the
lowest candidate), so the threshold goes down the candidates, each measured by
``Detector.detect`` with its own levels, to the lowest that still meets the target
(:func:`search_down`): the rate the model file records is the one ``detect`` gives.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from ._calibrate_scan import (N_CANDIDATES, SOFT_REJECTION_LOSS, choose_image_threshold,
                              detect_rate, ignore, measured_curve, rates_down_to_target,
                              read_pictures, scan_pictures, search_down, soft_levels_at)
from ._multiscale import DetectionParams

if TYPE_CHECKING:
    from ._model import HaarDetectorModel

__all__ = ["FACE_QUANTILE", "SOFT_REJECTION_LOSS", "calibrate", "image_operating_point"]

# A group needs more than this many windows. Each setting with its own threshold at the
# target, on the recipe's model: 1, 2, 3, 4 neighbours found 0.927, 0.931, 0.926, 0.923 of
# the held-out MTFL and Caltech crops (OpenCV's 3 is not the best for this detector), and
# counting windows up to 1 or 1.5 below the threshold as neighbours found no more.
MIN_NEIGHBORS = 2
NEIGHBOR_MARGIN = 0.0
# The levels are area averages, as the training faces are shrunk (and as mining scans).
CALIBRATION_PYRAMID = "area"
# Candidates start at the score that keeps 95% of the faces: the threshold that meets the
# target keeps fewer (88-90% of the held-out faces for the shipped model), and scanning
# from a lower start took a quarter of the training time.
FACE_QUANTILE = 0.05


def image_operating_point(model: HaarDetectorModel,
                          pictures: Sequence[str | os.PathLike | np.ndarray],
                          faces: np.ndarray | None, target: float, *,
                          train_faces: np.ndarray | None = None, progress: bool = False,
                          warn: Callable[[str], None] | None = None) -> dict:
    """The image operating point of ``model``: the ``detection`` fields ``detect`` scans
    with, and how they were chosen (see the module docstring).

    Parameters
    ----------
    model : HaarDetectorModel
        A one-stage model or a cascade. A verifier it carries is left out: this is the
        proposer's point, and the verifier's own is chosen on top of it
        (:func:`facedetect.pipeline._verifier.recalibrated_verifier`).
    pictures : sequence of paths or grey arrays
        Face-free calibration pictures, never trained on.
    faces : (n, h, w) uint8 array or None
        Face windows that bound the candidates from below (training: the held-out
        faces); None starts them at the window threshold.
    target : float
        False alarms per megapixel allowed (the recipe's
        ``target_false_alarms_per_megapixel``).
    train_faces : (n, h, w) uint8 array, optional
        The faces the model was trained on: soft rejection is learnt from them at each
        candidate ``detect`` scan measures; without them the model's own levels stay.
    progress : bool
        Show a progress bar over the pictures.
    warn : callable, optional
        Called with one line for each warning: a picture that cannot be read (and is
        skipped), a model that raises too many windows, a target no threshold meets.
        Default: the lines are dropped.

    Returns
    -------
    dict
        ``threshold``, the grouping and pyramid, ``false_alarms_per_megapixel`` as
        ``detect`` gives it there, ``rejection`` (with ``train_faces``), and the record of
        the choice (target, source, curve, ``search_scan``).

    See Also
    --------
    calibrate : the model with this point (and its OpenCV export's).
    opencv_operating_point : the same choice for the OpenCV export.
    Detector.raw_windows : the scan it counts windows with.

    Examples
    --------
    >>> import facedetect
    >>> from skimage import data
    >>> point = image_operating_point(facedetect.load_model("default"),
    ...                               [data.camera(), data.coins()], None, 5.0)
    >>> point["false_alarms_per_megapixel"] <= 5.0, point["applies_to"]
    (True, 'images')
    """
    model = model.one_stage()   # the proposer's scan: the verifier's point comes after
    pictures = read_pictures(pictures, warn)   # decoded once for every measurement
    face_scores = None if faces is None else model.decision_function(faces)
    low = (float(model.window_threshold) if face_scores is None
           else float(np.quantile(face_scores, FACE_QUANTILE)))
    base = DetectionParams(threshold=low, min_neighbors=MIN_NEIGHBORS,
                           neighbor_margin=NEIGHBOR_MARGIN, pyramid=CALIBRATION_PYRAMID,
                           min_size=max(model.window))
    levels_at = low   # the search scan: soft rejection learnt at the lowest candidate
    raw, megapixels, floor = scan_pictures(soft_levels_at(model, train_faces, low), pictures,
                                           base, progress, warn)
    if floor > low:
        # A weak model: the pictures raised more windows than can be counted below the
        # floor, so the candidates start there (and the faces kept say what it costs).
        kept = "" if face_scores is None else (
            f" (it keeps {np.mean(face_scores > floor):.1%} of the held-out faces there)")
        (warn or ignore)(
            f"warning: the model accepts so many windows of the calibration pictures that "
            f"its image operating point is sought from {floor:.4g} up{kept}: train "
            "longer (--rounds) for a stronger one")
        low = float(np.nextafter(floor, np.inf))
    top = max([low] + [float(s.max()) for _, s in raw if len(s)])
    thresholds = np.linspace(low, top, N_CANDIDATES)
    rates = rates_down_to_target(raw, megapixels, thresholds, target, MIN_NEIGHBORS,
                                 NEIGHBOR_MARGIN)
    chosen = choose_image_threshold(thresholds, rates, target)
    if rates[chosen] > target:
        (warn or ignore)(
            f"warning: no threshold keeps the false alarms on the calibration pictures at "
            f"{target:g} per megapixel; the image operating point takes the highest score "
            f"seen, {thresholds[chosen]:.4g} ({rates[chosen]:.3g} per megapixel)")
    point = {"false_alarms_per_megapixel": round(float(rates[chosen]), 4)}
    if train_faces is not None and len(train_faces):
        search_scan = {"threshold": round(float(thresholds[chosen]), 6), **point,
                       "levels_at": round(levels_at, 6)}
        chosen, point = _on_detect_scan(model, train_faces, pictures, base,
                                        thresholds[:chosen + 1], target, warn)
        point["search_scan"] = search_scan
    threshold = float(thresholds[chosen])
    faces_part = "" if face_scores is None else f" and {len(face_scores)} held-out faces"
    section = {"threshold": round(threshold, 6), "min_neighbors": MIN_NEIGHBORS,
               "neighbor_margin": NEIGHBOR_MARGIN, "scale_factor": base.scale_factor,
               "step": base.step, "min_size": base.min_size, "pyramid": base.pyramid,
               "applies_to": "images", "target_false_alarms_per_megapixel": target, **point}
    if face_scores is not None:
        section["heldout_face_window_recall"] = round(float(np.mean(face_scores > threshold)),
                                                      4)
    return {**section,
            "source": f"{len(raw)} calibration negative pictures ({megapixels:.1f} Mpx)"
                      f"{faces_part}",
            "curve": measured_curve(thresholds, rates)}


def _on_detect_scan(model, train_faces: np.ndarray, pictures, base: DetectionParams,
                    thresholds, target: float, warn=None):
    """``(index, fields)``: :func:`search_down` over the rising ``thresholds``, each
    measured by ``detect`` with soft rejection learnt at it, and the fields it sets: the
    rate there and those levels (none where no training face scores above the threshold,
    so ``detect`` keeps the model's own levels, as that scan did)."""
    def measure(i):   # at the threshold the model file records, rounded
        at = replace(base, threshold=round(float(thresholds[i]), 6))
        levelled = soft_levels_at(model, train_faces, at.threshold)
        return levelled, detect_rate(levelled, pictures, at, warn)
    chosen, rate, levelled = search_down(measure, len(thresholds), target)
    if rate > target:
        (warn or ignore)(
            f"warning: detect raises {rate:.3g} false alarms per megapixel of the "
            f"calibration pictures at its threshold {thresholds[chosen]:.4g}, over the "
            f"target {target:g}")
    fields = {"false_alarms_per_megapixel": round(rate, 4)}
    if levelled is not model:
        fields["rejection"] = levelled.detection["rejection"]
    return chosen, fields


def calibrate(model: HaarDetectorModel, pictures: Sequence[str | os.PathLike | np.ndarray],
              target: float, *, faces: np.ndarray | None = None,
              train_faces: np.ndarray | None = None, opencv: bool | None = None,
              progress: bool = False, warn: Callable[[str], None] | None = None
              ) -> HaarDetectorModel:
    """``model`` with its image operating point (:func:`image_operating_point`) and, for
    a one-stage model of Haar features, its OpenCV export's
    (:func:`._calibrate_opencv.opencv_operating_point`), both chosen on the face-free
    calibration ``pictures`` at ``target`` false alarms per megapixel: what training and
    ``facedetect calibrate`` do alike.

    Parameters
    ----------
    model : HaarDetectorModel
    pictures : sequence of paths or grey arrays
        Face-free calibration pictures, never trained on.
    target : float
        False alarms per megapixel allowed.
    faces, train_faces : (n, h, w) uint8 arrays, optional
        See :func:`image_operating_point`.
    opencv : bool, optional
        Choose the export's point too (default: where OpenCV can run the model). It is
        never chosen for a cascade or a model with channel features.
    progress : bool
        Show progress bars over the pictures.
    warn : callable, optional
        Called with one line for each warning (see :func:`image_operating_point`).

    Returns
    -------
    HaarDetectorModel
        The scan's fields in ``detection`` (and ``detection.opencv``), how they were
        chosen in ``calibration.image`` (and ``calibration.opencv``), with the seconds
        taken (``calibration.image.seconds``, for both). A verifier section is kept as it
        is: ``facedetect calibrate`` chooses its point again after this one.

    See Also
    --------
    image_operating_point : the point ``detect`` scans with.
    opencv_operating_point : the OpenCV export's.

    Examples
    --------
    >>> import facedetect
    >>> from skimage import data
    >>> model = calibrate(facedetect.load_model("haar"), [data.camera(), data.coins()], 5.0)
    >>> model.detection["applies_to"], model.detection["opencv"]["min_neighbors"]
    ('images', 3)
    >>> sorted(model.calibration), model.calibration["image"]["target_false_alarms_per_megapixel"]
    (['image', 'opencv'], 5.0)
    """
    from ..modelfile._calibration import split_provenance
    from ._calibrate_opencv import opencv_operating_point
    start = time.perf_counter()
    verifier = model.document.get("verifier")
    model = model.one_stage()   # both points are the proposer's (and the export's)
    pictures = read_pictures(pictures, warn)   # once for both points: one line per unreadable
    scan, chosen = split_provenance(image_operating_point(
        model, pictures, faces, target, train_faces=train_faces, progress=progress, warn=warn))
    # the scan's fields (with soft rejection set at the threshold), and how they were chosen
    model = model.with_sections(detection=scan, calibration={"image": chosen})
    exportable = not model.stages and not (model.channels >= 0).any()
    if exportable if opencv is None else (opencv and exportable):
        scan, chosen = split_provenance(opencv_operating_point(
            model, pictures, target, train_faces=train_faces, progress=progress, warn=warn))
        model = model.with_sections(detection={"opencv": scan},
                                    calibration={"opencv": chosen})
    seconds = round(time.perf_counter() - start, 2)
    model = model.with_sections(calibration={"image": {**model.calibration["image"],
                                                       "seconds": seconds}})
    return model if verifier is None else model.with_sections(verifier=verifier)
