"""The compiled kernels of the compact features (numba), apart from :mod:`._binned`: quantile
binning, binning at given edges, and the largest-root search through per-feature
class-weight histograms.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ._search_kernels import EXACT_SLACK, _errors, _record, test_terms
from ._roots import solve_alpha
from ._stumps import _float32_keys, _radix_argsort, radix_scratch

MAX_EDGES = 255
N_BINS = MAX_EDGES + 1

_jit = numba.njit(cache=True, boundscheck=False)
_pjit = numba.njit(cache=True, parallel=True, boundscheck=False)


@_jit
def _row_edges(values, order, edges_row):
    """Distinct values at the 1/256 quantiles of one row, below its maximum."""
    n = values.size
    top = values[order[n - 1]]
    count = 0
    for i in range(1, N_BINS):
        value = values[order[min(n - 1, (i * n) // N_BINS)]]
        if value >= top:
            break
        if count == 0 or value > edges_row[count - 1]:
            edges_row[count] = value
            count += 1
    return count


@_jit
def _row_bins(values, order, edges_row, n_edges, out_row):
    """Bins of one row, walking it in sorted order: the number of edges below each value."""
    e = 0
    for k in range(values.size):
        j = order[k]
        while e < n_edges and edges_row[e] < values[j]:
            e += 1
        out_row[j] = e


@_pjit
def _binning_kernel(values_t, edges, n_edges, out, n_blocks):
    n_features, n = values_t.shape
    for blk in numba.prange(n_blocks):
        keys, tmp_keys, order, tmp_idx, counts = radix_scratch(n)
        for f in range(blk * n_features // n_blocks, (blk + 1) * n_features // n_blocks):
            row = values_t[f]
            _float32_keys(row, keys)
            _radix_argsort(keys, order, tmp_keys, tmp_idx, counts)
            n_edges[f] = _row_edges(row, order, edges[f])
            _row_bins(row, order, edges[f], n_edges[f], out[f])


@_pjit
def _edges_kernel(values_t, edges, out):
    """Bins of values at given edges: the number of a row's edges below each value, as
    :func:`_row_bins` counts them. A branch-free binary search over the row's 255 edges
    (+inf past its last, below no value), steps of 128 down to 1, for four values side by
    side: each search is a chain of dependent loads, and four chains in one loop keep the
    core busy (a fifth faster than one at a time, on the 2-core EPYC)."""
    n_features, n = values_t.shape
    for f in numba.prange(n_features):
        row = values_t[f]
        edges_row = edges[f]
        out_row = out[f]
        j = 0
        while j < n:
            # The last group repeats its last value where fewer than four are left.
            v0, v1 = row[j], row[min(j + 1, n - 1)]
            v2, v3 = row[min(j + 2, n - 1)], row[min(j + 3, n - 1)]
            l0 = l1 = l2 = l3 = 0
            step = 128
            while step >= 1:
                l0 += step * (edges_row[l0 + step - 1] < v0)
                l1 += step * (edges_row[l1 + step - 1] < v1)
                l2 += step * (edges_row[l2 + step - 1] < v2)
                l3 += step * (edges_row[l3 + step - 1] < v3)
                step >>= 1
            out_row[j] = l0
            if j + 1 < n:
                out_row[j + 1] = l1
            if j + 2 < n:
                out_row[j + 2] = l2
            if j + 3 < n:
                out_row[j + 3] = l3
            j += 4


@_jit
def compact_row(row, edges_row, out_edges_row, occupied, remap):
    """One feature's bins with those no sample holds dropped: the occupied bins renumbered
    0, 1, ... in order (``row`` rewritten), and between two of them the cut the first
    one's edge made (``x > edges[p]`` exactly when the bin is above ``p``, as no sample
    lies between them), +inf past the last. Returns the number of cuts. ``occupied`` and
    ``remap`` are scratch of N_BINS."""
    occupied[:] = False
    for j in range(row.size):
        occupied[row[j]] = True
    kept = 0
    previous = 0
    for k in range(N_BINS):
        if occupied[k]:
            if kept > 0:
                out_edges_row[kept - 1] = edges_row[previous]
            remap[k] = kept
            previous = k
            kept += 1
    cuts = max(kept - 1, 0)
    out_edges_row[cuts:] = np.inf
    for j in range(row.size):
        row[j] = remap[row[j]]
    return cuts


@_pjit
def _compact_kernel(bins, edges, out_edges, out_n_edges, n_blocks):
    """:func:`compact_row` of every feature, features in blocks run in parallel."""
    n_features = bins.shape[0]
    for blk in numba.prange(n_blocks):
        occupied = np.empty(N_BINS, np.bool_)
        remap = np.empty(N_BINS, np.uint8)
        for f in range(blk * n_features // n_blocks, (blk + 1) * n_features // n_blocks):
            out_n_edges[f] = compact_row(bins[f], edges[f], out_edges[f], occupied, remap)


@_jit
def _histogram(row, weights, run_stop, run_positive, hist):
    """Class weights per bin of one feature's ``row`` (its first ``run_stop[-1]`` samples):
    ``hist[b]`` positive, ``hist[N_BINS + b]`` negative. The samples come in runs of one
    class (``run_stop`` their ends), each walked by a loop of one load and one add per
    sample with a constant offset, in sample order: the sums of any layout are the same.
    Each run is sliced so that its loop counts from 0: the compiler then knows the index
    is not negative (no wraparound check), which made the loop twice as fast."""
    hist[:] = 0.0
    start = 0
    for r in range(run_stop.size):
        end = run_stop[r]
        bins, weight = row[start:end], weights[start:end]
        if run_positive[r]:
            for i in range(bins.size):
                hist[bins[i]] += weight[i]
        else:
            negative = hist[N_BINS:]
            for i in range(bins.size):
                negative[bins[i]] += weight[i]
        start = end


@_jit
def _histogram_pair(row_a, row_b, weights, run_stop, run_positive, hist_a, hist_b):
    """:func:`_histogram` of two features in one walk over the samples: each sample's
    weight is loaded once for both, and the two histograms' updates are independent, so
    the core overlaps them (a round 15-20% faster on the 2-core Xeon). Each histogram's
    sums are made in the same order as :func:`_histogram` makes them: the same bits."""
    hist_a[:] = 0.0
    hist_b[:] = 0.0
    start = 0
    for r in range(run_stop.size):
        end = run_stop[r]
        bins_a, bins_b, weight = row_a[start:end], row_b[start:end], weights[start:end]
        offset = 0 if run_positive[r] else N_BINS
        part_a, part_b = hist_a[offset:], hist_b[offset:]
        for i in range(weight.size):
            w = weight[i]
            part_a[bins_a[i]] += w
            part_b[bins_b[i]] += w
        start = end


@_jit
def _occupancy(row, n, counts):
    """Samples per bin of the first ``n`` of ``row``; the highest occupied bin."""
    counts[:] = 0
    for i in range(n):
        counts[row[i]] += 1
    top = N_BINS - 1
    while top > 0 and counts[top] == 0:
        top -= 1
    return top


@_pjit
def _root_kernel(bins, feature_offset, rows, tops, weights, run_stop, run_positive, coefs,
                 alpha0, exhaustive, blocks):
    """Per block of the features ``rows`` (increasing indices into ``bins``, whose first
    ``run_stop[-1]`` columns are the samples), the candidate of largest root; ties to the
    lowest index.

    ``tops[i]`` is the highest occupied bin of feature ``rows[i]`` when every bin up to
    it holds a sample (quantile bins: no count needed), else -1 (the bins are counted).
    ``exhaustive`` solves every candidate's root (DBN); otherwise a candidate's root is
    solved only when the exact improvement test says it can reach the block's best (the
    conditional search). A block accepts a root equal to ``alpha0`` until it has one of
    its own, so that the first of equal roots wins across blocks as well.
    """
    n_rows = rows.size
    n_blocks = blocks.size
    for blk in numba.prange(n_blocks):
        block = blocks[blk]
        hist = np.empty(2 * N_BINS)
        hist_next = np.empty(2 * N_BINS)
        counts = np.empty(N_BINS, np.int64)
        signed = np.zeros(N_BINS + 3)
        block.score = alpha0
        terms = test_terms(max(alpha0, 0.0), coefs)
        stop = (blk + 1) * n_rows // n_blocks
        i = blk * n_rows // n_blocks
        while i < stop:
            # Two features' histograms in one walk, then each scanned in feature order
            # (the one left over alone): the candidates in the same order as one by one.
            paired = i + 1 < stop
            if paired:
                _histogram_pair(bins[rows[i]], bins[rows[i + 1]], weights, run_stop,
                                run_positive, hist, hist_next)
            else:
                _histogram(bins[rows[i]], weights, run_stop, run_positive, hist)
            terms = _scan_feature(hist, bins[rows[i]], tops[i], counts, signed, run_stop[-1],
                                  feature_offset + rows[i], coefs, exhaustive, block, terms)
            if paired:
                terms = _scan_feature(hist_next, bins[rows[i + 1]], tops[i + 1], counts,
                                      signed, run_stop[-1], feature_offset + rows[i + 1],
                                      coefs, exhaustive, block, terms)
            i += 2 if paired else 1
        if not block.found:
            block.score = -np.inf


# Rounding allowed for between the quick bound on a whole feature and the exact test of
# one cut, in units of eps * (a R_P + b R_N + s): two running sums of 256 terms each (the
# bound's and the exact test's), with room to spare.
BOUND_SLACK = 1024 * np.finfo(np.float64).eps


@_jit
def _no_cut_can_improve(hist, top, coefs, terms, signed):
    """Whether every cut below ``top`` fails the exact improvement test, for both
    polarities, decided from the running sum ``u = a R_P cum_pos - b R_N cum_neg`` alone:
    polarity +1 needs ``u`` at most ``s - b R_N``, polarity -1 at least ``a R_P - s`` (as
    the sort-order kernels' pre-filter reasons), give or take :data:`BOUND_SLACK` and the
    exact test's own slack. So a feature whose ``u`` stays between the two is skipped with
    no other work, and one that leaves the band is scanned cut by cut as before: the same
    candidates, roots and terms either way.

    ``u`` is summed in four quarters of the bins at once, so that the additions overlap
    instead of waiting on each other: its rounding differs from the exact test's, which
    the slack covers."""
    a, b = coefs[0], coefs[1]
    r_pos, r_neg, s = terms
    coef_pos, coef_neg = a * r_pos, b * r_neg
    for k in range(top):
        signed[k] = coef_pos * hist[k] - coef_neg * hist[N_BINS + k]
    quarter = (top + 3) // 4
    for k in range(top, 4 * quarter):
        signed[k] = 0.0   # repeats the last cut's u: no new value
    u0 = u1 = u2 = u3 = 0.0
    low0 = low1 = low2 = low3 = math.inf
    high0 = high1 = high2 = high3 = -math.inf
    for j in range(quarter):
        u0 += signed[j]
        u1 += signed[quarter + j]
        u2 += signed[2 * quarter + j]
        u3 += signed[3 * quarter + j]
        low0, high0 = min(low0, u0), max(high0, u0)
        low1, high1 = min(low1, u1), max(high1, u1)
        low2, high2 = min(low2, u2), max(high2, u2)
        low3, high3 = min(low3, u3), max(high3, u3)
    o1 = u0
    o2 = o1 + u1
    o3 = o2 + u2
    lowest = min(min(low0, o1 + low1), min(o2 + low2, o3 + low3))
    highest = max(max(high0, o1 + high1), max(o2 + high2, o3 + high3))
    exact_s = s * (1.0 + 4.0 * EXACT_SLACK)
    slack = BOUND_SLACK * (coef_pos + coef_neg + s)
    return lowest > exact_s - coef_neg + slack and highest < coef_pos - exact_s - slack


@_jit
def _scan_feature(hist, row, top, counts, signed, n, feature, coefs, exhaustive, block,
                  terms):
    """One feature's candidates from its class-weight histogram, in bin order, each
    polarity, against the block's best (see :func:`_root_kernel`); ``top`` below 0
    counts the occupied bins of ``row``'s first ``n`` samples first. Returns the
    improvement test's terms at the block's best root. ``signed`` is scratch room for
    :func:`_no_cut_can_improve`, which spares the cut-by-cut scan of most features."""
    a, b, cp, cn = coefs
    r_pos, r_neg, s = terms
    dense = top >= 0
    if not dense:
        top = _occupancy(row, n, counts)
    if (not exhaustive and math.isfinite(block.score)
            and _no_cut_can_improve(hist, top, coefs, terms, signed)):
        return terms
    cum_pos = 0.0
    cum_neg = 0.0
    for k in range(top):
        cum_pos += hist[k]
        cum_neg += hist[N_BINS + k]
        if not dense and counts[k] == 0:
            continue
        for polarity in (1, -1):
            e_pos, e_neg = _errors(cum_pos, cum_neg, polarity)
            alpha = block.score
            if not exhaustive and not math.isinf(alpha):
                lhs = a * e_pos * r_pos + b * e_neg * r_neg
                if not lhs <= s + EXACT_SLACK * (lhs + s):
                    continue
            elif not exhaustive:
                continue  # nothing beats a perfect stump
            root = solve_alpha(e_pos, e_neg, a, b, cp, cn)
            block.roots += 1
            if not (root > alpha or (not block.found and root == alpha)):
                continue
            ident = (feature * N_BINS + k) * 2 + (0 if polarity > 0 else 1)
            _record(block, root, feature, k, polarity, ident, e_pos, e_neg)
            if root != alpha and not math.isinf(root):
                r_pos, r_neg, s = test_terms(max(root, 0.0), coefs)
    return r_pos, r_neg, s
