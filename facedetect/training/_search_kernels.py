"""The compiled stump-search kernels (numba), apart from their orchestration in
:mod:`.search`: one streaming pass over the sort order per block of features.

Sort-order entries are unsigned; ``entry & mask`` is the sample and ``entry > mask`` flags a
position after which no threshold may fall (see :mod:`.stumps`).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .roots import round_loss, solve_alpha

# Slack of the running-sum pre-filter, in units of n * eps * (sum of |terms|): four times
# the worst-case rounding of a running sum of n terms. Candidates that pass it are re-tested
# with exact errors, so the slack only costs re-tests; too large a slack (it was 1e-9
# absolute) lets every threshold through once cosh(Cp alpha) >> cosh(Cn alpha).
FILTER_SLACK = 4.0 * np.finfo(np.float64).eps
# Relative slack of the exact improvement test: rounding of a handful of terms.
EXACT_SLACK = 1e-12
# Search state of one block, in a small array so that the rare path can update it.
ALPHA, R_POS, R_NEG, S, LOW, HIGH, SLACK, FOUND = range(8)
FEATURE, POSITION, POLARITY, IDENT = range(4)

_jit = numba.njit(cache=True, boundscheck=False)
_pjit = numba.njit(cache=True, parallel=True, boundscheck=False)


@_jit
def _add_sample(j, weights, is_positive, cum_pos, cum_neg):
    """Sample ``j``'s weight added to its class's running sum."""
    if is_positive[j]:
        return cum_pos + weights[j], cum_neg
    return cum_pos, cum_neg + weights[j]


@_jit
def _advance_cumulative(row, position, mask, weights, is_positive, lane, sums):
    """Cumulative class weights up to ``position``, summed in sort order.

    ``sums[lane]`` holds ``(next position, cum_pos, cum_neg)`` of the lane's feature, so
    successive visits of one feature add each sample once: a visit costs the distance
    from the last one, not the position. The exhaustive kernel adds the same numbers in the
    same order, so both see bit-identical errors.
    """
    start = int(sums[lane, 0])
    cum_pos = sums[lane, 1]
    cum_neg = sums[lane, 2]
    for k in range(start, position + 1):
        cum_pos, cum_neg = _add_sample(row[k] & mask, weights, is_positive, cum_pos, cum_neg)
    sums[lane, 0] = position + 1
    sums[lane, 1] = cum_pos
    sums[lane, 2] = cum_neg
    return cum_pos, cum_neg


@_jit
def _errors(cum_pos, cum_neg, polarity):
    if polarity > 0:
        return cum_pos, max(1.0 - cum_neg, 0.0)
    return max(1.0 - cum_pos, 0.0), cum_neg


@_jit
def _prefix(signed, row, position, mask):
    u = 0.0
    for k in range(position + 1):
        u += signed[row[k] & mask]
    return u


@_jit
def _record(best_id, best_err, blk, f, k, polarity, ident, e_pos, e_neg):
    best_id[blk, FEATURE] = f
    best_id[blk, POSITION] = k
    best_id[blk, POLARITY] = polarity
    best_id[blk, IDENT] = ident
    best_err[blk, 0] = e_pos
    best_err[blk, 1] = e_neg


@_jit
def _fill_signed(signed, weights, is_positive, coef_pos, coef_neg):
    for j in range(weights.size):
        signed[j] = coef_pos * weights[j] if is_positive[j] else -coef_neg * weights[j]


@_jit
def _set_alpha(st, signed, weights, is_positive, a, b, cp, cn, alpha):
    """Move the block's improvement test to ``alpha``: R, s and the running-sum bounds.

    The test ``c . R < s`` uses ``R = (2 cosh(Cp alpha), 2 cosh(Cn alpha))`` and
    ``s = a e^{-Cp alpha} + b e^{-Cn alpha}``: the notes' ``V(x) = S(x)`` divided by
    ``x^Cp``, which keeps the numbers small. With ``u = a R_P cum_pos - b R_N cum_neg``
    polarity +1 can improve only if ``u < s - b R_N`` and polarity -1 only if
    ``u > a R_P - s``.
    """
    st[ALPHA] = alpha
    st[R_POS] = 2.0 * math.cosh(cp * alpha)
    st[R_NEG] = 2.0 * math.cosh(cn * alpha)
    st[S] = a * math.exp(-cp * alpha) + b * math.exp(-cn * alpha)
    coef_pos = a * st[R_POS]
    coef_neg = b * st[R_NEG]
    _fill_signed(signed, weights, is_positive, coef_pos, coef_neg)
    st[SLACK] = FILTER_SLACK * weights.size * (coef_pos + coef_neg)
    st[LOW] = st[S] - coef_neg + st[SLACK]
    st[HIGH] = coef_pos - st[S] - st[SLACK]


@_jit
def _visit(row, f, k, n, mask, weights, is_positive, a, b, cp, cn, st, signed,
           best_id, best_err, blk, lane, sums):
    """Exact test, and the root if it passes, for both polarities of one threshold.

    Returns (roots solved, whether the test moved). A candidate wins on a larger root, or
    on an equal root with a smaller index, so the visiting order does not matter. Until
    the block has a candidate it also accepts a root equal to its seed.
    """
    cum_pos, cum_neg = _advance_cumulative(row, k, mask, weights, is_positive, lane, sums)
    n_roots = 0
    moved = False
    for polarity in (1, -1):
        e_pos, e_neg = _errors(cum_pos, cum_neg, polarity)
        # The exact test, with room only for the rounding of its own few terms: a slack
        # scaled by the coefficients (as the pre-filter needs) would let every candidate
        # with eP = 0 through once R_P is huge, and solve millions of roots.
        lhs = a * e_pos * st[R_POS] + b * e_neg * st[R_NEG]
        if not lhs <= st[S] + EXACT_SLACK * (lhs + st[S]):
            continue
        root = solve_alpha(e_pos, e_neg, a, b, cp, cn)
        n_roots += 1
        ident = (f * n + k) * 2 + (0 if polarity > 0 else 1)
        alpha = st[ALPHA]
        if st[FOUND] == 0.0:
            better = root >= alpha
        else:
            better = root > alpha or (root == alpha and ident < best_id[blk, IDENT])
        if not better:
            continue
        st[FOUND] = 1.0
        _record(best_id, best_err, blk, f, k, polarity, ident, e_pos, e_neg)
        if root != alpha:
            if math.isinf(root):
                st[ALPHA] = root
                st[LOW] = -math.inf  # nothing beats a perfect stump: stop testing
                st[HIGH] = math.inf
            else:
                _set_alpha(st, signed, weights, is_positive, a, b, cp, cn, root)
            moved = True
    return n_roots, moved


@_pjit
def _conditional_kernel(order, mask, features, weights, is_positive, a, b, cp, cn, alpha0,
                        best_alpha, best_id, best_err, roots):
    """Four features at a time per block: four running sums keep the loads in flight."""
    n = order.shape[1]
    n_features = features.size
    n_blocks = best_alpha.size
    for blk in numba.prange(n_blocks):
        signed = np.empty(n)
        st = np.zeros(8)
        sums = np.zeros((4, 3))
        _set_alpha(st, signed, weights, is_positive, a, b, cp, cn, alpha0)
        low = st[LOW]
        high = st[HIGH]
        n_roots = 0
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
                    solved, lane_moved = _visit(row, f, k, n, mask, weights, is_positive,
                                                a, b, cp, cn, st, signed, best_id,
                                                best_err, blk, lane, sums)
                    n_roots += solved
                    moved = moved or lane_moved
                if moved:
                    low = st[LOW]
                    high = st[HIGH]
                    u0 = _prefix(signed, r0, k, mask)
                    u1 = _prefix(signed, r1, k, mask)
                    u2 = _prefix(signed, r2, k, mask)
                    u3 = _prefix(signed, r3, k, mask)
        best_alpha[blk] = st[ALPHA] if st[FOUND] != 0.0 else -np.inf
        roots[blk] = n_roots


@_pjit
def _exhaustive_kernel(order, mask, weights, is_positive, a, b, cp, cn,
                       best_alpha, best_id, best_err, roots):
    n_features, n = order.shape
    n_blocks = best_alpha.size
    for blk in numba.prange(n_blocks):
        alpha = -np.inf
        n_roots = 0
        for f in range(blk * n_features // n_blocks, (blk + 1) * n_features // n_blocks):
            row = order[f]
            cum_pos = 0.0
            cum_neg = 0.0
            for k in range(n - 1):
                cum_pos, cum_neg = _add_sample(row[k] & mask, weights, is_positive,
                                               cum_pos, cum_neg)
                if row[k] > mask:
                    continue
                for polarity in (1, -1):
                    e_pos, e_neg = _errors(cum_pos, cum_neg, polarity)
                    root = solve_alpha(e_pos, e_neg, a, b, cp, cn)
                    n_roots += 1
                    if root > alpha:  # first of equal roots wins: the canonical order
                        alpha = root
                        _record(best_id, best_err, blk, f, k, polarity,
                                (f * n + k) * 2 + (0 if polarity > 0 else 1), e_pos, e_neg)
        best_alpha[blk] = alpha
        roots[blk] = n_roots


@_jit
def _hull_push(hx, hy, hk, size, x, y, k, sign):
    """Monotone-chain step: pop while the last two points and the new one do not bend
    toward the origin (``sign`` flips for a chain walked in the other direction)."""
    while size >= 2:
        turn = ((hx[size - 1] - hx[size - 2]) * (y - hy[size - 2])
                - (hy[size - 1] - hy[size - 2]) * (x - hx[size - 2]))
        if sign * turn > 0.0:
            break
        size -= 1
    hx[size] = x
    hy[size] = y
    hk[size] = k
    return size + 1


@_pjit
def _hull_kernel(order, mask, weights, is_positive, p, q, a, b, cp, cn, loss0,
                 k_next, p_coef, q_coef, best_loss, best_id, best_err, roots):
    n_features, n = order.shape
    n_blocks = best_loss.size
    for blk in numba.prange(n_blocks):
        # Lower-left hulls of the two staircases: polarity +1 moves right and down,
        # polarity -1 left and up, hence the opposite turn signs.
        hx = np.empty((2, n))
        hy = np.empty((2, n))
        hk = np.empty((2, n), np.int64)
        # Start from the seed's loss (at most L(0) = 1); until the block has a candidate
        # of its own it also accepts a loss equal to the seed's, so ties go to the first.
        loss_best = loss0
        found = False
        n_roots = 0
        for f in range(blk * n_features // n_blocks, (blk + 1) * n_features // n_blocks):
            row = order[f]
            cum_pos = 0.0
            cum_neg = 0.0
            size_plus = 0
            size_minus = 0
            for k in range(n - 1):
                cum_pos, cum_neg = _add_sample(row[k] & mask, weights, is_positive,
                                               cum_pos, cum_neg)
                if row[k] > mask:
                    continue
                size_plus = _hull_push(hx[0], hy[0], hk[0], size_plus,
                                       cum_pos, max(1.0 - cum_neg, 0.0), k, 1.0)
                size_minus = _hull_push(hx[1], hy[1], hk[1], size_minus,
                                        max(1.0 - cum_pos, 0.0), cum_neg, k, -1.0)
            for side in range(2):
                polarity = 1 if side == 0 else -1
                for v in range(size_plus if side == 0 else size_minus):
                    e_pos = hx[side, v]
                    e_neg = hy[side, v]
                    if a * e_pos + b * e_neg >= 0.5:  # root <= 0: cannot lower the loss
                        continue
                    bound = math.inf
                    for i in range(k_next.size):
                        bound = min(bound, k_next[i] + e_pos * p_coef[i] + e_neg * q_coef[i])
                    if bound > loss_best or (found and bound == loss_best):
                        continue
                    alpha = solve_alpha(e_pos, e_neg, a, b, cp, cn)
                    n_roots += 1
                    loss = round_loss(alpha, e_pos, e_neg, p, q, cp, cn)
                    if loss < loss_best or (not found and loss == loss_best):
                        found = True
                        loss_best = loss
                        k = hk[side, v]
                        _record(best_id, best_err, blk, f, k, polarity,
                                (f * 2 + side) * n + k, e_pos, e_neg)
        best_loss[blk] = loss_best
        roots[blk] = n_roots
