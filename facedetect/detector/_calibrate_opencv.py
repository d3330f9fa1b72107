"""The OpenCV export's operating point: the last-stage threshold of the staged cascade
(:mod:`._staging`) that ``export-opencv`` writes, chosen for OpenCV's own scan at
``detectMultiScale``'s defaults as :mod:`._calibrate` chooses ``detect``'s, on the same
calibration pictures, and measured by ``cv2.CascadeClassifier`` running the XML written
at each candidate."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ._calibrate_scan import (N_CANDIDATES, choose_image_threshold, rates_down_to_target,
                              read_pictures, scan_pictures,
                              search_down, soft_levels_at)
from ._multiscale import DetectionParams

if TYPE_CHECKING:
    from ._model import HaarDetectorModel

__all__ = ["opencv_operating_point", "opencv_rate"]

# OpenCV's detectMultiScale defaults: the staged export is run by users with them.
OPENCV_MIN_NEIGHBORS = 3
OPENCV_SCALE_FACTOR = 1.1
# The export's threshold is searched this far below the image threshold: OpenCV's coarser
# scan (step 2, 3 neighbours) raises fewer false alarms at a threshold, so its point lies
# lower (5.5 lower for the shipped model).
OPENCV_SEARCH_BELOW = 10.0


def opencv_rate(staged, threshold: float, pictures, warn=None) -> float:
    """False alarms per megapixel that ``cv2.CascadeClassifier`` raises on the face-free
    ``pictures`` running ``staged`` (a cascade) exported with its last stage at
    ``threshold``, at ``detectMultiScale``'s defaults (scale 1.1, 3 neighbours)."""
    import cv2

    from ._export import cascade_xml
    with tempfile.TemporaryDirectory(prefix="facedetect-calibrate-") as folder:
        path = Path(folder) / "cascade.xml"
        path.write_text(cascade_xml(staged, threshold), encoding="utf-8")
        opencv = cv2.CascadeClassifier(str(path))
    found, megapixels = 0, 0.0
    for picture in read_pictures(pictures, warn):
        megapixels += picture.size / 1e6
        boxes = opencv.detectMultiScale(np.ascontiguousarray(picture, dtype=np.uint8),
                                        OPENCV_SCALE_FACTOR, OPENCV_MIN_NEIGHBORS)
        found += len(boxes)
    return found / max(megapixels, 1e-12)


def opencv_operating_point(model: HaarDetectorModel,
                           pictures: Sequence[str | os.PathLike | np.ndarray], target: float,
                           *, train_faces: np.ndarray | None = None, progress: bool = False,
                           warn: Callable[[str], None] | None = None) -> dict:
    """The last-stage threshold of the staged OpenCV export, chosen as the image operating
    point is, for ``cv2.CascadeClassifier.detectMultiScale`` at its defaults: the lowest
    threshold whose false alarms per megapixel on the calibration ``pictures`` are at most
    ``target``.

    The search scan runs the staged cascade in our scanner as OpenCV scans (scale 1.1, its
    step and bilinear levels, 3 neighbours: the windows OpenCV keeps, tests/test_staging.py)
    and groups its windows at every candidate; then the threshold goes down the candidates
    as the image point's does (:func:`._calibrate_scan.search_down`), each measured by OpenCV
    itself on the XML written there (:func:`opencv_rate`).

    With ``train_faces``, the stages are cut at soft-rejection levels learnt at each
    candidate (``SOFT_REJECTION_LOSS`` of the training faces accepted there), recorded as
    the point's ``rejection``; the search scan learns them at its lowest candidate, where
    they are more permissive, so its choice errs high and is kept as ``search_scan``.
    Without faces the stages are cut at ``detect``'s levels.

    Parameters
    ----------
    model : HaarDetectorModel
        A one-stage, variance-normalised model of Haar features with an image operating
        point (``detection.threshold``): the search starts ``OPENCV_SEARCH_BELOW`` under
        that threshold.
    pictures : sequence of paths or grey arrays
        Face-free calibration pictures, never trained on.
    target : float
        False alarms per megapixel allowed.
    train_faces : (n, h, w) uint8 array, optional
        The faces the model was trained on, for the soft-rejection levels.
    progress : bool
        Show a progress bar over the pictures of the search scan.
    warn : callable, optional
        Called with one line for each warning: a picture that cannot be read (and is
        skipped), a target the export does not meet. Default: the lines are dropped.

    Returns
    -------
    dict
        ``threshold``, ``min_neighbors`` and ``scale_factor`` (``detectMultiScale``'s
        defaults), ``cuts``, the target and the ``false_alarms_per_megapixel`` OpenCV
        raises at the threshold, ``search_scan`` (its choice), and ``rejection`` (with
        ``train_faces``).

    Raises
    ------
    FacedetectError
        A cascade, or a model OpenCV cannot run (:func:`cascade_xml`).

    See Also
    --------
    image_operating_point : the point ``detect`` scans with.
    calibrate : the model with both points.
    exported_form : the export this point is for.

    Examples
    --------
    >>> import facedetect
    >>> from skimage import data
    >>> model = facedetect.load_model("haar")
    >>> point = opencv_operating_point(model, [data.camera(), data.coins()], 5.0)
    >>> point["min_neighbors"], point["false_alarms_per_megapixel"] <= 5.0
    (3, True)
    """
    from ._staging import DEFAULT_CUTS, staged_model
    pictures = read_pictures(pictures, warn)   # decoded once for every measurement
    image_threshold = float(model.detection["threshold"])
    low = image_threshold - OPENCV_SEARCH_BELOW
    params = DetectionParams(threshold=low, min_neighbors=OPENCV_MIN_NEIGHBORS,
                             scale_factor=OPENCV_SCALE_FACTOR, step="auto",
                             min_size=max(model.window), pyramid="linear")
    raw, megapixels, floor = scan_pictures(
        staged_model(soft_levels_at(model, train_faces, low), low), pictures, params, progress,
        warn)
    low = max(low, float(np.nextafter(floor, np.inf)))   # counted in full from here up
    thresholds = np.linspace(low, max(low, image_threshold + 2.0), N_CANDIDATES)
    rates = rates_down_to_target(raw, megapixels, thresholds, target, OPENCV_MIN_NEIGHBORS,
                                 0.0)
    chosen = choose_image_threshold(thresholds, rates, target)
    search_scan = {"threshold": round(float(thresholds[chosen]), 6),
                   "false_alarms_per_megapixel": round(float(rates[chosen]), 4)}

    def measure(i):
        at = round(float(thresholds[i]), 6)
        levelled = soft_levels_at(model, train_faces, at)
        return levelled, opencv_rate(staged_model(levelled, at), at, pictures, warn)
    chosen, rate, levelled = search_down(measure, chosen + 1, target)
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
