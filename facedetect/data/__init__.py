"""Data access: CBCL faces, the paper's synthetic sets, and the UCI sets."""

import lazy_loader

# Imported on first use (scikit-image's lazy loader), so that a command's --help
# and the front door start without numpy, numba and OpenCV.
__getattr__, __dir__, _ = lazy_loader.attach(__name__, submod_attrs={
    '_cbcl': ['CBCLData', 'framed_windows', 'load_cbcl'],
    '_face_windows': ['eye_line_for', 'face_windows'],
    '_negatives': ['find_negatives', 'negative_files', 'split_negatives',
                   'split_training_negatives'],
    '_fetch': ['check_archive', 'fetch_cbcl'],
    '_locate': ['find_cbcl'],
    '_synthetic': ['BayesOptimalClassifier', 'make_bayes', 'make_toy_windows', 'make_two_clouds',
                  'projection_features'],
    '_uci': ['UCI_SETS', 'load_uci'],
    '_wild_faces': ['WildFaces', 'find_faces', 'find_faces_folder', 'heldout_mask',
                    'load_wild_faces'],
})

__all__ = ['BayesOptimalClassifier', 'CBCLData', 'UCI_SETS', 'WildFaces', 'check_archive',
           'eye_line_for', 'face_windows', 'fetch_cbcl', 'find_cbcl', 'find_faces_folder',
           'find_negatives', 'framed_windows', 'heldout_mask', 'load_cbcl', 'load_uci',
           'load_wild_faces', 'make_bayes', 'make_toy_windows', 'make_two_clouds',
           'negative_files', 'projection_features', 'split_negatives',
           'split_training_negatives']
