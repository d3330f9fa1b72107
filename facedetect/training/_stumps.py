"""Decision stumps over a feature matrix: the sort order, thresholds and outputs.

A stump is ``(feature, threshold, polarity)`` and outputs ``polarity`` where
``x > threshold`` and ``-polarity`` elsewhere.

The sort order of every feature is computed once per training run and stored feature-major
as uint16 (uint32 above 32,767 samples). Sorted position ``k`` holds the sample index, with
the top bit set when no threshold may follow it: the next sorted value is equal (a tie) or
``k`` is the last position. Decoding is one AND with an unsigned mask, which keeps the hot
loop free of sign handling and bounds fix-ups. One streaming read of this array per round
is the whole cost of the stump search.

Candidates are identified by ``(feature, position, polarity)``: the threshold lies between
sorted positions ``position`` and ``position + 1``. With ``cum_pos`` / ``cum_neg`` the
cumulative positive / negative weight up to and including ``position``:

- polarity +1: ``eP = cum_pos``, ``eN = 1 - cum_neg``;
- polarity -1: ``eP = 1 - cum_pos``, ``eN = cum_neg``.
"""

from __future__ import annotations

import numba
import numpy as np


def _order_dtype(n_samples: int):
    return np.uint16 if n_samples <= 0x7FFF else np.uint32


def order_mask(order: np.ndarray):
    """The mask that strips the "no threshold after this position" flag."""
    return order.dtype.type(np.iinfo(order.dtype).max >> 1)


RADIX_BITS = 11
RADIX_SIZE = 1 << RADIX_BITS


@numba.njit(cache=True)
def _float32_keys(column, keys):
    """Unsigned keys whose integer order is the float order (IEEE-754 bit trick)."""
    bits = column.view(np.uint32)
    for i in range(bits.size):
        b = bits[i]
        if b == np.uint32(0x80000000):
            b = np.uint32(0)  # -0.0 sorts with +0.0, as a stable float sort keeps them
        keys[i] = ~b if b & np.uint32(0x80000000) else b | np.uint32(0x80000000)


@numba.njit(cache=True)
def _radix_argsort(keys, idx, tmp_keys, tmp_idx, counts):
    """Stable LSD radix argsort of uint32 keys in three 11-bit passes."""
    n = keys.size
    for i in range(n):
        idx[i] = i
    for shift in (0, RADIX_BITS, 2 * RADIX_BITS):
        counts[:] = 0
        for i in range(n):
            counts[(keys[i] >> shift) & (RADIX_SIZE - 1)] += 1
        if counts[(keys[0] >> shift) & (RADIX_SIZE - 1)] == n:
            continue  # every key has the same digit here: the pass would not move anything
        total = 0
        for d in range(RADIX_SIZE):
            c = counts[d]
            counts[d] = total
            total += c
        for i in range(n):
            d = (keys[i] >> shift) & (RADIX_SIZE - 1)
            pos = counts[d]
            tmp_keys[pos] = keys[i]
            tmp_idx[pos] = idx[i]
            counts[d] = pos + 1
        for i in range(n):
            keys[i] = tmp_keys[i]
            idx[i] = tmp_idx[i]


@numba.njit(cache=True)
def _encode_row(column, idx, order_row, flag):
    n = column.size
    for k in range(n - 1):
        if column[idx[k]] == column[idx[k + 1]]:
            order_row[k] = idx[k] | flag
        else:
            order_row[k] = idx[k]
    order_row[n - 1] = idx[n - 1] | flag


@numba.njit(cache=True)
def radix_scratch(n):
    """``(keys, tmp_keys, idx, tmp_idx, counts)``: the buffers of one radix argsort."""
    return (np.empty(n, np.uint32), np.empty(n, np.uint32), np.empty(n, np.int64),
            np.empty(n, np.int64), np.empty(RADIX_SIZE, np.int64))


@numba.njit(parallel=True, cache=True)
def _presort_float32(values_t, order, flag, n_blocks):
    n_features, n = values_t.shape
    for blk in numba.prange(n_blocks):
        keys, tmp_keys, idx, tmp_idx, counts = radix_scratch(n)
        for f in range(blk * n_features // n_blocks, (blk + 1) * n_features // n_blocks):
            _float32_keys(values_t[f], keys)
            _radix_argsort(keys, idx, tmp_keys, tmp_idx, counts)
            _encode_row(values_t[f], idx, order[f], flag)


@numba.njit(parallel=True, cache=True)
def _presort_any(values_t, order, flag):
    for f in numba.prange(values_t.shape[0]):
        _encode_row(values_t[f], np.argsort(values_t[f], kind="mergesort"), order[f], flag)


def presort(values_t: np.ndarray) -> np.ndarray:
    """Stable sort order of every row of a feature-major ``(n_features, n_samples)`` matrix,
    with "no threshold after this position" encoded as the complement of the index.

    float32 rows (the Haar matrix) go through a radix sort, 10x faster than numpy's
    stable argsort here; other types through a merge sort.
    """
    values_t = np.ascontiguousarray(values_t)
    n_samples = values_t.shape[1]
    order = np.empty(values_t.shape, dtype=_order_dtype(n_samples))
    flag = order.dtype.type(order_mask(order) + 1)
    if values_t.dtype == np.float32:
        _presort_float32(values_t, order, flag, 64)
    else:
        _presort_any(values_t, order, flag)
    return order


def decode(order_entries):
    """Sample indices of order entries (the tie flag stripped)."""
    order_entries = np.asarray(order_entries)
    return (order_entries & order_mask(order_entries)).astype(np.intp)


def boundary(order_entries):
    """True where a threshold may follow the sorted position."""
    order_entries = np.asarray(order_entries)
    return order_entries <= order_mask(order_entries)


def stump_threshold(values_t: np.ndarray, order: np.ndarray, feature: int,
                    position: int) -> float:
    """A threshold strictly between the sorted values at ``position`` and ``position + 1``."""
    low = float(values_t[feature, decode(order[feature, position])])
    high = float(values_t[feature, decode(order[feature, position + 1])])
    middle = low + (high - low) / 2
    # Adjacent doubles: the midpoint can round up to ``high``; ``low`` still separates.
    return middle if low < middle < high else low


def stump_predict(values: np.ndarray, threshold: float, polarity: int) -> np.ndarray:
    """Outputs in {-1, +1} of one stump on a feature column."""
    return np.where(values > threshold, polarity, -polarity).astype(np.int8)


def candidate_errors(values_t: np.ndarray, order: np.ndarray, weights: np.ndarray,
                     is_positive: np.ndarray, features: np.ndarray):
    """Brute-force ``(eP, eN)`` of every candidate of the given features, with numpy.

    Returns arrays of shape ``(len(features), 2, n_samples - 1)`` (polarity +1 first) and a
    boolean mask of the valid positions (thresholds between distinct values). Cumulative
    sums run sequentially, in the same order as the numba kernels, so the values are
    bit-identical to theirs.
    """
    block = order[features]
    valid = boundary(block[:, :-1])
    samples = decode(block)
    pos_weights = np.where(is_positive, weights, 0.0)
    neg_weights = np.where(is_positive, 0.0, weights)
    cum_pos = np.cumsum(pos_weights[samples], axis=1)[:, :-1]
    cum_neg = np.cumsum(neg_weights[samples], axis=1)[:, :-1]
    e_pos = np.stack([cum_pos, np.maximum(1.0 - cum_pos, 0.0)], axis=1)
    e_neg = np.stack([np.maximum(1.0 - cum_neg, 0.0), cum_neg], axis=1)
    return e_pos, e_neg, valid
