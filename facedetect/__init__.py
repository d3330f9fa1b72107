"""facedetect: cost-sensitive face detectors (AdaBoostDB) over Haar features.

The front door::

    import facedetect
    found = facedetect.detect("group.jpg")          # the boxes `detect group.jpg` prints
    detector = facedetect.Detector("default")       # loaded once, for many images
    found = detector.detect("group.jpg", min_neighbors=3)
    model = facedetect.load_model("default")        # the shipped model, or a model file
    result = facedetect.train_detector(facedetect.TrainConfig(cost=(1, 10)))

``detect`` and ``load_model`` find faces (:mod:`facedetect.detector._api`);
``train_detector`` and ``TrainConfig`` train detectors with the command's recipe
(:mod:`facedetect.pipeline`); the estimators (``AdaBoostDB`` and its siblings) boost on
any feature matrix (:mod:`facedetect.training`). They are imported on first use, so that
``import facedetect`` (and every command) starts without loading numba and OpenCV.
"""

from __future__ import annotations

import importlib

from ._utils.threads import prefer_openmp
from ._version import __version__
from .errors import FacedetectError

prefer_openmp()   # before numba starts its threads: _utils/threads.py says why

# name -> the module that defines it; imported on first use (PEP 562).
_FRONT_DOOR = {
    "detect": "facedetect.detector._api",
    "Detector": "facedetect.detector._api",
    "load_model": "facedetect.detector._api",
    "Detections": "facedetect.detector._multiscale",
    "DetectionParams": "facedetect.detector._params",
    "HaarDetectorModel": "facedetect.detector._model",
    "train_detector": "facedetect.pipeline._train",
    "TrainConfig": "facedetect.pipeline._config",
    "recipe_config": "facedetect.pipeline._recipes",
    "TrainResult": "facedetect.pipeline._train",
    "AdaBoostDB": "facedetect.training._algorithms",
    "CostSensitiveAdaBoost": "facedetect.training._algorithms",
    "AdaBoost": "facedetect.training._algorithms",
    "AsymmetricInitAdaBoost": "facedetect.training._algorithms",
}

__all__ = ["FacedetectError", "__version__", *_FRONT_DOOR]


def __getattr__(name: str):
    if name in _FRONT_DOOR:
        value = getattr(importlib.import_module(_FRONT_DOOR[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'facedetect' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)   # the public names only, as scikit-image's lazy packages
