"""Finding faces with a trained model: the sliding-window scan, grouping, face boxes,
evaluation on annotated images and export to OpenCV. The detector reads model files and
never imports the trainer."""

# facedetect.detect is .api.detect; here "detect" stays the module (detector/detect.py).
from .api import Detector, load_model, shipped_model_path
from .detect import DetectionParams, Detections, Face, detect_faces, params_for, scanner_for
from .model import HaarDetectorModel

__all__ = ["DetectionParams", "Detections", "Detector", "Face", "HaarDetectorModel", "detect_faces",
           "load_model", "params_for", "scanner_for", "shipped_model_path"]
