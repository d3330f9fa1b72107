"""Rejection thresholds learnt from training faces ("direct backward pruning").

The exact early rejection of :mod:`.scan` stops a window only when the remaining stumps
could not lift it over the threshold, which for a one-stage detector still evaluates about
half of them. Zhang & Viola's direct backward pruning (2007) adds a per-stump threshold:
the lowest partial score that any training face accepted by the full model has after that
stump. A window below it is rejected. By construction no such training face is lost; other
windows may be, so this is an approximation, measured in the README, and the scanner can
switch it off (``detect --exact``).
"""

from __future__ import annotations

import numpy as np

# Thresholds are lowered by this fraction of the alpha mass, so that summation-order
# rounding can never reject a window the thresholds were meant to keep.
PRUNE_MARGIN = 1e-9


def partial_scores(model, windows: np.ndarray) -> np.ndarray:
    """(n_windows, n_stumps) running scores, added stump by stump as the scanner adds."""
    values = model.feature_values(windows)
    votes = model.alphas * model.polarities.astype(np.float64)
    outputs = np.where(values > model.thresholds, votes, -votes)
    scores = np.empty_like(outputs)
    running = np.zeros(len(outputs))
    for t in range(outputs.shape[1]):
        running = running + outputs[:, t]
        scores[:, t] = running
    return scores


def rejection_thresholds(model, face_windows: np.ndarray, reference: float = 0.0):
    """Per stump, the lowest running score of the faces whose final score exceeds
    ``reference``; ``None`` when no face does."""
    scores = partial_scores(model, face_windows)
    kept = scores[:, -1] > reference
    if not kept.any():
        return None
    return scores[kept].min(axis=0) - PRUNE_MARGIN * float(np.sum(model.alphas))
