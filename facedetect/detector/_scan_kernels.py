"""The compiled kernels of the scan (numba): integral images, window scaling, scoring.

Kept apart from their orchestration in :mod:`._scan`, as scikit-image keeps ``_haar.pyx``
apart from ``haar.py``. The kernels take a few tuples of arrays (the integral images, the
window, the model's stumps, the rejection levels; see :func:`_score_bases`), which
:class:`._scan.LevelScanner` bundles. The row and window kernels come in a parallel
and a serial build of one body.
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True, boundscheck=False)
def _window_scales(image, bases, spacing, window, scales):
    """float32(1 / nf) of every window (top-left integral index ``bases[j]``): OpenCV's
    variance factor over the window minus a one-pixel border (1 without normalisation).
    With ``like_opencv``, 0 for a window OpenCV's Haar evaluator skips
    (``HaarEvaluator::setWindow``: nf not positive, or ``area / nf`` at least 0.1, a
    standard deviation of at most 10 grey levels). Evenly spaced windows (``spacing`` >
    0) are computed at every step-1 position of their span, as :func:`_add_rect_sums`
    does, in loops the compiler vectorises."""
    ii, sq, stride = image
    win_w, win_h, normalize, like_opencv, _ = window
    n = bases.size
    if not normalize:
        scales[:] = np.float32(1.0)
        return
    a = stride + 1
    b = stride + win_w - 1
    c = (win_h - 1) * stride + 1
    d = (win_h - 1) * stride + win_w - 1
    if spacing > 0 and n:
        first, span = bases[0], (n - 1) * spacing + 1
        dense = np.empty(span, np.float32)
        ia, ib = ii[first + a:first + a + span], ii[first + b:first + b + span]
        ic, id_ = ii[first + c:first + c + span], ii[first + d:first + d + span]
        sa, sb = sq[first + a:first + a + span], sq[first + b:first + b + span]
        sc, sd = sq[first + c:first + c + span], sq[first + d:first + d + span]
        for k in range(span):
            dense[k] = _scale(id_[k] - ib[k] - ic[k] + ia[k], sd[k] - sb[k] - sc[k] + sa[k],
                              win_w, win_h, like_opencv)
        for j in range(n):
            scales[j] = dense[j * spacing]
        return
    for j in range(n):
        base = bases[j]
        scales[j] = _scale(ii[base + d] - ii[base + b] - ii[base + c] + ii[base + a],
                           sq[base + d] - sq[base + b] - sq[base + c] + sq[base + a],
                           win_w, win_h, like_opencv)


@numba.njit(cache=True, inline="always")
def _scale(total, total_sq, win_w, win_h, like_opencv):
    """:func:`_window_scales` of one window, from its sum and its sum of squares."""
    area = float((win_w - 2) * (win_h - 2))
    variance_term = area * float(total_sq) - float(total) * float(total)
    nf = math.sqrt(variance_term) if variance_term > 0 else 1.0
    scale = np.float32(1.0 / nf)
    if like_opencv and not (variance_term > 0 and area * float(scale) < 0.1):
        return np.float32(0.0)
    return scale


@numba.njit(cache=True, boundscheck=False, inline="always")
def _stump_on_alive(ii, bases, stump, scales, running, alive, n_alive):
    """One stump ``(offsets, weights, n_rects, threshold, vote, stop_below, carry)`` on the
    windows still alive (window ``j`` has its top-left integral index at ``bases[j]``);
    returns how many stay alive (moved to the front of ``alive``). Rectangles are added in
    the model's order, as in training; a stump of one rectangle has a second one of zero
    offsets and weight, which adds exactly zero."""
    offsets, weights, n_rects, stump_threshold, vote, stop_below, carry = stump
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
        running[j] = score * carry
        if not score < stop_below:
            alive[kept] = j
            kept += 1
    return kept


@numba.njit(cache=True, boundscheck=False)
def _score_bases(image, bases, spacing, window, stumps, cut, out):
    """out[j] = score of the window whose top-left integral index is ``bases[j]`` if it
    exceeds the threshold, else -inf.

    ``spacing``: the distance between consecutive ``bases`` when they are evenly spaced
    (a row of windows), 0 for an arbitrary list. ``image = (ii, sq, stride)``, ``window =
    (width, height, normalize, like_opencv, narrow)`` (the windows to score: see below;
    ``narrow``: a rectangle's sum fits in int32, :func:`_add_rect_sums`), ``stumps =
    (offsets, weights, counts, thresholds, polarities, alphas, carry)`` and ``cut =
    (reject_at, threshold)``: the score levels below which a window leaves after each
    stump, the final one, and the score a one-stage model's window must exceed to pass
    its only stage (the decision threshold; only for ``like_opencv``). ``carry`` is 0
    after a cascade stage's last stump (the next stage's sum starts from zero) and 1
    elsewhere.

    With ``like_opencv`` (a model scanned as OpenCV scans its export), a window OpenCV's
    evaluator skips (:func:`_window_scales`) is not scored, and in a row (``spacing`` >
    0) neither is the window after one the first stage rejects: OpenCV's
    ``detectMultiScale`` steps over it (``if( result == 0 ) x += yStep``). A window
    that learnt rejection stops inside the first stage counts as rejected by it.

    Stump by stump over the windows still alive, rather than window by window: the
    stump's offsets, weights and threshold stay in registers, neighbouring windows share
    cache lines, and a rejected window leaves the list. Each window's score is still the
    sum of its stumps in the model's order, with the same float32 feature values as
    training, so scores are bit-identical to a window-by-window scan.
    """
    ii = image[0]
    offsets, weights, counts, thresholds, polarities, alphas, carry = stumps
    reject_at, threshold, one_stage_threshold = cut
    n = bases.size
    scales = np.empty(n, np.float32)
    _window_scales(image, bases, spacing, window, scales)
    step_over = window[3] and spacing > 0   # OpenCV's row loop (below)
    first_stage_end = _first_stage_end(carry) if step_over else -1
    passed_first = np.zeros(n if step_over else 0, np.bool_)
    running = np.zeros(n)
    raw = np.empty(n, np.float32)
    alive = np.arange(n)
    n_alive = n
    if window[3]:   # like OpenCV: a window whose scale is 0 is skipped (_window_scales)
        n_alive = 0
        for j in range(n):
            if scales[j] > 0:
                alive[n_alive] = j
                n_alive += 1
    t = 0
    # While every window is alive (the first few stumps: no face is rejected there),
    # rectangle by rectangle over all windows. A row's windows are evenly spaced
    # (``spacing``, 0 for an arbitrary list): its rectangles' sums are then taken at every
    # step-1 position of the row's span, contiguous loads that the compiler vectorises
    # (strided or listed ones it does not), and the windows read every ``spacing``-th.
    first = bases[0] if n else 0
    span = (n - 1) * spacing + 1 if spacing > 0 and n else 0
    dense = np.empty(span, np.float32)
    while t < alphas.size and n_alive == n:
        if spacing > 0:
            dense[:] = np.float32(0.0)
            for r in range(counts[t]):
                _add_rect_sums(ii, first, span, offsets[t, r], weights[t, r], window[4], dense)
            for j in range(n):
                raw[j] = dense[j * spacing]
        else:
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
            running[j] = score * carry[t]
            if not score < reject_at[t]:
                alive[kept] = j
                kept += 1
        n_alive = kept
        if t == first_stage_end:
            _mark_alive(alive, n_alive, passed_first)
        t += 1
    for u in range(t, alphas.size):
        if n_alive == 0:
            break
        stump = (offsets[u], weights[u], counts[u], thresholds[u],
                 alphas[u] * polarities[u], reject_at[u], carry[u])
        n_alive = _stump_on_alive(ii, bases, stump, scales, running, alive, n_alive)
        if u == first_stage_end:
            _mark_alive(alive, n_alive, passed_first)
    out[:] = -np.inf
    for k in range(n_alive):
        j = alive[k]
        if running[j] > threshold:
            out[j] = running[j]
    if step_over:
        if first_stage_end == alphas.size - 1:   # one stage: passed above the decision
            for k in range(n_alive):
                passed_first[alive[k]] = running[alive[k]] > one_stage_threshold
        _skip_after_first_stage_rejections(scales, passed_first, out)


@numba.njit(cache=True, boundscheck=False, inline="always")
def _add_rect_sums(ii, first, span, corners, weight, narrow, dense):
    """dense[k] += weight * (the rectangle's sum at position first + k), k < span.

    Slices rather than indices, so that the compiler sees unit strides and no negative
    index; with ``narrow`` the sums are int32 (exact: two's complement wraps back to a sum
    that fits), which vectorises with the conversion to float32, where int64 does not."""
    top_left, top_right, bottom_left, bottom_right = corners
    a = ii[first + top_left:first + top_left + span]
    b = ii[first + top_right:first + top_right + span]
    c = ii[first + bottom_left:first + bottom_left + span]
    d = ii[first + bottom_right:first + bottom_right + span]
    if narrow:
        for k in range(span):
            dense[k] += weight * np.float32(np.int32(d[k] - b[k] - c[k] + a[k]))
    else:
        for k in range(span):
            dense[k] += weight * np.float32(d[k] - b[k] - c[k] + a[k])


@numba.njit(cache=True, boundscheck=False, inline="always")
def _first_stage_end(carry):
    """The index of the first stage's last stump (the last stump without stages)."""
    for t in range(carry.size):
        if carry[t] == 0:
            return t
    return carry.size - 1


@numba.njit(cache=True, boundscheck=False, inline="always")
def _mark_alive(alive, n_alive, marks):
    """marks[j] = True for the first ``n_alive`` windows ``j`` of ``alive``."""
    for k in range(n_alive):
        marks[alive[k]] = True


@numba.njit(cache=True, boundscheck=False)
def _skip_after_first_stage_rejections(scales, passed_first, out):
    """OpenCV's row loop: a window its evaluator scored (not skipped as flat, scale 0)
    whose first stage rejected it makes the loop step over the next window."""
    step_over = False
    for j in range(out.size):
        if step_over:
            out[j] = -np.inf
            step_over = False
        elif scales[j] > 0 and not passed_first[j]:
            step_over = True


@numba.njit(parallel=True, cache=True, boundscheck=False)
def _scan_rows(image, grid, window, stumps, cut, scores):
    """scores[i, j] = score of the window at (j*step, i*step) if it exceeds the threshold,
    else -inf, for ``grid = (rows, cols, step)``; rows in parallel."""
    for i in numba.prange(grid[0]):
        _score_row(i, image, grid, window, stumps, cut, scores)


@numba.njit(cache=True, boundscheck=False, nogil=True)
def _scan_rows_serial(image, grid, window, stumps, cut, scores):
    """:func:`_scan_rows` on the calling thread (a separate function, so that numba's
    cache keeps the two builds apart)."""
    for i in range(grid[0]):
        _score_row(i, image, grid, window, stumps, cut, scores)


@numba.njit(cache=True, boundscheck=False, inline="always")
def _score_row(i, image, grid, window, stumps, cut, scores):
    _, cols, step = grid
    bases = i * step * image[2] + np.arange(cols) * step
    _score_bases(image, bases, step, window, stumps, cut, scores[i])


CHUNK = 256   # windows per task of an arbitrary window list


@numba.njit(parallel=True, cache=True, boundscheck=False)
def _score_windows(image, bases, window, stumps, cut, scores):
    """:func:`_score_bases` on an arbitrary list of windows, in parallel chunks."""
    for c in numba.prange((bases.size + CHUNK - 1) // CHUNK):
        _score_chunk(c, image, bases, window, stumps, cut, scores)


@numba.njit(cache=True, boundscheck=False, nogil=True)
def _score_windows_serial(image, bases, window, stumps, cut, scores):
    """:func:`_score_windows` on the calling thread."""
    for c in range((bases.size + CHUNK - 1) // CHUNK):
        _score_chunk(c, image, bases, window, stumps, cut, scores)


@numba.njit(cache=True, boundscheck=False, inline="always")
def _score_chunk(c, image, bases, window, stumps, cut, scores):
    stop = min(bases.size, (c + 1) * CHUNK)
    _score_bases(image, bases[c * CHUNK:stop], 0, window, stumps, cut, scores[c * CHUNK:stop])


@numba.njit(cache=True, nogil=True)
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

