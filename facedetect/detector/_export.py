"""Export a detector as an OpenCV cascade that ``cv2.CascadeClassifier`` loads: one stage
for a one-stage detector, one per stage for an attentional cascade.

OpenCV's Haar conventions: a feature is at most three weighted rectangles; its value is
the weighted sum times OpenCV's variance factor over the window minus a one-pixel border
(the same normalisation as ours); a node sends ``value < threshold`` to the left leaf.

Our stump outputs ``polarity`` where ``value > threshold``. Feature values are float32, so
``value > t`` is the same as ``value >= t'`` with ``t'`` the smallest float32 above ``t``;
that ``t'`` is written, which makes OpenCV's comparison agree with ours exactly. The
four-rectangle checkerboard ``TR + BL - TL - BR`` is written as three rectangles,
``whole - 2 TL - 2 BR``. Tilted features are OpenCV's own (``<tilted>1</tilted>``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .._utils.atomic import atomic_write_text
from ..errors import FacedetectError

if TYPE_CHECKING:
    from ._model import HaarDetectorModel


FLOAT32_LIMIT = 1e37   # below float32's largest, 3.4e38, with room for nextafter


def opencv_rects(rects) -> list[tuple[int, int, int, int, float]]:
    """A feature's rectangles in at most three, as OpenCV requires."""
    if len(rects) <= 3:
        return [tuple(r) for r in rects]
    if len(rects) == 4 and [r[4] for r in rects] == [-1.0, 1.0, -1.0, 1.0]:
        top_left, _, bottom_right, _ = rects
        x0 = min(r[0] for r in rects)
        y0 = min(r[1] for r in rects)
        x1 = max(r[0] + r[2] for r in rects)
        y1 = max(r[1] + r[3] for r in rects)
        return [(x0, y0, x1 - x0, y1 - y0, 1.0), (*top_left[:4], -2.0),
                (*bottom_right[:4], -2.0)]
    raise FacedetectError(f"a feature with {len(rects)} rectangles cannot be exported to OpenCV")


def opencv_threshold(threshold: float) -> np.float32:
    """The smallest float32 t' with ``v >= t'`` exactly when ``v > threshold``."""
    t32 = np.float32(threshold)
    if float(t32) <= threshold:
        t32 = np.nextafter(t32, np.float32(np.inf))
    return t32


# OpenCV lowers every stage threshold it reads by this (cascadedetect.cpp,
# ``CascadeClassifierImpl::Data::read``: ``(float)stageThreshold - THRESHOLD_EPS``).
OPENCV_THRESHOLD_EPS = np.float32(1e-5)


def opencv_stage_threshold(threshold: float) -> np.float32:
    """The float32 to write so that OpenCV, once it has taken ``OPENCV_THRESHOLD_EPS``
    off, accepts a stage sum ``s >= t'`` exactly when ``s > threshold`` (``t'`` the
    float32 just above ``threshold``).

    Examples
    --------
    >>> written = opencv_stage_threshold(2.0)
    >>> float(np.float32(written - OPENCV_THRESHOLD_EPS)) > 2.0
    True
    >>> float(np.float32(np.nextafter(written, np.float32(-1)) - OPENCV_THRESHOLD_EPS)) > 2.0
    False
    """
    target = np.nextafter(np.float32(threshold), np.float32(np.inf))
    written = np.float32(target + OPENCV_THRESHOLD_EPS)
    down, up = np.float32(-np.inf), np.float32(np.inf)
    while np.float32(written - OPENCV_THRESHOLD_EPS) < target:
        written = np.nextafter(written, up)
    while np.float32(np.nextafter(written, down) - OPENCV_THRESHOLD_EPS) >= target:
        written = np.nextafter(written, down)
    return written


def _stage_xml(model, start: int, stop: int, threshold: float) -> str:
    """One ``<stages>`` entry: stumps ``start..stop-1``, accepting a sum above
    ``threshold`` (:func:`opencv_stage_threshold`: OpenCV accepts ``sum >= t``)."""
    nodes = []
    for t in range(start, stop):
        polarity, alpha = float(model.polarities[t]), float(model.alphas[t])
        left, right = -polarity * alpha, polarity * alpha
        nodes.append(f"        <_>\n          <internalNodes>\n            0 -1 {t} "
                     f"{repr(float(opencv_threshold(model.thresholds[t])))}</internalNodes>\n"
                     f"          <leafValues>\n            {left!r} {right!r}</leafValues></_>")
    stage = float(opencv_stage_threshold(threshold))
    return (f"    <_>\n      <maxWeakCount>{stop - start}</maxWeakCount>\n"
            f"      <stageThreshold>{stage!r}</stageThreshold>\n      <weakClassifiers>\n"
            f"{chr(10).join(nodes)}</weakClassifiers></_>")


