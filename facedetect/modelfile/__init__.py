"""The model file: the contract between the trainer and the detector, as OpenCV's cascade
XML is between ``opencv_traincascade`` and ``CascadeClassifier``. Bounded JSON reading,
the schema every field is checked against, the detection section (everything a scan
reads) with the migration of older files, the algorithm names a file may hold, and atomic
saving. Plain data: never code."""

import lazy_loader

# Imported on first use (scikit-image's lazy loader), so that a command's --help
# reads the limits without loading numpy.
__getattr__, __dir__, _ = lazy_loader.attach(__name__, submod_attrs={
    '_io': ['MAX_MODEL_BYTES', 'calibrated_probability', 'load_document', 'parse_json',
            'reseal', 'save_document'],
    '_schema': ['FORMAT', 'READABLE_VERSIONS', 'VERSION', 'check_document', 'digest'],
    '_fields': ['SCAN_LIMITS'],
    '_detection': ['detection_section', 'framing_box', 'migrate'],
    '_registry': ['FILE_ALGORITHMS'],
})

__all__ = ['FILE_ALGORITHMS', 'FORMAT', 'MAX_MODEL_BYTES', 'READABLE_VERSIONS', 'SCAN_LIMITS',
           'VERSION', 'calibrated_probability', 'check_document', 'detection_section',
           'digest', 'framing_box', 'load_document', 'migrate', 'parse_json', 'reseal',
           'save_document']
