"""Training workflows on Haar features: the detector recipe behind ``train-detector``
(:func:`train_detector`), attentional cascades (:func:`train_cascade`), hard-negative
mining, the operating points and resumable checkpoints."""

from .cascade import CascadeConfig
from .cascade_train import CascadeResult, train_cascade
from .config import TrainConfig
from .run import RunOptions
from .train import TrainResult, train_detector

__all__ = ["CascadeConfig", "CascadeResult", "RunOptions", "TrainConfig", "TrainResult",
           "train_cascade", "train_detector"]
