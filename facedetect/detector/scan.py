"""The sliding-window scan of one image level, with exact early rejection.

A window is rejected as soon as its score plus every remaining alpha cannot exceed the
threshold: the remaining stumps could at best all vote for a face. That changes no
decision; it only skips work. Accepted windows are scored in full. Learnt rejection
thresholds (:mod:`.pruning`), where a model has them, reject earlier; ``pruning=False``
turns them off.

Feature values are computed exactly as in training: integer rectangle sums, weighted and
added in float32 (exact below 2**24), times float32(1/nf) with OpenCV's variance factor over
the window minus a one-pixel border.

The kernel runs stump by stump over the windows of a row that are still alive. A refined
scan (``step="refine"``) is coarse to fine: it scores every second window in both
directions, then the step-1 windows around each coarse window above a coarse threshold
(by default ``REFINE_MARGIN`` below the threshold). Its scores are exact; what it skips is
a window whose coarse neighbours all scored far below the threshold.
"""

from __future__ import annotations

import math

import numba
import numpy as np

# Reject only below threshold - REJECT_MARGIN * sum(alphas): a floating-point sum of the
# remaining terms can exceed their exact bound by a few ulps, never by this much.
REJECT_MARGIN = 1e-9
# A refined scan (``step="refine"``) looks at the step-1 windows around every coarse
# (step-2) window that scored above threshold - REFINE_MARGIN.
REFINE_MARGIN = 10.0


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
    return rects, weights, counts, model.thresholds.astype(np.float64), \
        model.polarities.astype(np.float64), model.alphas.astype(np.float64)


def reject_levels(model, threshold: float, early_rejection: bool = True,
                  pruning: bool = True) -> np.ndarray:
    """Per stump, the running score below which a window stops.

    Exact rejection: ``threshold - (alphas still to come)``, lowered by ``REJECT_MARGIN``
    of the alpha mass. With ``pruning`` and learnt thresholds (:mod:`.pruning`) whose
    reference is at most ``threshold``, the larger of the two; learnt levels are shifted
    down when ``threshold`` is below the lowest final score of the training faces: by
    the difference times the share of the alpha mass spent so far.
    """
    n = model.n_stumps
    if not early_rejection:
        return np.full(n, -np.inf)
    remaining = np.concatenate([np.cumsum(model.alphas[::-1])[::-1][1:], [0.0]])
    levels = threshold - REJECT_MARGIN * float(model.alphas.sum()) - remaining
    rejection = model.rejection if pruning else None
    if rejection is not None and rejection[0] <= threshold:
        learnt = rejection[1]
        # The last learnt level is the lowest final score of a training face. Below it, a
        # lower threshold lowers the learnt levels, so that it still admits more windows
        # instead of being overruled: the last one to the threshold, the earlier ones in
        # proportion to the alpha mass spent, as a window's deficit builds up over the
        # stumps. (Lowering them all by the full difference undoes the pruning where it
        # matters most, on the first stumps.)
        spent = np.cumsum(model.alphas) / float(model.alphas.sum())
        levels = np.maximum(levels, learnt - max(0.0, learnt[-1] - threshold) * spent)
    return levels


def corner_offsets(rects: np.ndarray, stride: int) -> np.ndarray:
    """``(n_stumps, 4, 4)`` flat offsets of each rectangle's corners from a window's
    top-left corner, in an integral image with rows ``stride`` long: top-left, top-right,
    bottom-left, bottom-right."""
    x, y, w, h = (rects[..., k] for k in range(4))
    return np.stack([y * stride + x, y * stride + x + w, (y + h) * stride + x,
                     (y + h) * stride + x + w], axis=-1).astype(np.int64)


