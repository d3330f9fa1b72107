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

Each takes the round's sample weights and classes, and its :class:`._roots.RootCoefficients`.

Sort-order entries are unsigned; ``entry & mask`` is the sample and ``entry > mask`` flags a
position after which no threshold may fall (see :mod:`._stumps`).
"""

from __future__ import annotations

import math

import numpy as np

from ._hull_kernels import _hull_kernel
from ._search_kernels import _conditional_kernel, _exhaustive_kernel, new_blocks
from ._roots import RootCoefficients, round_loss
from ._stumps import order_mask

N_BLOCKS = 16
# Fewer features than this per block and the blocks' separate searches cost more roots
# than the parallelism saves.
MIN_BLOCK_FEATURES = 256
# The conditional search's seeding pass looks at every SEED_STRIDE-th feature.
SEED_STRIDE = 64


def _n_blocks_for(n_features: int) -> int:
    return min(N_BLOCKS, max(1, n_features // MIN_BLOCK_FEATURES))


def merge_blocks(blocks, larger_is_better: bool = True) -> dict | None:
    """Winner over the blocks' records; equal scores go to the lowest candidate index."""
    valid = np.flatnonzero(blocks["found"])
    if valid.size == 0:
        return None
    score = blocks["score"][valid]
    key = score if larger_is_better else -score
    tied = valid[key == key.max()]
    winner = blocks[tied[np.argmin(blocks["ident"][tied])]]
    return {"feature": int(winner["feature"]), "position": int(winner["position"]),
            "polarity": int(winner["polarity"]),
            "e_pos": float(winner["e_pos"]), "e_neg": float(winner["e_neg"]),
            "score": float(winner["score"]), "roots": int(blocks["roots"].sum())}


def kernel_arguments(weights, is_positive, coefs) -> tuple[tuple, tuple]:
    """``(samples, coefs)`` as the kernels take them: arrays of one dtype, plain floats."""
    samples = (np.ascontiguousarray(weights, dtype=np.float64),
               np.ascontiguousarray(is_positive, dtype=np.bool_))
    return samples, tuple(float(c) for c in coefs)


# --- max root: the conditional search ------------------------------------------------------

def _run_conditional(order, features, samples, coefs, alpha0, n_blocks):
    blocks = new_blocks(n_blocks)
    _conditional_kernel(order, order_mask(order), features, samples, coefs, float(alpha0),
                        blocks)
    return merge_blocks(blocks)


def conditional_root_search(order, weights, is_positive, coefs: RootCoefficients,
                            seed_stride: int = SEED_STRIDE) -> dict | None:
    """AdaBoostDB's conditional search: the candidate with the largest root.

    Two passes, the first over every ``seed_stride``-th feature only: it finds a good
    root quickly, and the full parallel pass starts every block from it, so each block
    solves only the few roots that beat it instead of climbing from zero on its own. The
    result is the candidate an exhaustive search would pick.

    Returns a dict with ``feature, position, polarity, e_pos, e_neg, score`` (the root,
    as alpha) and ``roots`` (the number of roots solved, the paper's "zeros"), or None
    when no candidate has a positive root.

    Examples
    --------
    >>> from facedetect.training._stumps import presort
    >>> values_t = np.array([[0.0, 1.0, 2.0, 3.0], [3.0, 0.0, 2.0, 1.0]])
    >>> is_positive = np.array([False, False, True, True])
    >>> weights = np.full(4, 0.5)                      # each class sums to 1
    >>> coefs = RootCoefficients.for_round(0.5, 0.5, 1.0, 1.0)
    >>> best = conditional_root_search(presort(values_t), weights, is_positive, coefs)
    >>> best["feature"], best["position"], best["polarity"], best["score"]
    (0, 1, 1, inf)
    """
    n_features = order.shape[0]
    samples, coefs = kernel_arguments(weights, is_positive, coefs)
    seed = None
    if n_features >= 2 * seed_stride:
        sample = np.arange(0, n_features, seed_stride)
        seed = _run_conditional(order, sample, samples, coefs, 0.0, 1)
    alpha0 = 0.0 if seed is None or math.isinf(seed["score"]) else seed["score"]
    result = _run_conditional(order, np.arange(n_features), samples, coefs, alpha0,
                              _n_blocks_for(n_features))
    if result is None:
        result = seed
    elif seed is not None:
        result["roots"] += seed["roots"]
    if result is None or result["score"] <= 0.0:
        return None
    return result


# --- max root: every root solved (DBN) -------------------------------------------------------

def exhaustive_root_search(order, weights, is_positive,
                           coefs: RootCoefficients) -> dict | None:
    """Every candidate's root solved, the largest kept (DBN). Same output as above.

    Examples
    --------
    >>> from facedetect.training._stumps import presort
    >>> values_t = np.array([[0.0, 1.0, 2.0, 3.0], [3.0, 0.0, 2.0, 1.0]])
    >>> is_positive = np.array([False, False, True, True])
    >>> coefs = RootCoefficients.for_round(0.5, 0.5, 1.0, 1.0)
    >>> best = exhaustive_root_search(presort(values_t), np.full(4, 0.5), is_positive, coefs)
    >>> best["feature"], best["e_pos"], best["e_neg"], best["roots"]
    (0, 0.0, 0.0, 12)
    """
    blocks = new_blocks(_n_blocks_for(order.shape[0]))
    samples, coefs = kernel_arguments(weights, is_positive, coefs)
    _exhaustive_kernel(order, order_mask(order), samples, coefs, blocks)
    result = merge_blocks(blocks)
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


def hull_loss_search(order, weights, is_positive, masses: tuple[float, float],
                     coefs: RootCoefficients) -> dict | None:
    """The candidate of minimum ``L*``; ``score`` is that loss. None if nothing beats 1.

    The max-root candidate (the conditional search) is usually close to the min-loss one;
    its loss seeds every block, so the interval bounds discard almost every hull vertex
    without solving its root. Candidates are indexed ``(feature, polarity, position)``
    for ties, as in :func:`facedetect.training._rules.min_loss_brute_force`.

    Examples
    --------
    >>> from facedetect.training._stumps import presort
    >>> values_t = np.array([[0.0, 2.0, 1.0, 3.0], [3.0, 0.0, 2.0, 1.0]])
    >>> is_positive = np.array([False, False, True, True])
    >>> coefs = RootCoefficients.for_round(0.5, 0.5, 1.0, 0.5)
    >>> best = hull_loss_search(presort(values_t), np.full(4, 0.5), is_positive, (0.5, 0.5), coefs)
    >>> best["feature"], best["e_pos"], best["e_neg"], round(best["score"], 4)
    (0, 0.0, 0.5, 0.7432)
    """
    coefs = RootCoefficients(*coefs)
    seed = conditional_root_search(order, weights, is_positive, coefs)
    if seed is None:
        return None
    p, q = (float(m) for m in masses)
    loss0 = min(1.0, round_loss(seed["score"], seed["e_pos"], seed["e_neg"], p, q,
                                coefs.cp, coefs.cn))
    blocks = new_blocks(_n_blocks_for(order.shape[0]), score=loss0)
    samples, kernel_coefs = kernel_arguments(weights, is_positive, coefs)
    _hull_kernel(order, order_mask(order), samples, kernel_coefs, (p, q),
                 loss_bound_grid(p, q, coefs.cp, coefs.cn), blocks)
    result = merge_blocks(blocks, larger_is_better=False)
    if result is not None:
        result["roots"] += seed["roots"]
    return result

