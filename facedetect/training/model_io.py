"""Model files: versioned JSON, validated on load, with a checksum against tampering.

The file is plain data (never code, never pickle)::

    {"format": "facedetect-model", "version": 1,
     "algorithm": "db", "selection": "root", "search": "conditional", "cost": [1, 10],
     "classes": [0, 1], "n_features": 63960,
     "stumps": [{"feature": 123, "threshold": 0.25, "polarity": 1, "alpha": 0.8}, ...],
     "features": {"kind": "haar", "window": [19, 19], "normalization": "opencv-variance",
                  "rects": [[[x, y, w, h, weight], ...], ...]}   # one list per stump
     "training": {... data fingerprint, split, per-round diagnostics ...},
     "operating_point": {"threshold": 1.7, "cost": [1, 10], "prior": 0.35,
                         "rule": "expected-cost", "source": "calibration-split",
                         "n_calibration": 1046, "expected_cost": 0.01, "extreme": null,
                         "calibration": null | {"method": "sigmoid", "a": .., "b": ..}
                                             | {"method": "isotonic", "x": [..], "y": [..]},
                         "raw_threshold": 0.0, "applies_to": "windows"},
     "sha256": "<hash of everything above>"}

``operating_point`` is optional: a model written before it existed (or trained with
``--calibration-split 0``) decides at the raw threshold 0, and says so.

Floats are written with Python's shortest round-trip repr, so a loaded model gives
bit-identical decisions.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np

from ..atomic import atomic_write_text
from ..errors import FacedetectError
from .boosting import (
    AdaBoost,
    AdaBoostDB,
    AsymmetricInitAdaBoost,
    BoostedStumps,
    CostSensitiveAdaBoost,
)

FORMAT = "facedetect-model"
VERSION = 1
ALGORITHMS = {"db": AdaBoostDB, "cs": CostSensitiveAdaBoost, "adaboost": AdaBoost,
              "asym-init": AsymmetricInitAdaBoost}


def _digest(document: dict) -> str:
    body = {k: v for k, v in document.items() if k != "sha256"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def model_document(model: BoostedStumps, features: dict | None = None,
                   training: dict | None = None, operating_point: dict | None = None,
                   cost=None) -> dict:
    """The JSON-ready description of a fitted model.

    ``cost`` (default: the estimator's) is the cost the model serves; it differs from the
    estimator's for cost-free AdaBoost whose operating point carries the costs (AdaMEC).
    """
    model._check_fitted()
    stumps = [{"feature": int(f), "threshold": float(t), "polarity": int(p), "alpha": float(a)}
              for f, t, p, a in zip(model.features_, model.thresholds_, model.polarities_,
                                    model.alphas_)]
    document = {
        "format": FORMAT, "version": VERSION, "algorithm": model.algorithm,
        "selection": model.selection, "search": model.search,
        "cost": [float(c) for c in (model.cost if cost is None else cost)],
        "classes": [c.item() if hasattr(c, "item") else c for c in model.classes_],
        "n_features": int(model.n_features_in_), "stumps": stumps,
        "features": features or {"kind": "matrix"},
        "training": training or {},
    }
    if operating_point is not None:
        document["operating_point"] = operating_point
    document["sha256"] = _digest(document)
    return document


def save_model(path, model: BoostedStumps, features: dict | None = None,
               training: dict | None = None) -> Path:
    """Write the model atomically as JSON."""
    return save_document(path, model_document(model, features, training))


def save_document(path, document: dict) -> Path:
    """Write a model document atomically as JSON, with a fresh checksum."""
    document = reseal(dict(document))
    return atomic_write_text(path, json.dumps(document, indent=1, allow_nan=False) + "\n")


def reseal(document: dict) -> dict:
    """Recompute the checksum after a deliberate change (e.g. adding rejection thresholds)."""
    document["sha256"] = _digest(document)
    return document


def _fail(path, message):
    raise FacedetectError(f"{path}: invalid model file: {message}")


def _check_features(path, features, n_stumps):
    kind = features.get("kind")
    if kind == "matrix":
        return
    if kind != "haar":
        _fail(path, f"unknown feature kind {kind!r}")
    window = features.get("window")
    if not (isinstance(window, list) and len(window) == 2
            and all(isinstance(v, int) and 3 <= v <= 4096 for v in window)):
        _fail(path, "features.window must be [width, height]")
    rects = features.get("rects")
    if not isinstance(rects, list) or len(rects) != n_stumps:
        _fail(path, "features.rects must hold one rectangle list per stump")
    width, height = window
    for i, feature in enumerate(rects):
        if not isinstance(feature, list) or not 1 <= len(feature) <= 4:
            _fail(path, f"feature {i} must have 1 to 4 rectangles")
        for rect in feature:
            if not (isinstance(rect, list) and len(rect) == 5
                    and all(isinstance(v, int) for v in rect[:4])
                    and isinstance(rect[4], (int, float)) and math.isfinite(rect[4])):
                _fail(path, f"feature {i} has a malformed rectangle {rect!r}")
            x, y, w, h, _ = rect
            if x < 0 or y < 0 or w < 1 or h < 1 or x + w > width or y + h > height:
                _fail(path, f"feature {i} has a rectangle outside the window: {rect!r}")
    if features.get("normalization") not in ("opencv-variance", "none"):
        _fail(path, "features.normalization must be 'opencv-variance' or 'none'")
    if "rejection" in features:
        rejection = features["rejection"]
        if not (isinstance(rejection, dict)
                and isinstance(rejection.get("reference"), (int, float))
                and math.isfinite(rejection["reference"])
                and isinstance(rejection.get("thresholds"), list)
                and len(rejection["thresholds"]) == n_stumps
                and all(isinstance(v, (int, float)) and math.isfinite(v)
                        for v in rejection["thresholds"])):
            _fail(path, "features.rejection must hold a finite reference and one finite "
                        "threshold per stump")


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value)


def _check_calibration(path, calibration):
    if calibration is None:
        return
    method = calibration.get("method") if isinstance(calibration, dict) else None
    if method == "sigmoid":
        if not (_finite(calibration.get("a")) and _finite(calibration.get("b"))):
            _fail(path, "operating_point.calibration: a sigmoid needs finite a and b")
    elif method == "isotonic":
        x, y = calibration.get("x"), calibration.get("y")
        if not (isinstance(x, list) and isinstance(y, list) and 1 <= len(x) == len(y)
                and all(map(_finite, x)) and all(_finite(v) and 0 <= v <= 1 for v in y)
                and all(a <= b for a, b in zip(x, x[1:]))
                and all(a <= b for a, b in zip(y, y[1:]))):
            _fail(path, "operating_point.calibration: an isotonic map needs equal-length "
                        "increasing x and y lists, y within [0, 1]")
    else:
        _fail(path, f"operating_point.calibration: unknown method {method!r}")


def _check_operating_point(path, point):
    if point is None:
        return
    if not isinstance(point, dict):
        _fail(path, "operating_point must be an object")
    cost = point.get("cost")
    if not (_finite(point.get("threshold")) and isinstance(cost, list) and len(cost) == 2
            and all(_finite(c) and c > 0 for c in cost)
            and _finite(point.get("prior")) and 0 < point["prior"] < 1
            and point.get("rule") in ("expected-cost", "probability")
            and isinstance(point.get("source"), str)
            and point.get("extreme") in (None, "accept-all", "reject-all")):
        _fail(path, "operating_point needs a finite threshold, two positive costs, a prior "
                    "in (0, 1), a known rule and source")
    _check_calibration(path, point.get("calibration"))


def _check_detection(path, detection):
    """The image operating point: what ``detect`` scans with unless told otherwise."""
    if detection is None:
        return
    if not isinstance(detection, dict):
        _fail(path, "detection must be an object")
    step = detection.get("step")
    if not (_finite(detection.get("threshold"))
            and isinstance(detection.get("min_neighbors"), int)
            and 0 <= detection["min_neighbors"] <= 1000
            and _finite(detection.get("neighbor_margin"))
            and 0 <= detection["neighbor_margin"] <= 1e6
            and _finite(detection.get("scale_factor"))
            and 1.001 <= detection["scale_factor"] <= 10
            and (step in ("auto", "refine") or (isinstance(step, int) and 1 <= step <= 1000))
            and isinstance(detection.get("min_size"), int) and 1 <= detection["min_size"]
            and detection.get("applies_to") == "images"):
        _fail(path, "detection needs a finite threshold, min_neighbors 0..1000, a "
                    "neighbor_margin >= 0, a scale_factor in [1.001, 10], a step, a "
                    "min_size and applies_to 'images'")


def load_document(path) -> dict:
    """Read and validate a model file; any problem is one clear FacedetectError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FacedetectError(f"{path}: model file not found") from None
    except (OSError, UnicodeDecodeError) as error:
        raise FacedetectError(f"{path}: cannot read model file ({error})") from None
    try:
        document = json.loads(text, parse_constant=lambda c: _fail(path, f"{c} is not allowed"))
    except json.JSONDecodeError as error:
        raise FacedetectError(f"{path}: not a facedetect model (invalid JSON: {error.msg} "
                              f"at line {error.lineno})") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        _fail(path, "not a facedetect model (format field missing)")
    if document.get("version") != VERSION:
        _fail(path, f"unsupported version {document.get('version')!r} (this is {VERSION})")
    if document.get("sha256") != _digest(document):
        _fail(path, "checksum mismatch: the file was modified after it was written")
    if document.get("algorithm") not in ALGORITHMS:
        _fail(path, f"unknown algorithm {document.get('algorithm')!r}")
    cost = document.get("cost")
    if not (isinstance(cost, list) and len(cost) == 2
            and all(isinstance(c, (int, float)) and 0 < c < math.inf for c in cost)):
        _fail(path, "cost must be two positive numbers")
    n_features = document.get("n_features")
    if not isinstance(n_features, int) or n_features < 1:
        _fail(path, "n_features must be a positive integer")
    stumps = document.get("stumps")
    if not isinstance(stumps, list) or not stumps:
        _fail(path, "no stumps")
    for i, stump in enumerate(stumps):
        if not (isinstance(stump, dict)
                and isinstance(stump.get("feature"), int) and 0 <= stump["feature"] < n_features
                and stump.get("polarity") in (1, -1)
                and all(isinstance(stump.get(k), (int, float)) and math.isfinite(stump[k])
                        for k in ("threshold", "alpha"))):
            _fail(path, f"stump {i} is malformed: {stump!r}")
    classes = document.get("classes")
    if not (isinstance(classes, list) and len(classes) == 2):
        _fail(path, "classes must list the two labels")
    _check_features(path, document.get("features") or {}, len(stumps))
    _check_operating_point(path, document.get("operating_point"))
    _check_detection(path, document.get("detection"))
    return document


def estimator_from_document(document: dict) -> BoostedStumps:
    """A fitted estimator with the document's stumps (no training state)."""
    cls = ALGORITHMS[document["algorithm"]]
    stumps = document["stumps"]
    params = {"n_rounds": len(stumps)}
    if cls is not AdaBoost:
        params["cost"] = tuple(document["cost"])
    if cls is AdaBoostDB:
        params.update(search=document["search"], selection=document["selection"])
    model = cls(**params)
    model.features_ = np.array([s["feature"] for s in stumps], dtype=np.int64)
    model.thresholds_ = np.array([s["threshold"] for s in stumps], dtype=np.float64)
    model.polarities_ = np.array([s["polarity"] for s in stumps], dtype=np.int8)
    model.alphas_ = np.array([s["alpha"] for s in stumps], dtype=np.float64)
    model.n_rounds_ = len(stumps)
    model.n_features_in_ = document["n_features"]
    model.classes_ = np.array(document["classes"])
    return model


def load_model(path) -> tuple[BoostedStumps, dict]:
    """``(estimator, document)`` from a model file."""
    document = load_document(path)
    return estimator_from_document(document), document
