"""Integral images, the Haar-like feature pool, and the channel features over the
gradient channels."""

import lazy_loader

# Imported on first use (scikit-image's lazy loader), so that a command's --help
# and the front door start without numpy, numba and OpenCV.
__getattr__, __dir__, _ = lazy_loader.attach(__name__, submod_attrs={
    '_channels': ['CHANNEL_TYPES', 'channel_integrals', 'gradient_channels'],
    '_features': ['ALL_FEATURE_TYPES', 'FEATURE_KINDS', 'FEATURE_TYPES', 'HaarFeaturePool',
                 'TILTED_TYPES', 'haar_feature_pool'],
    '_integral': ['integral_image', 'normalization_factors', 'rectangle_sums',
                 'squared_integral_image', 'tilted_integral_image'],
    '_matrix': ['feature_matrix'],
})

__all__ = ['ALL_FEATURE_TYPES', 'CHANNEL_TYPES', 'FEATURE_KINDS', 'FEATURE_TYPES',
           'HaarFeaturePool', 'TILTED_TYPES', 'channel_integrals', 'feature_matrix',
           'gradient_channels', 'haar_feature_pool', 'integral_image', 'normalization_factors',
           'rectangle_sums', 'squared_integral_image', 'tilted_integral_image']
