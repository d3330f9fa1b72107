"""Finding faces with a trained model: the sliding-window scan, grouping, face boxes,
evaluation on annotated images and export to OpenCV. The detector reads model files and
never imports the trainer."""

# facedetect.detect is ._api.detect, a function; the scan over scales is ._multiscale,
# what it returns ._detections.
import lazy_loader

# Imported on first use (scikit-image's lazy loader), so that a command's --help
# and the front door start without numpy, numba and OpenCV.
__getattr__, __dir__, _ = lazy_loader.attach(__name__, submod_attrs={
    '_api': ['Detector', 'load_model', 'shipped_model_path'],
    '_detections': ['Detections', 'Face'],
    '_multiscale': ['detect_faces', 'params_for', 'scanner_for'],
    '_params': ['DetectionParams'],
    '_model': ['HaarDetectorModel'],
})

__all__ = ['DetectionParams', 'Detections', 'Detector', 'Face', 'HaarDetectorModel',
           'detect_faces', 'load_model', 'params_for', 'scanner_for', 'shipped_model_path']
