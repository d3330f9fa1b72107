"""Compact feature storage: one byte per window and feature, searched through histograms.

The exact search keeps every feature as float32 plus its sort order, six bytes per window
and feature. Here each feature is cut at up to ``MAX_EDGES`` quantile edges instead, and a
window stores only the index of its bin (uint8), as LightGBM and XGBoost's ``hist`` method
do. A stump ``x > edges[f, k]`` is the same test as ``bin > k``, so a model trained on bins
is an ordinary model of float thresholds: the detector cannot tell the difference.

A round builds, per feature, the class-weight histogram of its bins (one streaming pass
over the bytes), then walks the at most 255 cuts in order; every algorithm's rule sees the
same ``(eP, eN)`` per candidate as it would on a feature whose values are the bin indices.
A feature with at most 256 distinct values in the sample loses nothing: its edges are its
values.

Candidates are ``(feature, cut k, polarity)``, with index ``(f * 256 + k) * 2 + (polarity
< 0)`` for ties; cut ``k`` splits bins ``<= k`` from bins ``> k`` and is a candidate when
bin ``k`` holds a training window and some higher bin does too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numba
import numpy as np

from .roots import solve_alpha
from ._search_kernels import EXACT_SLACK
from .search import N_BLOCKS
from .stumps import _float32_keys, _radix_argsort, radix_scratch

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


def quantile_bins(values_t: np.ndarray, out: np.ndarray | None = None):
    """Cut every feature at up to 255 of its quantiles and bin its values.

    Returns ``(bins (F, n) uint8, edges (F, 255) float32 padded with +inf, n_edges (F,))``;
    ``value > edges[f, k]`` exactly when ``bin > k``. A feature with at most 256 distinct
    values keeps them all: its edges are its values below the largest.

    Examples
    --------
    >>> import numpy as np
    >>> bins, edges, n_edges = quantile_bins(np.array([[3.0, 1.0, 2.0, 1.0]], np.float32))
    >>> bins.tolist(), edges[0, :n_edges[0]].tolist()
    ([[2, 0, 1, 0]], [1.0, 2.0])
    """
    values_t = np.ascontiguousarray(values_t, dtype=np.float32)
    n_features = values_t.shape[0]
    if out is None:
        out = np.empty(values_t.shape, dtype=np.uint8)
    edges = np.full((n_features, MAX_EDGES), np.inf, dtype=np.float32)
    n_edges = np.zeros(n_features, dtype=np.int64)
    _binning_kernel(values_t, edges, n_edges, out, max(1, min(64, n_features)))
    return out, edges, n_edges


@dataclass
class BinnedFeatures:
    """A feature-major ``(n_features, n_samples)`` uint8 bin matrix and its cut values.

    ``bins`` may be a memory map (:mod:`.storage`): the search then reads ``chunk_rows``
    features at a time and calls ``release(start, stop)`` after each chunk, so that only
    one chunk is resident.
    """

    bins: np.ndarray       # (F, n) uint8, C-contiguous
    edges: np.ndarray      # (F, 255) float32, +inf past n_edges
    n_edges: np.ndarray    # (F,) int64
    chunk_rows: int | None = None
    release: Callable[[int, int], None] | None = None

    @classmethod
    def from_values(cls, values_t: np.ndarray) -> "BinnedFeatures":
        """Bins of a feature-major float matrix, edges from its quantiles."""
        return cls(*quantile_bins(values_t))

    @property
    def shape(self) -> tuple[int, int]:
        return self.bins.shape

    def subset(self, keep: np.ndarray) -> "BinnedFeatures":
        """The same bins restricted to some samples (the edges are kept)."""
        return BinnedFeatures(np.ascontiguousarray(self.bins[:, keep]), self.edges,
                              self.n_edges)

    def threshold(self, feature: int, cut: int) -> float:
        return float(self.edges[feature, cut])

    def outputs_at(self, feature: int, threshold: float, polarity: int) -> np.ndarray:
        """Outputs of the stump ``x > threshold`` for a threshold that is one of the
        feature's edges (as every stump trained on these bins has)."""
        cut = int(np.searchsorted(self.edges[feature, :self.n_edges[feature]],
                                  np.float32(threshold)))
        return self.outputs(feature, cut, polarity)

    def outputs(self, feature: int, cut: int, polarity: int) -> np.ndarray:
        """Outputs in {-1, +1} of the stump ``(feature, cut, polarity)`` on every sample."""
        return np.where(self.bins[feature] > cut, polarity, -polarity).astype(np.int8)


# --- the search -------------------------------------------------------------------------

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


@_jit
def _test_terms(alpha, a, b, cp, cn):
    """``(R_P, R_N, s)`` of the improvement test at ``alpha`` (see :mod:`.search`)."""
    return (2.0 * math.cosh(cp * alpha), 2.0 * math.cosh(cn * alpha),
            a * math.exp(-cp * alpha) + b * math.exp(-cn * alpha))


