"""The OpenCV export's operating point: the last-stage threshold of the staged cascade
(:mod:`facedetect.detector._staging`) that ``export-opencv`` writes, chosen for OpenCV's own
scan at ``detectMultiScale``'s defaults as :mod:`._image_point` chooses ``detect``'s, on the
same calibration pictures, with the stage levels learnt at it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..detector._multiscale import DetectionParams
from ._image_point import (N_CANDIDATES, choose_image_threshold, false_alarm_rates,
                           rates_down_to_target, scan_pictures, scan_pictures_bounded,
                           search_down, soft_levels_at)
from ._settings import TARGET_FALSE_ALARMS_PER_MPX


# OpenCV's detectMultiScale defaults: the staged export is run by users with them.
OPENCV_MIN_NEIGHBORS = 3
OPENCV_SCALE_FACTOR = 1.1
# The export's threshold is searched this far below the image threshold: OpenCV's coarser
# scan (step 2, 3 neighbours) raises fewer false alarms at a threshold, so its point lies
# lower (5.5 lower for the shipped model).
OPENCV_SEARCH_BELOW = 10.0


def opencv_operating_point(model, pictures, target: float = TARGET_FALSE_ALARMS_PER_MPX,
                           progress: bool = False, warn=None,
                           train_faces: np.ndarray | None = None) -> dict:
    """The last-stage threshold of the staged OpenCV export (:mod:`..detector._staging`),
    chosen as the image operating point is, for ``cv2.CascadeClassifier.detectMultiScale``
    at its defaults: the lowest threshold whose false alarms per megapixel on the
    calibration ``pictures``, scanned as OpenCV scans (scale 1.1, its step and bilinear
    levels, 3 neighbours), are at most ``target``. The scan runs the staged cascade in our
    scanner, which keeps the windows OpenCV keeps (tests/test_staging.py).

    With ``train_faces``, the stages are cut at soft-rejection levels learnt at the
    export's own threshold (``SOFT_REJECTION_LOSS`` of the training faces accepted there),
    recorded as the point's ``rejection``. The search scan learns them at its lowest
    candidate, where the budget counts more faces of low scores and so leaves lower levels
    (``haar.json``: quantile 0.016 against 0.025, lower at every stump): a search more
    permissive than the export, whose threshold errs high (0.218 false alarms per
    megapixel at the target 0.25), so the threshold then goes down as the image point's
    does (:func:`search_down`), each candidate scanned as the export with its own levels;
    the search scan's choice is kept as ``search_scan``. Without faces, the stages are
    cut at ``detect``'s levels, learnt at its own threshold, which reject more of the
    faces the export accepts (5.95% of the training faces for ``haar.json``,
    docs/cascades.md)."""
    from ..detector._staging import DEFAULT_CUTS, staged_model
    image_threshold = float(model.detection["threshold"])
    low = image_threshold - OPENCV_SEARCH_BELOW
    params = DetectionParams(threshold=low, min_neighbors=OPENCV_MIN_NEIGHBORS,
                             scale_factor=OPENCV_SCALE_FACTOR, step="auto",
                             min_size=max(model.window), pyramid="linear")
    raw, megapixels, floor = scan_pictures_bounded(
        staged_model(soft_levels_at(model, train_faces, low), low), pictures, params, progress,
        warn)
    low = max(low, float(np.nextafter(floor, np.inf)))   # counted in full from here up
    thresholds = np.linspace(low, max(low, image_threshold + 2.0), N_CANDIDATES)
    rates = rates_down_to_target(raw, megapixels, thresholds, target, OPENCV_MIN_NEIGHBORS,
                                 0.0)
    chosen = choose_image_threshold(thresholds, rates, target)
    search_scan = {"threshold": round(float(thresholds[chosen]), 6),
                   "false_alarms_per_megapixel": round(float(rates[chosen]), 4)}
    chosen, rate, levelled = search_down(lambda i: export_scan_at(
        model, train_faces, pictures, replace(params, threshold=round(float(thresholds[i]), 6)),
        progress, warn), chosen + 1, target)
    threshold = float(thresholds[chosen])
    if rate > target:
        (warn or (lambda line: None))(
            f"warning: the OpenCV export raises {rate:.3g} false alarms per megapixel of "
            f"the calibration pictures at its threshold {threshold:.4g}, over the target "
            f"{target:g}")
    point = {"threshold": round(threshold, 6), "min_neighbors": OPENCV_MIN_NEIGHBORS,
             "scale_factor": OPENCV_SCALE_FACTOR, "cuts": list(DEFAULT_CUTS),
             "target_false_alarms_per_megapixel": target,
             "false_alarms_per_megapixel": round(float(rate), 4), "search_scan": search_scan}
    if levelled is not model:
        point["rejection"] = levelled.detection["rejection"]
    return point


def export_scan_at(model, train_faces, pictures, params: DetectionParams,
                   progress: bool = False, warn=None):
    """``(model with the export's levels learnt at params.threshold, the false alarms per
    megapixel of the staged export cut at them)``: the calibration pictures scanned as
    OpenCV scans them (``params``)."""
    from ..detector._staging import staged_model
    levelled = soft_levels_at(model, train_faces, params.threshold)
    raw, megapixels = scan_pictures(staged_model(levelled, params.threshold), pictures,
                                    params, progress, warn)
    return levelled, float(false_alarm_rates(raw, megapixels, [params.threshold],
                                             params.min_neighbors, 0.0)[0])