@numba.njit(cache=True, boundscheck=False)
def _window_scales(ii, sq, bases, stride, win_w, win_h, normalize, scales):
    """float32(1 / nf) of every window (top-left integral index ``bases[j]``): OpenCV's
    variance factor over the window minus a one-pixel border (1 without normalisation)."""
    area = (win_w - 2) * (win_h - 2)
    for j in range(bases.size):
        if not normalize:
            scales[j] = np.float32(1.0)
            continue
        base = bases[j]
        a = base + stride + 1
        b = base + stride + win_w - 1
        c = base + (win_h - 1) * stride + 1
        d = base + (win_h - 1) * stride + win_w - 1
        total = ii[d] - ii[b] - ii[c] + ii[a]
        total_sq = sq[d] - sq[b] - sq[c] + sq[a]
        variance_term = float(area) * float(total_sq) - float(total) * float(total)
        nf = math.sqrt(variance_term) if variance_term > 0 else 1.0
        scales[j] = np.float32(1.0 / nf)


@numba.njit(cache=True, boundscheck=False, inline="always")
def _stump_on_alive(ii, bases, offsets, weights, n_rects, stump_threshold, vote,
                    stop_below, scales, running, alive, n_alive):
    """One stump on the windows still alive (window ``j`` has its top-left integral index
    at ``bases[j]``); returns how many stay alive (moved to the front of ``alive``).
    Rectangles are added in the model's order, as in training; a stump of one rectangle
    has a second one of zero offsets and weight, which adds exactly zero."""
    a0, b0, c0, d0 = offsets[0]
    a1, b1, c1, d1 = offsets[1]
    a2, b2, c2, d2 = offsets[2]
    a3, b3, c3, d3 = offsets[3]
    w0, w1, w2, w3 = weights[0], weights[1], weights[2], weights[3]
    kept = 0
    for k in range(n_alive):
        j = alive[k]
        base = bases[j]
        feature = np.float32(0.0)
        feature += w0 * np.float32(ii[base + d0] - ii[base + b0] - ii[base + c0] + ii[base + a0])
        feature += w1 * np.float32(ii[base + d1] - ii[base + b1] - ii[base + c1] + ii[base + a1])
        if n_rects > 2:
            feature += w2 * np.float32(ii[base + d2] - ii[base + b2] - ii[base + c2]
                                       + ii[base + a2])
            if n_rects > 3:
                feature += w3 * np.float32(ii[base + d3] - ii[base + b3] - ii[base + c3]
                                           + ii[base + a3])
        if feature * scales[j] > stump_threshold:
            score = running[j] + vote
        else:
            score = running[j] - vote
        running[j] = score
        if not score < stop_below:
            alive[kept] = j
            kept += 1
    return kept


@numba.njit(cache=True, boundscheck=False)
def _score_bases(ii, sq, bases, stride, win_w, win_h, offsets, weights, counts, thresholds,
                 polarities, alphas, reject_at, threshold, normalize, out):
    """out[j] = score of the window whose top-left integral index is ``bases[j]`` if it
    exceeds the threshold, else -inf.

    Stump by stump over the windows still alive, rather than window by window: the
    stump's offsets, weights and threshold stay in registers, neighbouring windows share
    cache lines, and a rejected window leaves the list. Each window's score is still the
    sum of its stumps in the model's order, with the same float32 feature values as
    training, so scores are bit-identical to a window-by-window scan.
    """
    n = bases.size
    scales = np.empty(n, np.float32)
    _window_scales(ii, sq, bases, stride, win_w, win_h, normalize, scales)
    running = np.zeros(n)
    raw = np.empty(n, np.float32)
    alive = np.arange(n)
    n_alive = n
    t = 0
    # While every window is alive (the first few stumps: no face is rejected there),
    # rectangle by rectangle over all windows, loops the compiler vectorises.
    while t < alphas.size and n_alive == n:
        raw[:] = np.float32(0.0)
        for r in range(counts[t]):
            top_left, top_right, bottom_left, bottom_right = offsets[t, r]
            w = weights[t, r]
            for j in range(n):
                base = bases[j]
                s = (ii[base + bottom_right] - ii[base + top_right]
                     - ii[base + bottom_left] + ii[base + top_left])
                raw[j] += w * np.float32(s)
        vote = alphas[t] * polarities[t]
        kept = 0
        for j in range(n):
            score = running[j] + vote if raw[j] * scales[j] > thresholds[t] \
                else running[j] - vote
            running[j] = score
            if not score < reject_at[t]:
                alive[kept] = j
                kept += 1
        n_alive = kept
        t += 1
    for u in range(t, alphas.size):
        if n_alive == 0:
            break
        n_alive = _stump_on_alive(ii, bases, offsets[u], weights[u], counts[u], thresholds[u],
                                  alphas[u] * polarities[u], reject_at[u], scales, running,
                                  alive, n_alive)
    out[:] = -np.inf
    for k in range(n_alive):
        j = alive[k]
        if running[j] > threshold:
            out[j] = running[j]