@_pjit
def _root_kernel(bins, feature_offset, weights, klass, a, b, cp, cn, alpha0,
                 exhaustive, best_alpha, best_id, best_err, roots):
    """Per block of features, the candidate of largest root; ties to the lowest index.

    ``exhaustive`` solves every candidate's root (DBN); otherwise a candidate's root is
    solved only when the exact improvement test says it can reach the block's best (the
    conditional search). A block accepts a root equal to ``alpha0`` until it has one of
    its own, so that the first of equal roots wins across blocks as well.
    """
    n_features = bins.shape[0]
    n_blocks = best_alpha.size
    for blk in numba.prange(n_blocks):
        hist = np.empty(2 * N_BINS)
        counts = np.empty(N_BINS, np.int64)
        alpha = alpha0
        found = False
        r_pos, r_neg, s = _test_terms(max(alpha, 0.0), a, b, cp, cn)
        n_roots = 0
        for f in range(blk * n_features // n_blocks, (blk + 1) * n_features // n_blocks):
            top = _histogram(bins[f], weights, klass, hist, counts)
            cum_pos = 0.0
            cum_neg = 0.0
            for k in range(top):
                cum_pos += hist[2 * k]
                cum_neg += hist[2 * k + 1]
                if counts[k] == 0:
                    continue
                for polarity in (1, -1):
                    if polarity > 0:
                        e_pos, e_neg = cum_pos, max(1.0 - cum_neg, 0.0)
                    else:
                        e_pos, e_neg = max(1.0 - cum_pos, 0.0), cum_neg
                    if not exhaustive and not math.isinf(alpha):
                        lhs = a * e_pos * r_pos + b * e_neg * r_neg
                        if not lhs <= s + EXACT_SLACK * (lhs + s):
                            continue
                    elif not exhaustive:
                        continue  # nothing beats a perfect stump
                    root = solve_alpha(e_pos, e_neg, a, b, cp, cn)
                    n_roots += 1
                    if not (root > alpha or (not found and root == alpha)):
                        continue
                    found = True
                    moved = root != alpha
                    alpha = root
                    ident = ((feature_offset + f) * N_BINS + k) * 2 + (0 if polarity > 0 else 1)
                    best_id[blk, 0] = feature_offset + f
                    best_id[blk, 1] = k
                    best_id[blk, 2] = polarity
                    best_id[blk, 3] = ident
                    best_err[blk, 0] = e_pos
                    best_err[blk, 1] = e_neg
                    if moved and not math.isinf(alpha):
                        r_pos, r_neg, s = _test_terms(max(alpha, 0.0), a, b, cp, cn)
        best_alpha[blk] = alpha if found else -np.inf
        roots[blk] = n_roots


def binned_root_search(binned: BinnedFeatures, weights, is_positive, a, b, cp, cn,
                       exhaustive: bool = False, alpha0: float = 0.0,
                       feature_offset: int = 0):
    """The candidate of largest root over binned features (AdaBoostDB's rule; with
    ``cp == cn`` also AdaBoost's least weighted error). The result has the keys of
    :func:`.search.conditional_root_search`, with ``position`` the cut index; None when no
    candidate has a positive root (or beats ``alpha0``).

    Chunks of features are searched in order, each starting from the best root so far, so
    a later chunk wins only with a strictly larger root: the lowest index keeps a tie.
    """
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    is_positive = np.ascontiguousarray(is_positive, dtype=np.bool_)
    n_features = binned.shape[0]
    chunk = binned.chunk_rows or n_features
    best, roots = None, 0
    for start in range(0, n_features, chunk):
        stop = min(n_features, start + chunk)
        found = _search_rows(binned.bins[start:stop], feature_offset + start, weights,
                             is_positive, a, b, cp, cn, exhaustive,
                             best["score"] if best else alpha0)
        if binned.release is not None:
            binned.release(start, stop)
        if found is None:
            continue
        roots += found["roots"]
        if best is None or found["score"] > best["score"]:
            best = found
    if best is None or not best["score"] > 0.0:
        return None
    return dict(best, roots=roots)


def _search_rows(bins, feature_offset, weights, is_positive, a, b, cp, cn, exhaustive,
                 alpha0):
    n_blocks = min(N_BLOCKS, max(1, bins.shape[0] // 64))
    best_alpha = np.full(n_blocks, -np.inf)
    best_id = np.full((n_blocks, 4), -1, np.int64)
    best_err = np.zeros((n_blocks, 2))
    roots = np.zeros(n_blocks, np.int64)
    klass = np.where(is_positive, 0, 1).astype(np.intp)
    _root_kernel(bins, feature_offset, weights, klass, a, b, cp, cn, float(alpha0),
                 bool(exhaustive), best_alpha, best_id, best_err, roots)
    valid = np.flatnonzero(best_id[:, 0] >= 0)
    if valid.size == 0:
        return None
    tied = valid[best_alpha[valid] == best_alpha[valid].max()]
    winner = tied[np.argmin(best_id[tied, 3])]
    f, k, polarity = (int(v) for v in best_id[winner, :3])
    return {"feature": f, "position": k, "polarity": polarity,
            "e_pos": float(best_err[winner, 0]), "e_neg": float(best_err[winner, 1]),
            "score": float(best_alpha[winner]), "roots": int(roots.sum())}


def binned_candidate_errors(binned: BinnedFeatures, weights, is_positive):
    """Brute force, with numpy: ``(eP, eN)`` of every cut of every feature for both
    polarities, shape ``(F, 2, 255)``, and the mask of candidate cuts. The oracle of the
    kernels above."""
    bins = binned.bins.astype(np.intp)
    cuts = np.arange(MAX_EDGES)
    below = bins[:, None, :] <= cuts[None, :, None]          # (F, 255, n)
    pos = np.where(is_positive, weights, 0.0)
    neg = np.where(is_positive, 0.0, weights)
    cum_pos = (below * pos).sum(axis=2)
    cum_neg = (below * neg).sum(axis=2)
    occupied = (bins[:, None, :] == cuts[None, :, None]).any(axis=2)
    above = (bins[:, None, :] > cuts[None, :, None]).any(axis=2)
    e_pos = np.stack([cum_pos, 1.0 - cum_pos], axis=1)
    e_neg = np.stack([1.0 - cum_neg, cum_neg], axis=1)
    return np.clip(e_pos, 0, None), np.clip(e_neg, 0, None), occupied & above
