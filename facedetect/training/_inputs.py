"""Checking what the estimators are given: the feature matrix, labels and sample weights,
in scikit-learn's terms (the errors are ValueError, as ``check_estimator`` expects)."""

from __future__ import annotations

import math

import numba
import numpy as np
from sklearn.utils.multiclass import check_classification_targets, type_of_target


@numba.njit(parallel=True, cache=True)
def _all_finite(values_t):
    bad = 0
    for f in numba.prange(values_t.shape[0]):
        row = values_t[f]
        for j in range(row.size):
            if not math.isfinite(row[j]):
                bad += 1
                break
    return bad == 0


def feature_major(X) -> np.ndarray:
    """The ``(n_features, n_samples)`` view that the search streams over, copying only if needed."""
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D feature matrix, got shape {X.shape}")
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    values_t = X.T
    return values_t if values_t.flags.c_contiguous else np.ascontiguousarray(values_t)


def check_labels(y, n_samples: int):
    """``(is_positive, classes)``: labels {0,1}, {-1,+1}, booleans, strings; the larger
    (in sorted order) is positive."""
    y = np.asarray(y)
    if y.ndim != 1 or len(y) != n_samples:
        raise ValueError(f"y must be 1-D with {n_samples} labels, got shape {y.shape}")
    check_classification_targets(y)
    classes = np.unique(y)
    if len(classes) > 2:
        raise ValueError(f"Only binary classification is supported. The type of the target "
                         f"is {type_of_target(y)}: {len(classes)} classes")
    if len(classes) != 2:
        raise ValueError(f"training needs exactly two classes, got 1 class: "
                         f"{classes.tolist()}")
    return y == classes[1], classes


def _check_sample_weight(sample_weight, n_samples: int) -> np.ndarray:
    """Finite non-negative float64 weights, ones when None."""
    if sample_weight is None:
        return np.ones(n_samples)
    weights = np.asarray(sample_weight, dtype=np.float64)
    if weights.shape != (n_samples,) or not np.isfinite(weights).all() or (weights < 0).any():
        raise ValueError(f"sample_weight must be {n_samples} finite non-negative numbers, "
                         f"got shape {weights.shape}")
    return weights