def _scan_rows_body(ii, sq, stride, rows, cols, step, win_w, win_h, offsets, weights, counts,
                    thresholds, polarities, alphas, reject_at, threshold, normalize, scores):
    """scores[i, j] = score of the window at (j*step, i*step) if it exceeds the threshold,
    else -inf; rows in parallel (in the parallel build)."""
    for i in numba.prange(rows):
        bases = i * step * stride + np.arange(cols) * step
        _score_bases(ii, sq, bases, stride, win_w, win_h, offsets, weights, counts,
                     thresholds, polarities, alphas, reject_at, threshold, normalize,
                     scores[i])


def _score_windows_body(ii, sq, bases, stride, win_w, win_h, offsets, weights, counts,
                        thresholds, polarities, alphas, reject_at, threshold, normalize,
                        scores):
    """:func:`_score_bases` on an arbitrary list of windows, in chunks (parallel in the
    parallel build)."""
    chunk = 256
    for c in numba.prange((bases.size + chunk - 1) // chunk):
        stop = min(bases.size, (c + 1) * chunk)
        _score_bases(ii, sq, bases[c * chunk:stop], stride, win_w, win_h, offsets, weights,
                     counts, thresholds, polarities, alphas, reject_at, threshold,
                     normalize, scores[c * chunk:stop])


# Each kernel in two builds. A parallel region costs a thread wake-up (tens of
# microseconds, and far more when another process holds a core), so work under
# PARALLEL_MIN_WINDOWS windows runs on the calling thread: a 640x480 photograph scans as
# fast serially, and does not slow down 2x beside a busy process (benchmarks/under_load.py).
PARALLEL_MIN_WINDOWS = 150_000
_scan_rows = numba.njit(parallel=True, cache=True, boundscheck=False)(_scan_rows_body)
_scan_rows_serial = numba.njit(cache=True, boundscheck=False)(_scan_rows_body)
_score_windows = numba.njit(parallel=True, cache=True, boundscheck=False)(_score_windows_body)
_score_windows_serial = numba.njit(cache=True, boundscheck=False)(_score_windows_body)


@numba.njit(cache=True)
def _integrals(image, ii, sq):
    """Flat integral and squared-integral images (a zero first row and column) in one pass."""
    height, width = image.shape
    stride = width + 1
    for x in range(stride):
        ii[x] = 0
        sq[x] = 0
    for y in range(height):
        row_sum = 0
        row_sq = 0
        above = y * stride
        here = above + stride
        ii[here] = 0
        sq[here] = 0
        for x in range(width):
            v = np.int64(image[y, x])
            row_sum += v
            row_sq += v * v
            ii[here + x + 1] = ii[above + x + 1] + row_sum
            sq[here + x + 1] = sq[above + x + 1] + row_sq


class LevelScanner:
    """Scans levels of an image pyramid with one model."""

    def __init__(self, model, threshold: float = 0.0, early_rejection: bool = True,
                 pruning: bool = True, coarse_threshold: float | None = None):
        self.model = model
        self.threshold = float(threshold)
        self.arrays = stump_arrays(model)
        self.reject_at = reject_levels(model, self.threshold, early_rejection, pruning)
        # The coarse pass of a refined scan keeps windows down to coarse_threshold
        # (default: threshold - REFINE_MARGIN) and looks around them.
        self.coarse_threshold = (self.threshold - REFINE_MARGIN if coarse_threshold is None
                                 else min(float(coarse_threshold), self.threshold))
        self.coarse_reject_at = reject_levels(model, self.coarse_threshold,
                                              early_rejection, pruning)
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
        if step == "refine":
            return self._scan_refined(level, row_start, row_stop)
        first = -(-row_start // step) * step
        ii, sq, stride = self._strip_integrals(level, first, row_stop)
        rows = (row_stop - 1 - first) // step + 1
        cols = (width - win_w) // step + 1
        scores = self._scan_grid(ii, sq, stride, rows, cols, step, self.reject_at,
                                 self.threshold)
        i, j = np.nonzero(scores > -np.inf)
        return j * step, first + i * step, scores[i, j]

    def _strip_integrals(self, level, first, row_stop):
        """Integral images of the level rows that windows ``first <= y < row_stop`` cover."""
        strip = np.ascontiguousarray(level[first:row_stop - 1 + self.window[1]])
        # int32 sums (half the memory traffic) whenever they cannot overflow.
        small = 255 * strip.size < 2 ** 31
        ii = np.empty((strip.shape[0] + 1) * (strip.shape[1] + 1),
                      np.int32 if small else np.int64)
        sq = np.empty(ii.size, np.int64)
        _integrals(strip, ii, sq)
        return ii, sq, strip.shape[1] + 1

    def _stump_args(self, stride):
        """The model's arrays as the kernels take them, for integral rows ``stride`` long."""
        rects, weights, counts, thresholds, polarities, alphas = self.arrays
        return corner_offsets(rects, stride), weights, counts, thresholds, polarities, alphas

    def _scan_grid(self, ii, sq, stride, rows, cols, step, reject_at, threshold):
        scores = np.empty((rows, cols))
        kernel = _scan_rows if rows * cols >= PARALLEL_MIN_WINDOWS else _scan_rows_serial
        kernel(ii, sq, stride, rows, cols, step, *self.window, *self._stump_args(stride),
                   reject_at, threshold, self.model.normalize, scores)
        return scores

    def _scan_refined(self, level, row_start, row_stop):
        """Coarse to fine: every second window in both directions, then the step-1
        windows next to a coarse window that scored above the coarse threshold. Scores
        are exact; only windows far below the threshold at all their coarse neighbours go
        unscanned."""
        win_w, win_h = self.window
        height, width = level.shape
        total_rows = height - win_h + 1
        first = row_start - row_start % 2          # the coarse grid is on even rows
        coarse_stop = min(row_stop + 1, total_rows)  # the coarse row below the strip
        ii, sq, stride = self._strip_integrals(level, first, coarse_stop)
        cols = width - win_w + 1
        coarse = self._scan_grid(ii, sq, stride, (coarse_stop - 1 - first) // 2 + 1,
                                 (cols - 1) // 2 + 1, 2, self.coarse_reject_at,
                                 self.coarse_threshold)
        ci, cj = np.nonzero(coarse > -np.inf)
        # Step-1 neighbours of the promising coarse windows, off the coarse grid.
        dy, dx = (d.ravel() for d in np.mgrid[-1:2, -1:2])
        ys = (first + 2 * ci)[:, None] + dy
        xs = (2 * cj)[:, None] + dx
        inside = ((ys >= row_start) & (ys < row_stop) & (xs >= 0) & (xs < cols)
                  & ((ys % 2 == 1) | (xs % 2 == 1)))
        fine = np.unique((ys - first)[inside] * cols + xs[inside])
        fy, fx = fine // cols, fine % cols
        fine_scores = np.empty(fine.size)
        kernel = (_score_windows if fine.size >= PARALLEL_MIN_WINDOWS
                  else _score_windows_serial)
        kernel(ii, sq, fy * stride + fx, stride, win_w, win_h,
                       *self._stump_args(stride), self.reject_at, self.threshold,
                       self.model.normalize, fine_scores)
        coarse_y, coarse_x = first + 2 * ci, 2 * cj
        coarse_scores = coarse[ci, cj]
        keep_coarse = (coarse_scores > self.threshold) & (coarse_y >= row_start) \
            & (coarse_y < row_stop)
        keep_fine = fine_scores > -np.inf
        return (np.concatenate([coarse_x[keep_coarse], fx[keep_fine]]),
                np.concatenate([coarse_y[keep_coarse], first + fy[keep_fine]]),
                np.concatenate([coarse_scores[keep_coarse], fine_scores[keep_fine]]))
