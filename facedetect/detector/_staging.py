"""A one-stage detector with learnt rejection, cut into stages OpenCV can run.

Our scanner rejects a window after any stump whose running score falls below that stump's
rejection level (a soft cascade, :mod:`._pruning`). OpenCV's cascade format has no running
score: each stage sums its own stumps from zero. A stage that holds *every* stump up to a
cut, though, sums exactly the running score there, so stage ``k`` holding stumps
``0 .. c_k - 1`` with the rejection level at ``c_k - 1`` as its threshold rejects what the
soft cascade rejects at that stump. The staged form checks only at the cuts, so it keeps a
window the soft cascade would have dropped in between: it is at least as permissive, and
its last stage (every stump, at the detection threshold) decides exactly as the one-stage
model does.

Repeating a prefix costs its stumps again for the windows that reach the next stage, and
most windows die within the first few stumps, so cuts that grow geometrically keep the
work within about twice the soft cascade's (``DEFAULT_CUTS``).

Both our scanner and ``cv2.CascadeClassifier`` run the staged model as an ordinary
cascade, so they agree window for window; :func:`~facedetect.detector._export.export_opencv`
writes it.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import numpy as np

from ..errors import FacedetectError
from ..modelfile._io import reseal
from ._multiscale import params_for
from ._scan import reject_levels

if TYPE_CHECKING:
    from ._model import HaarDetectorModel

# Stumps at each cut: about 36 stumps a window of the training negative pictures against
# the soft cascade's 12 for haar.json (benchmarks/opencv_export.py measures other
# schedules: 33 to 38).
DEFAULT_CUTS = (4, 8, 16, 32, 64, 128, 256, 512)


def stage_cuts(n_stumps: int, cuts=DEFAULT_CUTS) -> list[int]:
    """The cuts below ``n_stumps``, then ``n_stumps`` itself.

    >>> stage_cuts(100)
    [4, 8, 16, 32, 64, 100]
    """
    kept = sorted({int(c) for c in cuts if 0 < int(c) < n_stumps})
    return kept + [int(n_stumps)]


# Relative margin within which a stage threshold counts as the lowest sum its stumps can
# give: OpenCV adds float32 leaves, so a sum that equals the threshold in float64 can
# fall a unit in the last place below it there.
LOWEST_SUM_MARGIN = 1e-6


def _rejects_nothing(model, levels: np.ndarray, cut: int) -> bool:
    """Whether a stage of stumps ``0 .. cut - 1`` at the rejection level there rejects no
    window: the level is the lowest sum those stumps can give (every vote against).
    Such a stage only costs time, and inside OpenCV it would reject the windows that get
    exactly that sum (its float32 leaves add up a hair lower), and step over the window
    after each: 1,197 raw windows of the development images differed for that."""
    lowest = -float(np.sum(np.abs(model.alphas[:cut])))
    return levels[cut - 1] <= lowest + LOWEST_SUM_MARGIN * (1.0 + abs(lowest))


# A level is a training face's running score less a hair (``_pruning.PRUNE_MARGIN``), so
# windows with exactly that face's sum are common. OpenCV adds a stage's leaves in float32,
# which puts such a sum a few units in the last place either side of a threshold that
# close: the windows flipped, and OpenCV stepped over the next one where it rejected (83
# and 29 raw windows of the development images differed with the 1,500-stump haar.json).
# A stage threshold sits this far below its level, relative to the stage's vote mass: far
# beyond float32's error on such sums, far below the gaps between the sums stumps give.
STAGE_FLOAT32_MARGIN = 1e-5


def stage_threshold(model, levels: np.ndarray, cut: int) -> float:
    """The threshold of the stage of stumps ``0 .. cut - 1``: a window passes on a sum
    above it, so every window at the rejection level or above it passes, in float64 and
    in OpenCV's float32 alike (``STAGE_FLOAT32_MARGIN``)."""
    mass = float(np.sum(np.abs(model.alphas[:cut])))
    return float(levels[cut - 1] - STAGE_FLOAT32_MARGIN * (1.0 + mass))


