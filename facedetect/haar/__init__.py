"""Integral images and the Haar-like feature pool."""

from .features import FEATURE_TYPES, HaarFeaturePool, haar_feature_pool
from .integral import (
    integral_image,
    normalization_factors,
    rectangle_sums,
    squared_integral_image,
)
from .matrix import feature_matrix

__all__ = [
    "FEATURE_TYPES",
    "HaarFeaturePool",
    "haar_feature_pool",
    "integral_image",
    "squared_integral_image",
    "rectangle_sums",
    "normalization_factors",
    "feature_matrix",
]
