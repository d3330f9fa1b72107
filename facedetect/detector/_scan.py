"""The sliding-window scan of one image level, with exact early rejection.

A window is rejected as soon as its score plus every remaining alpha cannot exceed the
threshold: the remaining stumps could at best all vote for a face. That changes no
decision; it only skips work. Accepted windows are scored in full. Learnt rejection
thresholds (:mod:`._pruning`), where a model has them, reject earlier; ``pruning=False``
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

import cv2
import numpy as np

from ..haar._channels import CHANNEL_TYPES, channel_integrals_into, integral_blocks
from ..haar._features import corner_weights
from ..haar._integral import tilted_integral_into
from ._scan_kernels import (
    _integrals,
    _scan_rows,
    _scan_rows_serial,
    _score_windows,
    _score_windows_serial,
)

# Reject only below threshold - REJECT_MARGIN * sum(alphas): a floating-point sum of the
# remaining terms can exceed their exact bound by a few ulps, never by this much.
REJECT_MARGIN = 1e-9
# A refined scan (``step="refine"``) looks at the step-1 windows around every coarse
# (step-2) window that scored above threshold - REFINE_MARGIN.
REFINE_MARGIN = 10.0
# A refined scan's coarse grid: every REFINE_STEP-th window in both directions.
REFINE_STEP = 2
# Strips of fewer pixels have integral sums that fit in int32 (the gradient channels are
# 8-bit too).
INT32_PIXELS = 2 ** 31 // 255
N_CHANNELS = len(CHANNEL_TYPES)


def _stump_arrays(model):
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
    # A cascade's stage sums start from zero: the running score is multiplied by 0 after
    # the last stump of every stage but the last (and by 1, exactly, elsewhere).
    carry = np.ones(n)
    carry[model.stage_ends()[:-1]] = 0.0
    return ((rects, model.tilted, model.channels), weights, counts,
            model.thresholds.astype(np.float64), model.polarities.astype(np.float64),
            model.alphas.astype(np.float64), carry)


def reject_levels(model, threshold: float, early_rejection: bool = True,
                  pruning: bool = True) -> np.ndarray:
    """Per stump, the running score below which a window stops.

    Exact rejection: ``threshold - (alphas still to come)``, lowered by ``REJECT_MARGIN``
    of the alpha mass. With ``pruning`` and learnt thresholds (:mod:`._pruning`), the
    larger of the two; learnt levels are shifted down when ``threshold`` is below their
    last one (the final score of the faces that set them): by the difference times the
    share of the alpha mass spent so far. That holds below their reference too: dropping
    them there made a scan at a threshold a little lower twenty times slower (a refined
    scan's coarse pass runs ``REFINE_MARGIN`` below the threshold).
    """
    n = model.n_stumps
    if model.stages:
        return _cascade_levels(model, threshold, early_rejection)
    if not early_rejection:
        return np.full(n, -np.inf)
    levels = _exact_levels(model.alphas, threshold)
    rejection = model.rejection if pruning else None
    if rejection is not None:
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


def _exact_levels(alphas: np.ndarray, threshold: float) -> np.ndarray:
    """Per stump, ``threshold`` less the alphas still to come (and a rounding margin)."""
    remaining = np.concatenate([np.cumsum(alphas[::-1])[::-1][1:], [0.0]])
    return threshold - REJECT_MARGIN * float(alphas.sum()) - remaining


def _cascade_levels(model, threshold: float, early_rejection: bool) -> np.ndarray:
    """Reject levels of a cascade: exact rejection within each stage, the stage's own
    decision (a sum above its threshold) at its end; ``threshold`` replaces the last
    stage's."""
    levels = np.full(model.n_stumps, -np.inf)
    start = 0
    for k, (count, stage_threshold) in enumerate(model.stages):
        end = start + count
        last = k == len(model.stages) - 1
        if early_rejection:
            levels[start:end] = _exact_levels(model.alphas[start:end],
                                              threshold if last else stage_threshold)
        if not last:  # keep exactly the sums above the threshold: >= its successor
            levels[end - 1] = np.nextafter(stage_threshold, np.inf)
        start = end
    return levels


def _corner_geometry(rects: np.ndarray, tilted=None, channels=None):
    """``(xs, ys, blocks)``: the ``(n_stumps, 4, 4)`` corner coordinates of each
    rectangle of each stump, in the order of
    :func:`~facedetect.haar._features.corner_weights` (the kernels add ``a - b - c + d``),
    and the integral block each stump reads: a tilted stump's corners (``tilted``) are in
    the tilted integral image, and a channel feature's (``channels``) in its channel's,
    in :func:`~facedetect.haar._channels.integral_blocks`' order. They do not depend on
    the image, so a scanner works them out once (:func:`_corner_offsets` places them)."""
    rect = tuple(rects[..., k] for k in range(4))
    n = len(rects)
    tilted = np.zeros(n, bool) if tilted is None else np.asarray(tilted, bool)
    channels = np.full(n, -1) if channels is None else np.asarray(channels)
    upright, turned = (np.stack([np.stack([cx, cy]) for cx, cy, _ in
                                 corner_weights(rect, kind)], axis=-1)
                       for kind in (False, True))
    xs, ys = np.where(tilted[:, None, None], turned, upright).astype(np.int64)
    blocks, _ = integral_blocks(tilted, channels)
    return xs, ys, np.asarray(blocks, np.int64)


def _corner_offsets(geometry, stride: int, block_size: int = 0) -> np.ndarray:
    """``(n_stumps, 4, 4)`` flat offsets of each rectangle's corners from a window's
    top-left corner, for :func:`_corner_geometry`'s ``geometry`` in integral images with
    rows ``stride`` long that follow one another ``block_size`` apart (the upright sums,
    then the tilted ones and the channels', as :meth:`LevelScanner._strip_integrals`
    lays them out).

    Examples
    --------
    >>> rects = np.array([[[1, 2, 3, 4]] * 4])   # one stump: a 3x4 rectangle at (1, 2)
    >>> _corner_offsets(_corner_geometry(rects), stride=10)[0, 0].tolist()
    [21, 24, 61, 64]
    """
    xs, ys, blocks = geometry
    return blocks[:, None, None] * block_size + ys * stride + xs


# The row and window kernels come in two builds (:mod:`._scan_kernels`). A parallel region
# costs a thread wake-up (tens of microseconds, and far more when another process holds a
# core), so work under PARALLEL_MIN_WINDOWS windows runs on the calling thread: a 640x480
# photograph scans as fast serially, and does not slow down 2x beside a busy process
# (python -m benchmarks.detect_speed --wait-policies).
PARALLEL_MIN_WINDOWS = 150_000


class LevelScanner:
    """Scans levels of an image pyramid with one model."""

    def __init__(self, model, threshold: float = 0.0, early_rejection: bool = True,
                 pruning: bool = True, coarse_threshold: float | None = None,
                 parallel_min_windows: int | None = None, like_opencv: bool = False,
                 decision_threshold: float | None = None):
        self.model = model
        # A scan that stands in for OpenCV's (step "auto") leaves out the windows OpenCV's
        # CascadeClassifier never scores: flat ones (a standard deviation of at most 10
        # grey levels) and, along a row, the one after a first-stage rejection.
        self.like_opencv = bool(like_opencv)
        # Which windows a one-stage model's only stage rejects (for the row's step-over)
        # depends on the decision threshold, which may lie above the scan threshold.
        self.decision_threshold = (float(threshold) if decision_threshold is None
                                   else max(float(decision_threshold), float(threshold)))
        # Calls of fewer windows run on the calling thread (default PARALLEL_MIN_WINDOWS);
        # 0 for a batch job that has the machine to itself, as training's scans do.
        self.parallel_min_windows = (PARALLEL_MIN_WINDOWS if parallel_min_windows is None
                                     else parallel_min_windows)
        self.threshold = float(threshold)
        self.arrays = _stump_arrays(model)
        (rects, tilted, channels), *_ = self.arrays
        self.geometry = _corner_geometry(rects, tilted, channels)
        self.has_tilted = bool(np.any(model.tilted))
        self.has_channels = bool(np.any(model.channels >= 0))
        self._stumps_by_stride = {}
        self.reject_at = reject_levels(model, self.threshold, early_rejection, pruning)
        # The coarse pass of a refined scan keeps windows down to coarse_threshold
        # (default: threshold - REFINE_MARGIN) and looks around them.
        self.coarse_threshold = (self.threshold - REFINE_MARGIN if coarse_threshold is None
                                 else min(float(coarse_threshold), self.threshold))
        self.coarse_reject_at = reject_levels(model, self.coarse_threshold,
                                              early_rejection, pruning)
        self.window = model.window
        # int32 rectangle sums where they fit (a test turns them off to compare)
        self.narrow_sums = True

    def scan(self, level: np.ndarray, step: int = 1, row_start: int = 0,
             row_stop: int | None = None, serial: bool = False):
        """Windows of ``level`` (uint8) whose score exceeds the threshold.

        Only window rows ``row_start <= y < row_stop`` (in steps) are scanned, so that a
        huge level can be scanned in strips. ``serial``: the kernels on the calling thread
        whatever the size (for a caller that runs scans on threads of its own). Returns
        ``(xs, ys, scores)`` in level pixels.
        """
        win_w, win_h = self.window
        height, width = level.shape
        row_stop = height - win_h + 1 if row_stop is None else min(row_stop,
                                                                   height - win_h + 1)
        if width < win_w or row_stop <= row_start:
            return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0)
        if step == "refine":
            return self._scan_refined(level, row_start, row_stop, serial)
        first = -(-row_start // step) * step
        image = self._strip_integrals(level, first, row_stop)
        rows = (row_stop - 1 - first) // step + 1
        cols = (width - win_w) // step + 1
        scores = self._scan_grid(image, rows, cols, step, self.reject_at, self.threshold,
                                 serial)
        i, j = np.nonzero(scores > -np.inf)
        return j * step, first + i * step, scores[i, j]

    def _strip_integrals(self, level, first, row_stop):
        """Integral images of the level rows that windows ``first <= y < row_stop`` cover:
        ``(sums, squared sums, stride)``, the sums followed by the tilted sums for a
        model with tilted features (as OpenCV's Haar evaluator keeps them), then the
        gradient channels' for a model with channel features (the strip's channels are
        those of the windows inside it: a channel feature keeps off the window's border,
        where the strip's own border would change the gradient)."""
        strip = np.ascontiguousarray(level[first:row_stop - 1 + self.window[1]])
        shape = (strip.shape[0] + 1, strip.shape[1] + 1)
        block = shape[0] * shape[1]
        first_channel = 1 + self.has_tilted
        blocks = first_channel + N_CHANNELS * self.has_channels
        if strip.size < INT32_PIXELS:
            # OpenCV's integral images, written in place: int32 sums (half the memory
            # traffic) and float64 squared sums, exact below 2**53 as the int64 ones are.
            sums = np.empty(blocks * block, np.int32)
            sq = np.empty(shape, np.float64)
            cv2.integral2(strip, sum=sums[:block].reshape(shape), sqsum=sq,
                          sdepth=cv2.CV_32S, sqdepth=cv2.CV_64F)
            sq = sq.ravel()
        else:
            sums = np.empty(blocks * block, np.int64)
            sq = np.empty(block, np.int64)
            _integrals(strip, sums[:block], sq)
        if self.has_tilted:   # OpenCV's tilted sums (cv2.integral3's), ten times faster
            tilted_integral_into(strip, sums[block:2 * block].reshape(shape))
        if self.has_channels:
            channel_integrals_into(strip, sums, first_channel * block)
        return sums, sq, strip.shape[1] + 1

    def _stumps(self, image):
        """The model's arrays as the kernels take them, for an integral image of rows
        ``stride`` long (kept per stride, and per strip size for a model with tilted
        features, whose tilted sums start after the upright ones: a pyramid has few level
        widths, scanned strip by strip)."""
        stride = image[2]
        key = (stride, image[1].size if self.has_tilted or self.has_channels else 0)
        # Levels are scanned on several threads: each keeps what it looked up, so another
        # thread's clear() cannot take it away.
        stumps = self._stumps_by_stride.get(key)
        if stumps is None:
            if len(self._stumps_by_stride) >= 64:   # bounded over many image sizes
                self._stumps_by_stride.clear()
            _, *rest = self.arrays
            offsets = _corner_offsets(self.geometry, stride, key[1])
            stumps = self._stumps_by_stride[key] = (offsets, *rest)
        return stumps

    def _kernel_window(self):
        width, height = int(self.window[0]), int(self.window[1])
        return (width, height, bool(self.model.normalize),
                self.like_opencv and bool(self.model.normalize), self.narrow_sums
                and width * height * 255 < 2 ** 31)   # no rectangle sums past int32

    def _parallel(self, windows: int, serial: bool) -> bool:
        return not serial and windows >= self.parallel_min_windows

    def _scan_grid(self, image, rows, cols, step, reject_at, threshold, serial=False):
        scores = np.empty((rows, cols))
        kernel = _scan_rows if self._parallel(rows * cols, serial) else _scan_rows_serial
        kernel(image, (rows, cols, step), self._kernel_window(), self._stumps(image),
               (reject_at, float(threshold), self.decision_threshold), scores)
        return scores

    def _scan_refined(self, level, row_start, row_stop, serial=False):
        """Coarse to fine: every ``REFINE_STEP``-th window in both directions, then the
        step-1 windows within ``REFINE_STEP - 1`` of a coarse window that scored above
        the coarse threshold (every window has two such coarse windows a side, or one at
        an edge). Scores are exact; only windows far below the threshold at all their
        coarse neighbours go unscanned."""
        win_w, win_h = self.window
        height, width = level.shape
        total_rows = height - win_h + 1
        step, reach = REFINE_STEP, REFINE_STEP - 1
        first = row_start - row_start % step       # the coarse grid is on rows k * step
        coarse_stop = min(row_stop + reach, total_rows)   # coarse rows below the strip
        image = self._strip_integrals(level, first, coarse_stop)
        stride = image[2]
        cols = width - win_w + 1
        coarse = self._scan_grid(image, (coarse_stop - 1 - first) // step + 1,
                                 (cols - 1) // step + 1, step, self.coarse_reject_at,
                                 self.coarse_threshold, serial)
        ci, cj = np.nonzero(coarse > -np.inf)
        # Step-1 neighbours of the promising coarse windows, off the coarse grid.
        dy, dx = (d.ravel() for d in np.mgrid[-reach:reach + 1, -reach:reach + 1])
        ys = (first + step * ci)[:, None] + dy
        xs = (step * cj)[:, None] + dx
        inside = ((ys >= row_start) & (ys < row_stop) & (xs >= 0) & (xs < cols)
                  & ((ys % step != 0) | (xs % step != 0)))
        fine = np.unique((ys - first)[inside] * cols + xs[inside])
        fy, fx = fine // cols, fine % cols
        fine_scores = np.empty(fine.size)
        kernel = (_score_windows if self._parallel(fine.size, serial)
                  else _score_windows_serial)
        kernel(image, fy * stride + fx, self._kernel_window(), self._stumps(image),
               (self.reject_at, self.threshold, self.decision_threshold), fine_scores)
        coarse_y, coarse_x = first + step * ci, step * cj
        coarse_scores = coarse[ci, cj]
        keep_coarse = (coarse_scores > self.threshold) & (coarse_y >= row_start) \
            & (coarse_y < row_stop)
        keep_fine = fine_scores > -np.inf
        return (np.concatenate([coarse_x[keep_coarse], fx[keep_fine]]),
                np.concatenate([coarse_y[keep_coarse], first + fy[keep_fine]]),
                np.concatenate([coarse_scores[keep_coarse], fine_scores[keep_fine]]))
