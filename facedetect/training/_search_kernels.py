"""The compiled stump-search kernels over the sort order (numba), apart from their
orchestration in :mod:`._search`: one streaming pass over the sort order per block of features.

Sort-order entries are unsigned; ``entry & mask`` is the sample and ``entry > mask`` flags a
position after which no threshold may fall (see :mod:`._stumps`). Every kernel takes the
round as two tuples, ``samples = (weights, is_positive)`` and ``coefs = (a, b, cp, cn)``
(:class:`._roots.RootCoefficients`), and writes one :data:`BLOCK` record per block of
features.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ._roots import solve_alpha

# Slack of the running-sum pre-filter, in units of n * eps * (sum of |terms|): four times
# the worst-case rounding of a running sum of n terms. Candidates that pass it are re-tested
# with exact errors, so the slack only costs re-tests; too large a slack (it was 1e-9
# absolute) lets every threshold through once cosh(Cp alpha) >> cosh(Cn alpha).
FILTER_SLACK = 4.0 * np.finfo(np.float64).eps
# Relative slack of the exact improvement test: rounding of a handful of terms.
EXACT_SLACK = 1e-12

# One block's search: its best candidate so far, and (for the conditional search) the
# improvement test at the best root, ``c . R < s`` (see _set_alpha).
BLOCK = np.dtype([
    ("score", np.float64),      # the best root (or loss); the root the test is set at
    ("feature", np.int64), ("position", np.int64), ("polarity", np.int64),
    ("ident", np.int64),        # the candidate's index, for ties
    ("e_pos", np.float64), ("e_neg", np.float64),
    ("found", np.bool_), ("roots", np.int64),
    ("r_pos", np.float64), ("r_neg", np.float64), ("s", np.float64),
    ("low", np.float64), ("high", np.float64),   # the running-sum pre-filter's bounds
])


def new_blocks(n_blocks: int, score: float = -np.inf) -> np.ndarray:
    """``n_blocks`` empty block records starting from ``score``."""
    blocks = np.zeros(n_blocks, BLOCK)
    blocks["score"] = score
    blocks["feature"] = -1
    return blocks


_jit = numba.njit(cache=True, boundscheck=False)
_pjit = numba.njit(cache=True, parallel=True, boundscheck=False)


@_jit
def _add_sample(j, samples, cum_pos, cum_neg):
    """Sample ``j``'s weight added to its class's running sum."""
    weights, is_positive = samples
    if is_positive[j]:
        return cum_pos + weights[j], cum_neg
    return cum_pos, cum_neg + weights[j]


@_jit
def _errors(cum_pos, cum_neg, polarity):
    if polarity > 0:
        return cum_pos, max(1.0 - cum_neg, 0.0)
    return max(1.0 - cum_pos, 0.0), cum_neg


@_jit
def _record(block, score, f, k, polarity, ident, e_pos, e_neg):
    block.score = score
    block.feature = f
    block.position = k
    block.polarity = polarity
    block.ident = ident
    block.e_pos = e_pos
    block.e_neg = e_neg
    block.found = True


@_jit
def cumulative_candidates(row, mask, samples, positions, cums):
    """The running class sums of one feature in sort order, at each position a threshold
    may follow: ``cums[i] = (cum_pos, cum_neg)`` after ``positions[i]``. Returns how many.
    The one running-sum loop of the exhaustive and hull kernels."""
    cum_pos = 0.0
    cum_neg = 0.0
    count = 0
    for k in range(row.size - 1):
        cum_pos, cum_neg = _add_sample(row[k] & mask, samples, cum_pos, cum_neg)
        if row[k] > mask:
            continue
        positions[count] = k
        cums[count, 0] = cum_pos
        cums[count, 1] = cum_neg
        count += 1
    return count


@_jit
def test_terms(alpha, coefs):
    """``(R_P, R_N, s)`` of the improvement test ``a eP R_P + b eN R_N < s`` at ``alpha``:
    the notes' ``V(x) = S(x)`` divided by ``x^Cp``, which keeps the numbers small, with
    ``R = (2 cosh(Cp alpha), 2 cosh(Cn alpha))`` and ``s = a e^{-Cp alpha} + b e^{-Cn alpha}``."""
    a, b, cp, cn = coefs
    return (2.0 * math.cosh(cp * alpha), 2.0 * math.cosh(cn * alpha),
            a * math.exp(-cp * alpha) + b * math.exp(-cn * alpha))


@_jit
def _set_alpha(block, signed, samples, coefs, alpha):
    """Move the block's improvement test to ``alpha``: R, s and the running-sum bounds.

    With ``u = a R_P cum_pos - b R_N cum_neg`` polarity +1 can improve only if
    ``u < s - b R_N`` and polarity -1 only if ``u > a R_P - s``.
    """
    weights, is_positive = samples
    a, b = coefs[0], coefs[1]
    block.score = alpha
    block.r_pos, block.r_neg, block.s = test_terms(alpha, coefs)
    coef_pos = a * block.r_pos
    coef_neg = b * block.r_neg
    for j in range(weights.size):
        signed[j] = coef_pos * weights[j] if is_positive[j] else -coef_neg * weights[j]
    slack = FILTER_SLACK * weights.size * (coef_pos + coef_neg)
    block.low = block.s - coef_neg + slack
    block.high = coef_pos - block.s - slack


@_jit
def _advance_cumulative(row, position, mask, samples, lane_sums):
    """Cumulative class weights up to ``position``, summed in sort order.

    ``lane_sums`` holds ``(next position, cum_pos, cum_neg)`` of the lane's feature, so
    successive visits of one feature add each sample once: a visit costs the distance
    from the last one, not the position. :func:`cumulative_candidates` adds the same
    numbers in the same order, so every kernel sees bit-identical errors.
    """
    cum_pos = lane_sums[1]
    cum_neg = lane_sums[2]
    for k in range(int(lane_sums[0]), position + 1):
        cum_pos, cum_neg = _add_sample(row[k] & mask, samples, cum_pos, cum_neg)
    lane_sums[0] = position + 1
    lane_sums[1] = cum_pos
    lane_sums[2] = cum_neg
    return cum_pos, cum_neg


@_jit
def _prefix(signed, row, position, mask):
    u = 0.0
    for k in range(position + 1):
        u += signed[row[k] & mask]
    return u


@_jit
def _visit(row, mask, f, k, samples, coefs, block, signed, lane_sums):
    """Exact test, and the root if it passes, for both polarities of one threshold.

    Returns whether the test moved. A candidate wins on a larger root, or on an equal root
    with a smaller index, so the visiting order does not matter. Until the block has a
    candidate it also accepts a root equal to its seed.
    """
    a, b, cp, cn = coefs
    cum_pos, cum_neg = _advance_cumulative(row, k, mask, samples, lane_sums)
    moved = False
    for polarity in (1, -1):
        e_pos, e_neg = _errors(cum_pos, cum_neg, polarity)
        # The exact test, with room only for the rounding of its own few terms: a slack
        # scaled by the coefficients (as the pre-filter needs) would let every candidate
        # with eP = 0 through once R_P is huge, and solve millions of roots.
        lhs = a * e_pos * block.r_pos + b * e_neg * block.r_neg
        if not lhs <= block.s + EXACT_SLACK * (lhs + block.s):
            continue
        root = solve_alpha(e_pos, e_neg, a, b, cp, cn)
        block.roots += 1
        ident = (f * row.size + k) * 2 + (0 if polarity > 0 else 1)
        alpha = block.score
        if not block.found:
            better = root >= alpha
        else:
            better = root > alpha or (root == alpha and ident < block.ident)
        if not better:
            continue
        _record(block, root, f, k, polarity, ident, e_pos, e_neg)
        if root != alpha:
            if math.isinf(root):
                block.low = -math.inf  # nothing beats a perfect stump: stop testing
                block.high = math.inf
            else:
                _set_alpha(block, signed, samples, coefs, root)
            moved = True
    return moved


@_pjit
def _conditional_kernel(order, mask, features, samples, coefs, alpha0, blocks):
    """Four features at a time per block: four running sums keep the loads in flight."""
    n = order.shape[1]
    n_features = features.size
    n_blocks = blocks.size
    for blk in numba.prange(n_blocks):
        block = blocks[blk]
        signed = np.empty(n)
        sums = np.zeros((4, 3))
        _set_alpha(block, signed, samples, coefs, alpha0)
        low = block.low
        high = block.high
        start = blk * n_features // n_blocks
        stop = (blk + 1) * n_features // n_blocks
        for i in range(start, stop, 4):
            # Tail lanes repeat the block's last feature; the index tie-break ignores them.
            f0 = features[i]
            f1 = features[min(i + 1, stop - 1)]
            f2 = features[min(i + 2, stop - 1)]
            f3 = features[min(i + 3, stop - 1)]
            r0 = order[f0]
            r1 = order[f1]
            r2 = order[f2]
            r3 = order[f3]
            sums[:] = 0.0
            u0 = 0.0
            u1 = 0.0
            u2 = 0.0
            u3 = 0.0
            for k in range(n - 1):
                j0 = r0[k]
                j1 = r1[k]
                j2 = r2[k]
                j3 = r3[k]
                u0 += signed[j0 & mask]
                u1 += signed[j1 & mask]
                u2 += signed[j2 & mask]
                u3 += signed[j3 & mask]
                if min(min(u0, u1), min(u2, u3)) >= low and max(max(u0, u1), max(u2, u3)) <= high:
                    continue
                moved = False
                for lane in range(4):
                    if lane == 0:
                        f, row, j, u = f0, r0, j0, u0
                    elif lane == 1:
                        f, row, j, u = f1, r1, j1, u1
                    elif lane == 2:
                        f, row, j, u = f2, r2, j2, u2
                    else:
                        f, row, j, u = f3, r3, j3, u3
                    if j > mask or low <= u <= high:
                        continue
                    if _visit(row, mask, f, k, samples, coefs, block, signed, sums[lane]):
                        moved = True
                if moved:
                    low = block.low
                    high = block.high
                    u0 = _prefix(signed, r0, k, mask)
                    u1 = _prefix(signed, r1, k, mask)
                    u2 = _prefix(signed, r2, k, mask)
                    u3 = _prefix(signed, r3, k, mask)
        if not block.found:
            block.score = -np.inf


@_pjit
def _exhaustive_kernel(order, mask, samples, coefs, blocks):
    """Every candidate's root; the first of equal roots wins (the canonical order)."""
    a, b, cp, cn = coefs
    n_features, n = order.shape
    n_blocks = blocks.size
    for blk in numba.prange(n_blocks):
        block = blocks[blk]
        positions = np.empty(n, np.int64)
        cums = np.empty((n, 2))
        for f in range(blk * n_features // n_blocks, (blk + 1) * n_features // n_blocks):
            for i in range(cumulative_candidates(order[f], mask, samples, positions, cums)):
                k = positions[i]
                for polarity in (1, -1):
                    e_pos, e_neg = _errors(cums[i, 0], cums[i, 1], polarity)
                    root = solve_alpha(e_pos, e_neg, a, b, cp, cn)
                    block.roots += 1
                    if root > block.score:
                        _record(block, root, f, k, polarity,
                                (f * n + k) * 2 + (0 if polarity > 0 else 1), e_pos, e_neg)