def cascade_xml(model: HaarDetectorModel, stage_threshold: float = 0.0) -> str:
    """The cascade as OpenCV's XML text. The (last) stage accepts when the sum of its
    leaves is above ``stage_threshold``; a cascade's earlier stages keep their own.

    Parameters
    ----------
    model : HaarDetectorModel
        A variance-normalised model of Haar features: one stage, or a cascade (such as
        :func:`exported_form` stages).
    stage_threshold : float
        The threshold of the last (or only) stage.

    Returns
    -------
    str
        The XML document that ``cv2.CascadeClassifier`` reads.

    Raises
    ------
    FacedetectError
        A model that is not variance-normalised, has channel features, or has a feature
        of more than three rectangles other than the four-rectangle checkerboard.

    See Also
    --------
    export_opencv : writes it to a file.
    exported_form : the model and threshold to write.

    Examples
    --------
    >>> import facedetect
    >>> text = cascade_xml(facedetect.load_model("haar"), 14.0)
    >>> text.splitlines()[0], "<stageNum>1</stageNum>" in text
    ('<?xml version="1.0"?>', True)
    """
    width, height = model.window
    if not model.normalize:
        raise FacedetectError("only variance-normalised models can be exported to OpenCV")
    if (model.channels >= 0).any():
        raise FacedetectError(
            "OpenCV's cascade format holds Haar features only, and this model has "
            "channel features (the recipe adds them with faces from the wild): train with "
            "--no-channels for a model OpenCV can run, or export the shipped 'haar' model")
    stages = model.stages or [(model.n_stumps, stage_threshold)]
    bounds = np.concatenate([[0], np.cumsum([n for n, _ in stages])])
    stage_xml = [_stage_xml(model, int(bounds[k]), int(bounds[k + 1]),
                            stage_threshold if k == len(stages) - 1 else threshold)
                 for k, (_, threshold) in enumerate(stages)]
    features = []
    for rects, tilted in zip(model.rects, model.tilted):
        rect_lines = "\n".join(f"        <_>\n          {x} {y} {w} {h} {weight!r}</_>"
                               for x, y, w, h, weight in opencv_rects(rects))
        features.append(f"    <_>\n      <rects>\n{rect_lines}</rects>\n"
                        f"      <tilted>{int(tilted)}</tilted></_>")
    most = max(n for n, _ in stages)
    return f"""<?xml version="1.0"?>
<!-- facedetect: {len(stages)}-stage cascade of {model.n_stumps} stumps, cost {model.cost} -->
<opencv_storage>
<cascade>
  <stageType>BOOST</stageType>
  <featureType>HAAR</featureType>
  <height>{height}</height>
  <width>{width}</width>
  <stageParams>
    <boostType>GAB</boostType>
    <minHitRate>9.9500000476837158e-01</minHitRate>
    <maxFalseAlarm>5.0000000000000000e-01</maxFalseAlarm>
    <weightTrimRate>9.4999999999999996e-01</weightTrimRate>
    <maxDepth>1</maxDepth>
    <maxWeakCount>{most}</maxWeakCount></stageParams>
  <featureParams>
    <maxCatCount>0</maxCatCount>
    <featSize>1</featSize>
    <mode>ALL</mode></featureParams>
  <stageNum>{len(stages)}</stageNum>
  <stages>
{chr(10).join(stage_xml)}</stages>
  <features>
{chr(10).join(features)}</features></cascade>
</opencv_storage>
"""


def export_opencv(model: HaarDetectorModel, path: str | os.PathLike,
                  stage_threshold: float = 0.0) -> Path:
    """Write the cascade XML atomically. OpenCV reads its thresholds as float32, so one
    beyond float32's range (which would read as infinity: a cascade that never fires) is
    refused.

    Parameters
    ----------
    model : HaarDetectorModel
        As for :func:`cascade_xml`.
    path : str or path
        The XML file to write (replaced if it exists).
    stage_threshold : float
        The threshold of the last (or only) stage, at most ``FLOAT32_LIMIT`` in size.

    Returns
    -------
    Path
        The file written.

    Raises
    ------
    FacedetectError
        A stage threshold beyond ``FLOAT32_LIMIT`` in size (or not a number), or a model
        :func:`cascade_xml` refuses.

    See Also
    --------
    exported_form : the model and threshold to write.
    cascade_xml : the text written.

    Examples
    --------
    >>> import importlib.resources, tempfile
    >>> import cv2
    >>> from pathlib import Path
    >>> from facedetect.detector._model import HaarDetectorModel
    >>> model = HaarDetectorModel.load(
    ...     importlib.resources.files("facedetect") / "models" / "haar.json")
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = export_opencv(model, Path(folder) / "cascade.xml")
    ...     cv2.CascadeClassifier(str(path)).empty()
    False
    """
    if not abs(stage_threshold) < FLOAT32_LIMIT:
        from ..errors import FacedetectError
        raise FacedetectError(f"the stage threshold {stage_threshold:g} does not fit the "
                              f"cascade's float32 (at most {FLOAT32_LIMIT:g} in size)")
    return atomic_write_text(path, cascade_xml(model, stage_threshold))
