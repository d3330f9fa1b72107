"""The compiled kernels of the compact features (numba), apart from :mod:`._binned`: quantile
binning, and the largest-root search through per-feature class-weight histograms.
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


@_jit
def _histogram(row, weights, klass, hist, counts):
    """Class weights per bin, interleaved: ``hist[2 b]`` positive, ``hist[2 b + 1]``
    negative (``klass`` is 0 for a positive sample, 1 for a negative: no branch)."""
    hist[:] = 0.0
    counts[:] = 0
    for j in range(row.size):
        b = row[j]
        counts[b] += 1
        hist[2 * b + klass[j]] += weights[j]
    top = N_BINS - 1
    while top > 0 and counts[top] == 0:
        top -= 1
    return top  # the highest occupied bin: no cut at or after it


@_pjit
def _root_kernel(bins, feature_offset, rows, samples, coefs, alpha0, exhaustive, blocks):
    """Per block of the features ``rows`` (increasing indices into ``bins``), the
    candidate of largest root; ties to the lowest index.

    ``exhaustive`` solves every candidate's root (DBN); otherwise a candidate's root is
    solved only when the exact improvement test says it can reach the block's best (the
    conditional search). A block accepts a root equal to ``alpha0`` until it has one of
    its own, so that the first of equal roots wins across blocks as well.
    """
    weights, is_positive = samples
    a, b, cp, cn = coefs
    klass = np.empty(weights.size, np.intp)
    for j in range(weights.size):
        klass[j] = 0 if is_positive[j] else 1
    n_rows = rows.size
    n_blocks = blocks.size
    for blk in numba.prange(n_blocks):
        block = blocks[blk]
        hist = np.empty(2 * N_BINS)
        counts = np.empty(N_BINS, np.int64)
        block.score = alpha0
        r_pos, r_neg, s = test_terms(max(alpha0, 0.0), coefs)
        for i in range(blk * n_rows // n_blocks, (blk + 1) * n_rows // n_blocks):
            f = rows[i]
            top = _histogram(bins[f], weights, klass, hist, counts)
            cum_pos = 0.0
            cum_neg = 0.0
            for k in range(top):
                cum_pos += hist[2 * k]
                cum_neg += hist[2 * k + 1]
                if counts[k] == 0:
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
                    ident = ((feature_offset + f) * N_BINS + k) * 2 + (0 if polarity > 0 else 1)
                    _record(block, root, feature_offset + f, k, polarity, ident, e_pos, e_neg)
                    if root != alpha and not math.isinf(root):
                        r_pos, r_neg, s = test_terms(max(root, 0.0), coefs)
        if not block.found:
            block.score = -np.inf
