"""facedetect: cost-sensitive face detectors (AdaBoostDB) over Haar features."""

__version__ = "0.2.0"

from .errors import FacedetectError

__all__ = ["FacedetectError", "__version__"]
