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


def rejection_thresholds(model, face_windows: np.ndarray, reference: float = 0.0):
    """Per stump, the lowest running score of the faces whose final score exceeds
    ``reference``; ``None`` when no face does."""
    scores = model.running_scores(face_windows)
    kept = scores[:, -1] > reference
    if not kept.any():
        return None
    return scores[kept].min(axis=0) - PRUNE_MARGIN * float(np.sum(model.alphas))
