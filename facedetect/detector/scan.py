"""The sliding-window scan of one image level, with exact early rejection.

A window is rejected as soon as its score plus every remaining alpha cannot exceed the
threshold: the remaining stumps could at best all vote for a face. That changes no
decision; it only skips work. Accepted windows are scored in full.

Feature values are computed exactly as in training: integer rectangle sums, weighted and
added in float32 (exact below 2**24), times float32(1/nf) with OpenCV's variance factor over
the window minus a one-pixel border.
"""

from __future__ import annotations

import math

import numba
import numpy as np

# Reject only below threshold - REJECT_MARGIN * sum(alphas): a floating-point sum of the
# remaining terms can exceed their exact bound by a few ulps, never by this much.
REJECT_MARGIN = 1e-9


def stump_arrays(model):
    """Flat arrays of a HaarDetectorModel for the kernel."""
    n = model.n_stumps
    rects = np.zeros((n, 4, 4), dtype=np.int64)
    weights = np.zeros((n, 4), dtype=np.float32)
    counts = np.zeros(n, dtype=np.int64)
    for t, feature in enumerate(model.rects):
        counts[t] = len(feature)
        for r, (x, y, w, h, weight) in enumerate(feature):
            rects[t, r] = (x, y, w, h)
            weights[t, r] = weight
    remaining = np.concatenate([np.cumsum(model.alphas[::-1])[::-1][1:], [0.0]])
    return rects, weights, counts, model.thresholds.astype(np.float64), \
        model.polarities.astype(np.float64), model.alphas.astype(np.float64), remaining


@numba.njit(cache=True, boundscheck=False)
def _window_score(ii, sq, x0, y0, win_w, win_h, rects, weights, counts, thresholds,
                  polarities, alphas, remaining, reject_below, normalize):
    """Score of the window at (x0, y0), or -inf once it can no longer pass."""
    if normalize:
        nx0 = x0 + 1
        ny0 = y0 + 1
        nx1 = x0 + win_w - 1
        ny1 = y0 + win_h - 1
        total = ii[ny1, nx1] - ii[ny0, nx1] - ii[ny1, nx0] + ii[ny0, nx0]
        total_sq = sq[ny1, nx1] - sq[ny0, nx1] - sq[ny1, nx0] + sq[ny0, nx0]
        area = (win_w - 2) * (win_h - 2)
        variance_term = float(area) * float(total_sq) - float(total) * float(total)
        nf = math.sqrt(variance_term) if variance_term > 0 else 1.0
        scale = np.float32(1.0 / nf)
    else:
        scale = np.float32(1.0)
    score = 0.0
    for t in range(alphas.size):
        raw = np.float32(0.0)
        for r in range(counts[t]):
            x = x0 + rects[t, r, 0]
            y = y0 + rects[t, r, 1]
            w = rects[t, r, 2]
            h = rects[t, r, 3]
            s = ii[y + h, x + w] - ii[y, x + w] - ii[y + h, x] + ii[y, x]
            raw += weights[t, r] * np.float32(s)
        value = raw * scale
        if value > thresholds[t]:
            score += alphas[t] * polarities[t]
        else:
            score -= alphas[t] * polarities[t]
        if score + remaining[t] < reject_below:
            return -np.inf
    return score


@numba.njit(parallel=True, cache=True, boundscheck=False)
def _scan_rows(ii, sq, rows, cols, step, win_w, win_h, rects, weights, counts, thresholds,
               polarities, alphas, remaining, reject_below, threshold, normalize, scores):
    """scores[i, j] = score of the window at (j*step, i*step) if it exceeds the threshold."""
    for i in numba.prange(rows):
        y0 = i * step
        for j in range(cols):
            s = _window_score(ii, sq, j * step, y0, win_w, win_h, rects, weights, counts,
                              thresholds, polarities, alphas, remaining, reject_below,
                              normalize)
            scores[i, j] = s if s > threshold else -np.inf


class LevelScanner:
    """Scans levels of an image pyramid with one model."""

    def __init__(self, model, threshold: float = 0.0, early_rejection: bool = True):
        self.model = model
        self.threshold = float(threshold)
        self.arrays = stump_arrays(model)
        total = float(model.alphas.sum())
        self.reject_below = (self.threshold - REJECT_MARGIN * total) if early_rejection \
            else -np.inf
        self.window = model.window

    def scan(self, level: np.ndarray, step: int = 1, row_start: int = 0,
             row_stop: int | None = None):
        """Windows of ``level`` (uint8) whose score exceeds the threshold.

        Only window rows ``row_start <= y < row_stop`` (in steps) are scanned, so that a
        huge level can be scanned in strips. Returns ``(xs, ys, scores)`` in level pixels.
        """
        win_w, win_h = self.window
        height, width = level.shape
        row_stop = height - win_h + 1 if row_stop is None else min(row_stop,
                                                                   height - win_h + 1)
        if width < win_w or row_stop <= row_start:
            return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0)
        first = -(-row_start // step) * step
        strip = level[first:row_stop - 1 + win_h]
        ii = _integral(strip)
        sq = _integral(strip.astype(np.int64) ** 2)
        rows = (row_stop - 1 - first) // step + 1
        cols = (width - win_w) // step + 1
        scores = np.empty((rows, cols))
        _scan_rows(ii, sq, rows, cols, step, win_w, win_h, *self.arrays, self.reject_below,
                   self.threshold, self.model.normalize, scores)
        i, j = np.nonzero(scores > -np.inf)
        return j * step, first + i * step, scores[i, j]


def _integral(image: np.ndarray) -> np.ndarray:
    out = np.zeros((image.shape[0] + 1, image.shape[1] + 1), dtype=np.int64)
    np.cumsum(np.cumsum(image, axis=0, dtype=np.int64), axis=1, out=out[1:, 1:])
    return out
