"""Boosting: stump search, AdaBoostDB, Cost-Sensitive AdaBoost, AdaBoost, model files."""

import lazy_loader

# Imported on first use (scikit-image's lazy loader), so that a command's --help
# and the front door start without numpy, numba and OpenCV.
__getattr__, __dir__, _ = lazy_loader.attach(__name__, submod_attrs={
    '_algorithms': ['AdaBoost', 'AdaBoostDB', 'AsymmetricInitAdaBoost', 'CostSensitiveAdaBoost'],
    '_boosting': ['BoostedStumps'],
})

__all__ = ['AdaBoost', 'AdaBoostDB', 'AsymmetricInitAdaBoost', 'BoostedStumps',
           'CostSensitiveAdaBoost']
