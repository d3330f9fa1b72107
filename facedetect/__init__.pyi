"""Type stub of the lazy front door (facedetect/__init__.py imports these on first use):
editors and type checkers see the names and their signatures here."""

from ._version import __version__ as __version__
from .errors import FacedetectError as FacedetectError
from .detector._api import detect as detect, Detector as Detector, load_model as load_model
from .detector._multiscale import Detections as Detections
from .detector._params import DetectionParams as DetectionParams
from .detector._model import HaarDetectorModel as HaarDetectorModel
from .pipeline._train import train_detector as train_detector, TrainResult as TrainResult
from .pipeline._config import TrainConfig as TrainConfig
from .pipeline._recipes import recipe_config as recipe_config
from .training._algorithms import (
    AdaBoostDB as AdaBoostDB,
    CostSensitiveAdaBoost as CostSensitiveAdaBoost,
    AdaBoost as AdaBoost,
    AsymmetricInitAdaBoost as AsymmetricInitAdaBoost,
)

__all__ = [
    "FacedetectError", "__version__", "detect", "Detector", "load_model", "Detections",
    "DetectionParams", "HaarDetectorModel", "train_detector", "TrainConfig", "recipe_config",
    "TrainResult",
    "AdaBoostDB", "CostSensitiveAdaBoost", "AdaBoost", "AsymmetricInitAdaBoost"
]
