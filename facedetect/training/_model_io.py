"""Model files: versioned JSON, validated on load, with a checksum against tampering.

The file is plain data (never code, never pickle)::

    {"format": "facedetect-model", "version": 3,
     "algorithm": "db", "selection": "root", "search": "conditional", "cost": [1, 10],
     "classes": [0, 1], "n_features": 63960,
     "stumps": [{"feature": 123, "threshold": 0.25, "polarity": 1, "alpha": 0.8}, ...],
     "features": {"kind": "haar", "normalization": "opencv-variance",
                  "rects": [[[x, y, w, h, weight], ...], ...]}   # one list per stump
     "training": {... data fingerprint, split, per-round diagnostics ...},
     "operating_point": {"threshold": 1.7, "cost": [1, 10], "prior": 0.35,
                         "rule": "expected-cost", "source": "calibration-split",
                         "n_calibration": 1046, "expected_cost": 0.01, "extreme": null,
                         "calibration": null | {"method": "sigmoid", "a": .., "b": ..}
                                             | {"method": "isotonic", "x": [..], "y": [..]},
                         "raw_threshold": 0.0, "applies_to": "windows"},
     "detection": {"window": [19, 19], "framing": 1.75, "box_scale": 2.0, "box_shift": 0.1,
                   "threshold": 1.7, "min_neighbors": 3, "scale_factor": 1.1, ...,
                   "applies_to": "windows" | "images", "rejection": {...}, "stages": [...]},
     "calibration": {"image": {"target_false_alarms_per_megapixel": 0.25, ...}},
     "sha256": "<hash of everything above>"}

A model of Haar features always has its ``detection`` section: everything the detector
reads besides the stumps' rectangles (:mod:`facedetect.modelfile._detection`); how its
operating points for pictures were chosen is ``calibration``
(:mod:`facedetect.modelfile._calibration`). Version 1 and 2 files are migrated on read.
``operating_point`` is optional: a model written before it existed (or trained with
``--calibration-split 0``) decides at the raw threshold 0, and says so.

Floats are written with Python's shortest round-trip repr, so a loaded model gives
bit-identical decisions.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..modelfile._io import FORMAT, VERSION, digest, load_document, save_document
from ._algorithms import FILE_CLASSES
from ._algorithms import AdaBoost, AdaBoostDB
from ._boosting import BoostedStumps

__all__ = ["model_document", "save_model", "estimator_from_document", "load_estimator"]


def model_document(model: BoostedStumps, features: dict | None = None,
                   training: dict | None = None, operating_point: dict | None = None,
                   cost=None, detection: dict | None = None) -> dict:
    """The JSON-ready description of a fitted model.

    ``cost`` (default: the estimator's) is the cost the model serves; it differs from the
    estimator's for cost-free AdaBoost whose operating point carries the costs (AdaMEC).
    A model of Haar features also has its ``detection`` section
    (:func:`facedetect.modelfile._detection.detection_section`).

    Examples
    --------
    >>> from facedetect.training import AdaBoost
    >>> document = model_document(AdaBoost(1).fit(np.array([[0.0], [1.0]]), [0, 1]))
    >>> document["format"]
    'facedetect-model'
    >>> document["stumps"]
    [{'feature': 0, 'threshold': 0.5, 'polarity': 1, 'alpha': 0.5493061443340549}]
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
    if detection is not None:
        document["detection"] = detection
    document["sha256"] = digest(document)
    return document


def save_model(path, model: BoostedStumps, features: dict | None = None,
               training: dict | None = None, detection: dict | None = None) -> Path:
    """Write the model atomically as JSON (Haar ``features`` need their ``detection``
    section: :func:`facedetect.modelfile._detection.detection_section`).

    Examples
    --------
    >>> import tempfile
    >>> from facedetect.training import AdaBoostDB
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> model = AdaBoostDB(n_rounds=1, cost=(1, 10)).fit(X, [0, 0, 1, 1])
    >>> path = save_model(Path(tempfile.mkdtemp()) / "model.json", model)
    >>> loaded, document = load_estimator(path)
    >>> document["algorithm"], document["cost"], loaded.predict(X).tolist()
    ('db', [1.0, 10.0], [0, 0, 1, 1])
    """
    return save_document(path, model_document(model, features, training,
                                              detection=detection))


def estimator_from_document(document: dict) -> BoostedStumps:
    """A fitted estimator with the document's stumps (no training state)."""
    cls = FILE_CLASSES[document["algorithm"]]
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


def load_estimator(path) -> tuple[BoostedStumps, dict]:
    """``(estimator, document)`` from a model file.

    Examples
    --------
    >>> import tempfile
    >>> from facedetect.training import AdaBoost
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> path = save_model(Path(tempfile.mkdtemp()) / "m.json", AdaBoost(1).fit(X, [0, 0, 1, 1]))
    >>> model, document = load_estimator(path)
    >>> type(model).__name__, len(document["stumps"]), len(document["sha256"])
    ('AdaBoost', 1, 64)
    """
    document = load_document(path)
    return estimator_from_document(document), document
