"""Rejection thresholds learnt from training faces ("direct backward pruning").

The exact early rejection of :mod:`._scan` stops a window only when the remaining stumps
could not lift it over the threshold, which for a one-stage detector still evaluates about
half of them. Zhang & Viola's direct backward pruning (2007) adds a per-stump threshold:
the lowest partial score that any training face accepted by the full model has after that
stump. A window below it is rejected. By construction no such training face is lost; other
windows may be, so this is an approximation, measured in the README, and the scanner can
switch it off (``detect --exact``).

The minimum is set by the hardest of tens of thousands of training faces, most of which
score far below the threshold ``detect`` uses. Soft rejection (Bourdev & Brandt's soft
cascade, 2005) takes a low quantile of the running scores instead of their minimum: the
largest quantile on ``QUANTILES`` that rejects at most ``max_loss`` of the training faces
the model accepts at ``threshold``. The faces a detector reports score well above the
lowest training face, so a budget of half a percent there buys a scan about four times as
fast (49 s to 12 s over the held-out pictures, docs/detector-training.md).
``QUANTILES`` is a fine grid, so that the thresholds spend the budget rather than stop
where a coarse grid's next step would overspend it.
"""

from __future__ import annotations

import numpy as np

# Thresholds are lowered by this fraction of the alpha mass, so that summation-order
# rounding can never reject a window the thresholds were meant to keep.
PRUNE_MARGIN = 1e-9


def rejection_thresholds(model, face_windows: np.ndarray, reference: float = 0.0):
    """Per stump, the lowest running score of the faces whose final score exceeds
    ``reference``; ``None`` when no face does."""
    scores = _setting_scores(model, face_windows, reference)
    return None if scores is None else scores.min(axis=0) - _margin(model)


def _setting_scores(model, face_windows: np.ndarray, reference: float):
    """The running scores of the faces whose final score exceeds ``reference`` (None when
    none does): the faces that set rejection thresholds."""
    scores = model.running_scores(face_windows)
    kept = scores[:, -1] > reference
    return scores[kept] if kept.any() else None


def _margin(model) -> float:
    return PRUNE_MARGIN * float(np.sum(model.alphas))


# Quantiles tried by soft rejection, from the boldest down: the first whose loss is within
# budget is kept (0, the minimum, always is). A step of 0.001: the early running scores
# take few values (sums of a handful of alphas), so a coarser grid can stop far short of
# the budget (0.02 spent 2.5% of a 4% budget on the default model, where 0.025 spends
# 3.9% and evaluates a quarter fewer stumps a window).
QUANTILES = tuple(round(0.001 * k, 3) for k in range(50, 0, -1)) + (0.0005, 0.0)


def soft_rejection_thresholds(model, face_windows: np.ndarray, threshold: float,
                              max_loss: float, reference: float = 0.0):
    """Per stump, a low quantile of the running scores of the faces whose final score
    exceeds ``reference``: the largest of ``QUANTILES`` that rejects at most ``max_loss``
    of the faces scoring above ``threshold``.

    Parameters
    ----------
    model : HaarDetectorModel
        A one-stage detector.
    face_windows : (n, h, w) uint8 array
        Training faces.
    threshold : float
        The score above which ``detect`` reports a window; the loss is counted among the
        faces above it.
    max_loss : float
        The largest share of those faces the thresholds may reject, in [0, 1).
    reference : float
        Faces at or below it do not set the thresholds.

    Returns
    -------
    (thresholds, quantile, loss) or None
        The thresholds (one per stump), the quantile taken and the share of the faces
        above ``threshold`` they reject; None when no face exceeds ``reference``, or none
        exceeds ``threshold`` (no loss to count: any quantile would be within budget).

    Examples
    --------
    >>> import importlib.resources
    >>> from facedetect.detector._model import HaarDetectorModel
    >>> import cv2
    >>> from facedetect.data._synthetic import make_toy_windows
    >>> model = HaarDetectorModel.load(
    ...     importlib.resources.files("facedetect") / "models" / "default.json")
    >>> data = make_toy_windows(200, seed=0)
    >>> faces = np.stack([cv2.resize(face, model.window) for face in
    ...                   data.images[data.labels == 1]])       # 19x19 toys, 24x24 model
    >>> thresholds, quantile, loss = soft_rejection_thresholds(
    ...     model, faces, threshold=-50.0, max_loss=0.0, reference=-np.inf)
    >>> thresholds.shape, quantile, loss
    ((1500,), 0.0, 0.0)
    """
    scores = _setting_scores(model, face_windows, reference)
    if scores is None:
        return None
    accepted = scores[scores[:, -1] > threshold]
    if not len(accepted):
        return None
    every_level = np.quantile(scores, QUANTILES, axis=0) - _margin(model)

    def loss_at(k: int) -> float:
        return float(np.mean((accepted < every_level[k]).any(axis=1)))

    # A bolder quantile raises every level, so the loss never falls along QUANTILES: the
    # first within budget is found by bisection (the last, the minimum, loses nothing).
    low, high = 0, len(QUANTILES) - 1
    while low < high:
        middle = (low + high) // 2
        if loss_at(middle) <= max_loss:
            high = middle
        else:
            low = middle + 1
    return every_level[low], QUANTILES[low], loss_at(low)
