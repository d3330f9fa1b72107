"""Integral images and the Haar-like feature pool."""

import lazy_loader

# Imported on first use (scikit-image's lazy loader), so that a command's --help
# and the front door start without numpy, numba and OpenCV.
__getattr__, __dir__, _ = lazy_loader.attach(__name__, submod_attrs={
    '_features': ['ALL_FEATURE_TYPES', 'FEATURE_TYPES', 'HaarFeaturePool', 'TILTED_TYPES',
                 'haar_feature_pool'],
    '_integral': ['integral_image', 'normalization_factors', 'rectangle_sums',
                 'squared_integral_image', 'tilted_integral_image'],
    '_matrix': ['feature_matrix'],
})

__all__ = ['ALL_FEATURE_TYPES', 'FEATURE_TYPES', 'HaarFeaturePool', 'TILTED_TYPES',
           'feature_matrix', 'haar_feature_pool', 'integral_image', 'normalization_factors',
           'rectangle_sums', 'squared_integral_image', 'tilted_integral_image']