def staged_model(model, threshold: float, cuts=DEFAULT_CUTS):
    """``model`` (one stage) as a cascade of cumulative stages, for OpenCV.

    Parameters
    ----------
    model : HaarDetectorModel
        A one-stage model; its rejection levels at ``threshold`` (exact, and learnt where
        it has them: :func:`._scan.reject_levels`) become the stage thresholds.
    threshold : float
        The detection threshold: the last stage's.
    cuts : sequence of int
        Stumps before each check (see :func:`stage_cuts`); a cut whose stage would
        reject no window (its level is the lowest sum its stumps can give) is left out.

    Returns
    -------
    HaarDetectorModel
        A cascade whose stage ``k`` holds the first ``cuts[k]`` stumps; it carries the
        model's ``detection`` section, and no rejection or window operating point.

    Examples
    --------
    >>> import facedetect
    >>> staged = staged_model(facedetect.load_model("default"), 13.6, cuts=(4, 8))
    >>> [n for n, _ in staged.stages], staged.n_stumps     # 4 stumps would reject nothing
    ([8, 1500], 1508)
    """
    if model.stages:
        raise FacedetectError("the model is already a cascade: export it as it is")
    if not np.isfinite(threshold):
        raise FacedetectError(f"the detection threshold must be finite, not {threshold}")
    levels = reject_levels(model, float(threshold))
    counts = [c for c in stage_cuts(model.n_stumps, cuts)
              if c == model.n_stumps or not _rejects_nothing(model, levels, c)]
    document = copy.deepcopy(model.document)
    features = document["features"]
    order = np.concatenate([np.arange(c) for c in counts])
    document["stumps"] = [document["stumps"][t] for t in order]
    for key in ("rects", "pool_index", "tilted", "channels"):
        if key in features:
            features[key] = [features[key][t] for t in order]
    document["detection"].pop("rejection", None)
    if "opencv" in document["detection"]:   # its levels are per stump of the one stage
        document["detection"]["opencv"].pop("rejection", None)
    document.pop("operating_point", None)
    document["detection"]["stages"] = [
        {"stumps": int(c), "threshold": stage_threshold(model, levels, c)}
        for c in counts[:-1]] + [{"stumps": int(counts[-1]), "threshold": float(threshold)}]
    return type(model).from_document(reseal(document))


def with_export_levels(model: HaarDetectorModel) -> HaarDetectorModel:
    """``model`` carrying the rejection levels its OpenCV export stages at: those learnt at
    the export's own threshold (``detection.opencv.rejection``) where the model has them,
    else its own, learnt at ``detect``'s threshold.

    Parameters
    ----------
    model : HaarDetectorModel
        A model with a ``detection`` section.

    Returns
    -------
    HaarDetectorModel
        A copy whose ``detection.rejection`` is ``detection.opencv.rejection``; ``model``
        itself where its OpenCV operating point has no levels of its own (or it has no
        such point).

    See Also
    --------
    exported_form : the model and threshold an OpenCV export writes.
    opencv_operating_point : where the export's own levels are learnt.

    Examples
    --------
    >>> import facedetect
    >>> haar = facedetect.load_model("haar")   # it has an OpenCV point with its own levels
    >>> levelled = with_export_levels(haar)
    >>> levelled.detection["rejection"] == haar.detection["opencv"]["rejection"]
    True
    >>> default = facedetect.load_model("default")   # no OpenCV point: its own levels
    >>> with_export_levels(default) is default
    True
    """
    point = model.detection.get("opencv") or {}
    if "rejection" not in point:
        return model
    return model.with_detection({"rejection": point["rejection"]})


def exported_form(model: HaarDetectorModel, threshold: float | None = None,
                  one_stage: bool = False, detect_levels: bool = False
                  ) -> tuple[HaarDetectorModel, float]:
    """``(model to write, last-stage threshold)`` for an OpenCV export: a one-stage model
    with learnt rejection staged (:func:`staged_model`) at its OpenCV operating point
    (``detection.opencv``: its threshold, cuts and, unless ``detect_levels``, the
    rejection levels learnt there) unless ``one_stage``; any other model as it is, at the
    threshold ``detect`` uses. ``threshold`` overrides either (the levels stay those
    learnt at the recorded one).

    A model with learnt rejection but no OpenCV operating point is staged at ``detect``'s
    threshold, with ``DEFAULT_CUTS`` and its own levels.

    Parameters
    ----------
    model : HaarDetectorModel
    threshold : float, optional
        The last stage's threshold (default: as above).
    one_stage : bool
        Keep a one-stage model as it is, at ``detect``'s threshold: OpenCV then runs
        every stump on every window.
    detect_levels : bool
        Stage at the rejection levels learnt at ``detect``'s threshold
        (``detection.rejection``), not at the OpenCV point's.

    Returns
    -------
    model : HaarDetectorModel
        The model to write (:func:`export_opencv`, :func:`cascade_xml`).
    threshold : float
        Its last stage's threshold.

    Raises
    ------
    FacedetectError
        A threshold that is not finite; out of range where the model is not staged
        (``InvalidScanSetting``, also a ValueError).

    See Also
    --------
    with_export_levels : the levels the stages are cut at.
    export_opencv : writes the pair.

    Examples
    --------
    >>> import facedetect
    >>> haar = facedetect.load_model("haar")
    >>> staged, threshold = exported_form(haar)
    >>> [n for n, _ in staged.stages], threshold == haar.detection["opencv"]["threshold"]
    ([8, 16, 32, 64, 128, 256, 512, 1500], True)
    >>> same, threshold = exported_form(haar, one_stage=True)
    >>> same is haar, threshold == haar.detection["threshold"]
    (True, True)
    """
    levelled = model if detect_levels else with_export_levels(model)
    if model.stages or one_stage or levelled.rejection is None:
        return model, params_for(model, threshold=threshold).threshold
    point = model.detection.get("opencv")
    if threshold is None:
        threshold = point["threshold"] if point else params_for(model).threshold
    return staged_model(levelled, threshold, point["cuts"] if point else DEFAULT_CUTS), threshold
