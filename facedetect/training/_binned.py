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

Samples may be added later (:meth:`BinnedFeatures.append`), such as a stage's hard
negatives, binned at the edges the first samples' quantiles set, so that the features of
the samples already there are never computed again; a store made with room for them
(``room``) takes them without a copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ._binned_kernels import (MAX_EDGES, N_BINS, _binning_kernel, _compact_kernel, _edges_kernel,
                              _root_kernel)
from ._search_kernels import new_blocks
from ._roots import RootCoefficients
from ._search import N_BLOCKS, kernel_arguments, merge_blocks

__all__ = ["MAX_EDGES", "N_BINS", "quantile_bins", "bins_at_edges", "BinnedFeatures",
           "binned_root_search", "binned_candidate_errors"]


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
    if values_t.ndim != 2 or values_t.shape[1] == 0:
        # The kernel runs without bounds checks: an empty row would be read past its end.
        raise ValueError(f"quantile_bins needs (features, samples) values with at least one "
                         f"sample, got shape {values_t.shape}")
    n_features = values_t.shape[0]
    if out is None:
        out = np.empty(values_t.shape, dtype=np.uint8)
    edges = np.full((n_features, MAX_EDGES), np.inf, dtype=np.float32)
    n_edges = np.zeros(n_features, dtype=np.int64)
    _binning_kernel(values_t, edges, n_edges, out, max(1, min(64, n_features)))
    return out, edges, n_edges


def bins_at_edges(values_t: np.ndarray, edges: np.ndarray, n_edges: np.ndarray,
                  out: np.ndarray | None = None) -> np.ndarray:
    """The bins of new values at edges already set (:func:`quantile_bins`'): ``value >
    edges[f, k]`` exactly when ``bin > k``, as for the values the edges came from.

    Examples
    --------
    >>> import numpy as np
    >>> _, edges, n_edges = quantile_bins(np.array([[3.0, 1.0, 2.0, 1.0]], np.float32))
    >>> bins_at_edges(np.array([[0.0, 1.0, 1.5, 9.0]], np.float32), edges, n_edges).tolist()
    [[0, 0, 1, 2]]
    """
    values_t = np.ascontiguousarray(values_t, dtype=np.float32)
    if values_t.ndim != 2 or values_t.shape[0] != len(n_edges):
        raise ValueError(f"bins_at_edges needs (features, samples) values for the "
                         f"{len(n_edges)} features of the edges, got shape {values_t.shape}")
    if edges.shape != (len(n_edges), MAX_EDGES):
        raise ValueError(f"bins_at_edges needs ({len(n_edges)}, {MAX_EDGES}) edges padded "
                         f"with +inf, got shape {edges.shape}")
    if out is None:
        out = np.empty(values_t.shape, dtype=np.uint8)
    _edges_kernel(values_t, np.ascontiguousarray(edges, np.float32), out)
    return out


@dataclass
class BinnedFeatures:
    """A feature-major ``(n_features, n_samples)`` uint8 bin matrix and its cut values.

    ``bins`` may be the first columns of a wider C-contiguous buffer, ``room``, whose
    other columns :meth:`append` fills with samples binned at the same edges
    (:func:`bins_at_edges`). It may be a memory map (:mod:`facedetect.pipeline._compact`):
    the search then reads ``chunk_rows`` features at a time and calls ``release(start,
    stop)`` after each chunk, so that only one chunk is resident. ``dense``: every bin up
    to ``n_edges[f]`` holds a sample, as quantile bins do, so the search need not count.

    Examples
    --------
    >>> binned = BinnedFeatures.from_values(np.array([[0.5, 3.0, 1.5, 3.0]], np.float32))
    >>> binned.bins.tolist(), binned.threshold(0, 1), binned.outputs(0, 1, 1).tolist()
    ([[0, 2, 1, 2]], 1.5, [-1, 1, -1, 1])
    >>> more = bins_at_edges(np.array([[9.0, 0.0]], np.float32), binned.edges, binned.n_edges)
    >>> binned.append(more).outputs(0, 1, 1).tolist()
    [-1, 1, -1, 1, 1, -1]
    """

    bins: np.ndarray       # (F, n) uint8, each row contiguous
    edges: np.ndarray      # (F, 255) float32, +inf past n_edges
    n_edges: np.ndarray    # (F,) int64
    chunk_rows: int | None = None
    release: Callable[[int, int], None] | None = None
    dense: bool = False
    room: np.ndarray | None = None    # (F, capacity) C-contiguous: bins is its first columns

    @classmethod
    def from_values(cls, values_t: np.ndarray) -> "BinnedFeatures":
        """Bins of a feature-major float matrix, edges from its quantiles."""
        return cls(*quantile_bins(values_t), dense=True)

    @property
    def shape(self) -> tuple[int, int]:
        return self.bins.shape

    @property
    def buffer(self) -> np.ndarray:
        """The C-contiguous array the bins are the first columns of."""
        return self.room if self.room is not None else self.bins

    @property
    def nbytes(self) -> int:
        return int(self.buffer.nbytes + self.edges.nbytes)

    def append(self, more: np.ndarray) -> "BinnedFeatures":
        """A store of these samples and ``more`` (``(n_features, m)`` bins at these edges):
        written into the room left, else into a new array with this store's bins copied."""
        n_features, n = self.bins.shape
        if more.ndim != 2 or more.shape[0] != n_features:
            raise ValueError(f"more must be ({n_features}, m) bins, got {more.shape}")
        grown = self.grown(more.shape[1])
        grown.bins[:, n:] = more
        return grown

    def grown(self, m: int) -> "BinnedFeatures":
        """A store with ``m`` more samples (their bins to be written): in the room left,
        else in a new array in memory holding a copy of these bins."""
        n_features, n = self.bins.shape
        room = self.buffer
        if not (room.flags.c_contiguous and room.shape[1] >= n + m):
            room = np.empty((n_features, n + m), np.uint8)
            room[:, :n] = self.bins
            return BinnedFeatures(room, self.edges, self.n_edges, dense=self.dense)
        return BinnedFeatures(room[:, :n + m], self.edges, self.n_edges, self.chunk_rows,
                              self.release, self.dense, room)

    def subset(self, keep: np.ndarray) -> "BinnedFeatures":
        """The same bins restricted to some samples (the edges are kept)."""
        return BinnedFeatures(np.ascontiguousarray(self.bins[:, keep]), self.edges,
                              self.n_edges)

    def compacted(self) -> "BinnedFeatures":
        """These samples with each feature's empty bins dropped, in place (the bins are
        renumbered): a dense store, whose search need not count each feature's bins every
        round, and which gives the stumps this one gives (the same cuts, thresholds and
        order). Samples binned at edges other samples set leave bins empty.

        Examples
        --------
        >>> binned = BinnedFeatures.from_values(np.array([[0.5, 3.0, 1.5, 2.0]], np.float32))
        >>> two = BinnedFeatures(binned.bins[:, :2].copy(), binned.edges, binned.n_edges)
        >>> dense = two.compacted()
        >>> dense.bins.tolist(), dense.edges[0, :dense.n_edges[0]].tolist(), dense.dense
        ([[0, 1]], [0.5], True)
        """
        if self.release is not None or self.room is not None:
            raise ValueError("compacted needs bins in memory, without room to grow")
        edges = np.empty_like(self.edges)
        n_edges = np.empty_like(self.n_edges)
        _compact_kernel(self.bins, self.edges, edges, n_edges,
                        max(1, min(64, len(n_edges))))
        return BinnedFeatures(self.bins, edges, n_edges, dense=True)

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


