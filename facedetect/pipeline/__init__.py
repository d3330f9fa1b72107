"""Training workflows on Haar features: the detector recipe behind ``train-detector``
(:func:`train_detector`), attentional cascades (:func:`train_cascade`), hard-negative
mining, the operating points and resumable checkpoints."""

import lazy_loader

# Imported on first use (scikit-image's lazy loader), so that a command's --help
# and the front door start without numpy, numba and OpenCV.
__getattr__, __dir__, _ = lazy_loader.attach(__name__, submod_attrs={
    '_augment': ['posterize_window'],
    '_bootstrap': ['NegativeSet', 'random_windows', 'skimage_negatives'],
    '_cascade_train': ['CascadeResult', 'train_cascade'],
    '_config': ['TrainConfig'],
    '_plan': ['TrainPlan', 'plan_training'],
    '_settings': ['CascadeConfig', 'RunOptions'],
    '_train': ['TrainResult', 'train_detector'],
    '_wild': ['crop_recall', 'evaluate_wild_faces', 'heldout_faces'],
})

__all__ = ['CascadeConfig', 'CascadeResult', 'NegativeSet', 'RunOptions', 'TrainConfig',
           'TrainPlan', 'TrainResult', 'crop_recall', 'evaluate_wild_faces', 'heldout_faces',
           'plan_training', 'posterize_window', 'random_windows', 'skimage_negatives',
           'train_cascade', 'train_detector']
