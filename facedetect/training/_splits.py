"""Deterministic stratified splits and class-balanced subsets."""

from __future__ import annotations

import numpy as np


def _class_indices(labels: np.ndarray) -> list[np.ndarray]:
    labels = np.asarray(labels)
    return [np.flatnonzero(labels == value) for value in np.unique(labels)]


def stratified_holdout(labels, fraction: float = 0.25, seed: int = 0):
    """Split indices into train and held-out parts, keeping each class's proportion.

    Each class contributes ``round(fraction * class_size)`` samples to the held-out part,
    chosen by a permutation from ``seed``. Both outputs are sorted.

    Returns
    -------
    train_idx, heldout_idx : int arrays

    Examples
    --------
    >>> train, held = stratified_holdout(np.array([1, 1, 1, 1, 0, 0, 0, 0]), 0.25, seed=0)
    >>> len(train), len(held), sorted(np.array([1, 1, 1, 1, 0, 0, 0, 0])[held].tolist())
    (6, 2, [0, 1])
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"holdout fraction must be between 0 and 1, got {fraction}")
    rng = np.random.default_rng(seed)
    held = []
    for members in _class_indices(labels):
        n_held = int(round(fraction * len(members)))
        held.append(rng.permutation(members)[:n_held])
    held = np.sort(np.concatenate(held))
    train = np.setdiff1d(np.arange(len(labels)), held)
    return train, held


def stratified_kfold(labels, n_folds: int = 3, seed: int = 0):
    """``n_folds`` (train_idx, test_idx) pairs; every sample is tested exactly once.

    Each class is permuted with ``seed`` and dealt round-robin into the folds, so fold
    sizes per class differ by at most one.

    Examples
    --------
    >>> folds = list(stratified_kfold(np.array([1] * 6 + [0] * 9), n_folds=3, seed=0))
    >>> [(len(train), len(test)) for train, test in folds]
    [(10, 5), (10, 5), (10, 5)]
    """
    if n_folds < 2:
        raise ValueError("need at least 2 folds")
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    fold_of = np.empty(len(labels), dtype=np.intp)
    for members in _class_indices(labels):
        if len(members) < n_folds:
            raise ValueError(f"a class has {len(members)} samples, fewer than {n_folds} folds")
        fold_of[rng.permutation(members)] = np.arange(len(members)) % n_folds
    return [(np.flatnonzero(fold_of != k), np.flatnonzero(fold_of == k))
            for k in range(n_folds)]


def balanced_subset(labels, seed: int = 0, per_class: int | None = None) -> np.ndarray:
    """Sorted indices with the same number of samples from each class.

    By default every class is cut down to the smallest class's size by a seeded draw.

    Examples
    --------
    >>> labels = np.array([1, 1, 0, 0, 0, 0])
    >>> np.bincount(labels[balanced_subset(labels, seed=0)]).tolist()
    [2, 2]
    """
    groups = _class_indices(labels)
    size = min(len(g) for g in groups) if per_class is None else int(per_class)
    if size > min(len(g) for g in groups):
        raise ValueError(f"per_class={size} exceeds the smallest class")
    rng = np.random.default_rng(seed)
    return np.sort(np.concatenate([rng.permutation(g)[:size] for g in groups]))
