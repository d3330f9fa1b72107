"""The stump searches: one streaming pass over the sort order per round (the compiled
kernels are in :mod:`._search_kernels`).

Every kernel splits the features into contiguous blocks, searched in parallel, each keeping
its own best candidate; the block winners are merged with ties going to the lowest
candidate index ``(feature, position, polarity)``. The block count depends only on the
number of features, never on the thread count, so the model and the number of roots solved
are identical on every machine.

- :func:`conditional_root_search`: AdaBoostDB's conditional search (max root).
- :func:`exhaustive_root_search`: every candidate's root solved (DBN), the oracle.
- :func:`hull_loss_search`: minimum ``L*`` (Cost-Sensitive AdaBoost's rule), exactly, by
  evaluating only the vertices of each feature's lower-left convex hull.

Sort-order entries are unsigned; ``entry & mask`` is the sample and ``entry > mask`` flags a
position after which no threshold may fall (see :mod:`.stumps`).
"""

from __future__ import annotations

import math

import numpy as np

from ._search_kernels import (
    FEATURE,
    IDENT,
    _conditional_kernel,
    _exhaustive_kernel,
    _hull_kernel,
)
from .roots import round_loss
from .stumps import order_mask

N_BLOCKS = 16
# Fewer features than this per block and the blocks' separate searches cost more roots
# than the parallelism saves.
MIN_BLOCK_FEATURES = 256
# The conditional search's seeding pass looks at every SEED_STRIDE-th feature.
SEED_STRIDE = 64


def n_blocks_for(n_features: int) -> int:
    return min(N_BLOCKS, max(1, n_features // MIN_BLOCK_FEATURES))


def _empty_results(n_blocks):
    return (np.full(n_blocks, -np.inf), np.full((n_blocks, 4), -1, np.int64),
            np.zeros((n_blocks, 2)), np.zeros(n_blocks, np.int64))


def _merge(score, best_id, best_err, roots, larger_is_better=True):
    """Winner over blocks; equal scores go to the lowest candidate index."""
    valid = np.flatnonzero(best_id[:, FEATURE] >= 0)
    if valid.size == 0:
        return None
    key = score[valid] if larger_is_better else -score[valid]
    tied = valid[key == key.max()]
    winner = tied[np.argmin(best_id[tied, IDENT])]
    f, k, polarity = (int(v) for v in best_id[winner, :3])
    return {"feature": f, "position": k, "polarity": polarity,
            "e_pos": float(best_err[winner, 0]), "e_neg": float(best_err[winner, 1]),
            "score": float(score[winner]), "roots": int(roots.sum())}


# --- max root: the conditional search ------------------------------------------------------

def _run_conditional(order, features, weights, is_positive, a, b, cp, cn, alpha0, n_blocks):
    best_alpha, best_id, best_err, roots = _empty_results(n_blocks)
    _conditional_kernel(order, order_mask(order), features, weights, is_positive,
                        a, b, cp, cn, alpha0, best_alpha, best_id, best_err, roots)
    return _merge(best_alpha, best_id, best_err, roots)


def conditional_root_search(order, weights, is_positive, a, b, cp, cn,
                            seed_stride=SEED_STRIDE):
    """AdaBoostDB's conditional search: the candidate with the largest root.

    Two passes, the first over every ``seed_stride``-th feature only: it finds a good
    root quickly, and the full parallel pass starts every block from it, so each block
    solves only the few roots that beat it instead of climbing from zero on its own. The
    result is the candidate an exhaustive search would pick.

    Returns a dict with ``feature, position, polarity, e_pos, e_neg, score`` (the root,
    as alpha) and ``roots`` (the number of roots solved, the paper's "zeros"), or None
    when no candidate has a positive root.
    """
    n_features = order.shape[0]
    seed = None
    if n_features >= 2 * seed_stride:
        sample = np.arange(0, n_features, seed_stride)
        seed = _run_conditional(order, sample, weights, is_positive, a, b, cp, cn, 0.0, 1)
    alpha0 = 0.0 if seed is None or math.isinf(seed["score"]) else seed["score"]
    result = _run_conditional(order, np.arange(n_features), weights, is_positive,
                              a, b, cp, cn, alpha0, n_blocks_for(n_features))
    if result is None:
        result = seed
    elif seed is not None:
        result["roots"] += seed["roots"]
    if result is None or result["score"] <= 0.0:
        return None
    return result


# --- max root: every root solved (DBN) -------------------------------------------------------

def exhaustive_root_search(order, weights, is_positive, a, b, cp, cn):
    """Every candidate's root solved, the largest kept (DBN). Same output as above."""
    n_blocks = n_blocks_for(order.shape[0])
    best_alpha, best_id, best_err, roots = _empty_results(n_blocks)
    _exhaustive_kernel(order, order_mask(order), weights, is_positive, a, b, cp, cn,
                       best_alpha, best_id, best_err, roots)
    result = _merge(best_alpha, best_id, best_err, roots)
    if result is None or result["score"] <= 0.0:
        return None
    return result


# --- min loss through per-feature convex hulls -----------------------------------------------

def loss_bound_grid(p, q, cp, cn, n_points: int = 32):
    """Linear lower bounds on ``L*`` valid for any candidate with a positive root.

    For ``alpha`` in ``[alpha_i, alpha_{i+1}]``, ``L >= K(alpha_{i+1}) + eP P(alpha_i) +
    eN Q(alpha_i)`` with ``K = p e^{-Cp a} + q e^{-Cn a}`` decreasing and
    ``P = 2p sinh(Cp a)``, ``Q = 2q sinh(Cn a)`` increasing; the last interval is open
    (``K(inf) = 0``). The minimum over the intervals bounds ``L*`` from below.
    """
    grid = np.concatenate([[0.0], 0.005 * 1.5 ** np.arange(n_points - 1)])
    next_grid = np.append(grid[1:], np.inf)
    with np.errstate(over="ignore"):
        k_next = p * np.exp(-cp * next_grid) + q * np.exp(-cn * next_grid)
        p_coef = 2 * p * np.sinh(cp * grid)
        q_coef = 2 * q * np.sinh(cn * grid)
    return k_next, p_coef, q_coef


def hull_loss_search(order, weights, is_positive, p, q, a, b, cp, cn):
    """The candidate of minimum ``L*``; ``score`` is that loss. None if nothing beats 1.

    The max-root candidate (the conditional search) is usually close to the min-loss one;
    its loss seeds every block, so the interval bounds discard almost every hull vertex
    without solving its root. Candidates are indexed ``(feature, polarity, position)``
    for ties, as in :func:`facedetect.training.rules.min_loss_brute_force`.
    """
    seed = conditional_root_search(order, weights, is_positive, a, b, cp, cn)
    if seed is None:
        return None
    loss0 = min(1.0, round_loss(seed["score"], seed["e_pos"], seed["e_neg"], p, q, cp, cn))
    n_blocks = n_blocks_for(order.shape[0])
    best_loss, best_id, best_err, roots = _empty_results(n_blocks)
    k_next, p_coef, q_coef = loss_bound_grid(p, q, cp, cn)
    _hull_kernel(order, order_mask(order), weights, is_positive, p, q, a, b, cp, cn, loss0,
                 k_next, p_coef, q_coef, best_loss, best_id, best_err, roots)
    result = _merge(best_loss, best_id, best_err, roots, larger_is_better=False)
    if result is not None:
        result["roots"] += seed["roots"]
    return result

