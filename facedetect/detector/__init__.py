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
    '_calibrate': ['calibrate', 'image_operating_point'],
    '_calibrate_opencv': ['OPENCV_MIN_NEIGHBORS', 'OPENCV_SCALE_FACTOR',
                          'opencv_operating_point'],
    '_detections': ['Detections', 'Face'],
    '_export': ['cascade_xml', 'export_opencv'],
    '_image_evaluation': ['evaluation_images', 'inside_boxes', 'iou_matrix', 'match',
                          'read_annotations'],
    '_multiscale': ['box_mapping', 'detect_faces', 'params_for', 'scanner_for',
                    'window_to_box'],
    '_params': ['DetectionParams'],
    '_model': ['HaarDetectorModel'],
    '_staging': ['exported_form', 'with_export_levels'],
})

__all__ = ['DetectionParams', 'Detections', 'Detector', 'Face', 'HaarDetectorModel',
           'OPENCV_MIN_NEIGHBORS', 'OPENCV_SCALE_FACTOR', 'box_mapping', 'calibrate',
           'cascade_xml', 'detect_faces', 'evaluation_images', 'export_opencv',
           'exported_form', 'image_operating_point', 'inside_boxes', 'iou_matrix',
           'load_model', 'match', 'opencv_operating_point', 'params_for', 'read_annotations',
           'scanner_for', 'shipped_model_path', 'window_to_box', 'with_export_levels']