def class_runs(is_positive: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(ends, positive)`` of the runs of one class in sample order: run ``r`` ends before
    ``ends[r]``, and ``positive[r]`` is its class. Windows stored by class give two runs.

    Examples
    --------
    >>> ends, positive = class_runs(np.array([True, True, False, True]))
    >>> ends.tolist(), positive.tolist()
    ([2, 3, 4], [True, False, True])
    """
    is_positive = np.asarray(is_positive, dtype=np.bool_)
    ends = np.append(np.flatnonzero(is_positive[1:] != is_positive[:-1]) + 1,
                     is_positive.size).astype(np.int64)
    return ends, is_positive[ends - 1].copy()


# --- the search -------------------------------------------------------------------------

def binned_root_search(binned: BinnedFeatures, weights, is_positive, coefs: RootCoefficients,
                       exhaustive: bool = False, alpha0: float = 0.0,
                       feature_offset: int = 0,
                       features: np.ndarray | None = None) -> dict | None:
    """The candidate of largest root over binned features (AdaBoostDB's rule; with
    ``cp == cn`` also AdaBoost's least weighted error). The result has the keys of
    :func:`._search.conditional_root_search`, with ``position`` the cut index; None when no
    candidate has a positive root (or beats ``alpha0``).

    Chunks of features are searched in order, each starting from the best root so far, so
    a later chunk wins only with a strictly larger root: the lowest index keeps a tie.
    ``features`` (increasing indices; None: all) limits the search to those features.

    Examples
    --------
    >>> binned = BinnedFeatures.from_values(np.array([[0.0, 1.0, 2.0, 3.0]], np.float32))
    >>> is_positive = np.array([False, False, True, True])
    >>> coefs = RootCoefficients.for_round(0.5, 0.5, 1.0, 1.0)
    >>> best = binned_root_search(binned, np.full(4, 0.5), is_positive, coefs)
    >>> best["feature"], best["position"], binned.threshold(0, best["position"])
    (0, 1, 1.0)
    """
    (weights, is_positive), coefs = kernel_arguments(weights, is_positive, coefs)
    run_stop, run_positive = class_runs(is_positive)
    buffer = binned.buffer
    n_features = binned.shape[0]
    chunk = binned.chunk_rows or n_features
    best, roots = None, 0
    for start in range(0, n_features, chunk):
        stop = min(n_features, start + chunk)
        if features is None:
            rows = np.arange(stop - start)
        else:
            rows = features[(features >= start) & (features < stop)] - start
            if rows.size == 0:
                continue
        rows = rows.astype(np.int64)
        tops = (binned.n_edges[start + rows].astype(np.int64) if binned.dense
                else np.full(rows.size, -1, np.int64))
        blocks = new_blocks(min(N_BLOCKS, max(1, rows.size // 64)))
        _root_kernel(buffer[start:stop], feature_offset + start, rows, tops, weights,
                     run_stop, run_positive, coefs, float(best["score"] if best else alpha0),
                     bool(exhaustive), blocks)
        if binned.release is not None:
            binned.release(start, stop)
        found = merge_blocks(blocks)
        if found is None:
            continue
        roots += found["roots"]
        if best is None or found["score"] > best["score"]:
            best = found
    if best is None or not best["score"] > 0.0:
        return None
    return dict(best, roots=roots)


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
