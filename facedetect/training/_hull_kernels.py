"""The compiled minimum-loss search (numba), apart from its orchestration in
:func:`._search.hull_loss_search`: per feature, only the vertices of the lower-left convex
hulls of its ``(eP, eN)`` staircases can hold the minimum of ``L*``.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ._search_kernels import _record, cumulative_candidates
from ._roots import round_loss, solve_alpha

_jit = numba.njit(cache=True, boundscheck=False)
_pjit = numba.njit(cache=True, parallel=True, boundscheck=False)


@_jit
def _hull_push(hull, size, x, y, k, sign):
    """Monotone-chain step: pop while the last two points and the new one do not bend
    toward the origin (``sign`` flips for a chain walked in the other direction).
    ``hull = (xs, ys, positions)``."""
    hx, hy, hk = hull
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


@_jit
def _loss_bound(e_pos, e_neg, bounds):
    """The interval bounds' lower bound on ``L*`` (see :func:`._search.loss_bound_grid`)."""
    k_next, p_coef, q_coef = bounds
    bound = math.inf
    for i in range(k_next.size):
        bound = min(bound, k_next[i] + e_pos * p_coef[i] + e_neg * q_coef[i])
    return bound


@_pjit
def _hull_kernel(order, mask, samples, coefs, masses, bounds, blocks):
    """Per block of features, the candidate of least ``L*``, starting from each block's
    ``score`` (the seed's loss, at most ``L(0) = 1``). Until a block has a candidate of its
    own it also accepts a loss equal to the seed's, so ties go to the first."""
    a, b, cp, cn = coefs
    p, q = masses
    n_features, n = order.shape
    n_blocks = blocks.size
    for blk in numba.prange(n_blocks):
        block = blocks[blk]
        positions = np.empty(n, np.int64)
        cums = np.empty((n, 2))
        # Lower-left hulls of the two staircases: polarity +1 moves right and down,
        # polarity -1 left and up, hence the opposite turn signs.
        plus = (np.empty(n), np.empty(n), np.empty(n, np.int64))
        minus = (np.empty(n), np.empty(n), np.empty(n, np.int64))
        for f in range(blk * n_features // n_blocks, (blk + 1) * n_features // n_blocks):
            size_plus = 0
            size_minus = 0
            for i in range(cumulative_candidates(order[f], mask, samples, positions, cums)):
                cum_pos = cums[i, 0]
                cum_neg = cums[i, 1]
                size_plus = _hull_push(plus, size_plus, cum_pos, max(1.0 - cum_neg, 0.0),
                                       positions[i], 1.0)
                size_minus = _hull_push(minus, size_minus, max(1.0 - cum_pos, 0.0), cum_neg,
                                        positions[i], -1.0)
            for side in range(2):
                polarity = 1 if side == 0 else -1
                hx, hy, hk = plus if side == 0 else minus
                for v in range(size_plus if side == 0 else size_minus):
                    e_pos = hx[v]
                    e_neg = hy[v]
                    if a * e_pos + b * e_neg >= 0.5:  # root <= 0: cannot lower the loss
                        continue
                    bound = _loss_bound(e_pos, e_neg, bounds)
                    if bound > block.score or (block.found and bound == block.score):
                        continue
                    alpha = solve_alpha(e_pos, e_neg, a, b, cp, cn)
                    block.roots += 1
                    loss = round_loss(alpha, e_pos, e_neg, p, q, cp, cn)
                    if loss < block.score or (not block.found and loss == block.score):
                        _record(block, loss, f, hk[v], polarity,
                                (f * 2 + side) * n + hk[v], e_pos, e_neg)
