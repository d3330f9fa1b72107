"""How one boosting round picks its stump: the small pieces that make the algorithms differ.

Each rule takes the round's :class:`RoundState` and returns the chosen candidate's
``(feature, position, polarity, e_pos, e_neg)``, its score and the number of roots solved.
The shared loop in :mod:`._boosting` turns that into a stump, an alpha and a weight update.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._binned import BinnedFeatures, binned_root_search
from ._cs_roots import cs_solve_each, cs_solve_scipy, cs_solve_vectorized, loss_vectorized
from ._roots import RootCoefficients
from ._search import conditional_root_search, exhaustive_root_search, hull_loss_search
from ._stumps import candidate_errors


@dataclass
class RoundState:
    """Everything a rule may look at in one round (costs already normalised)."""

    values_t: np.ndarray      # (n_features, n_samples) feature-major values
    order: np.ndarray         # (n_features, n_samples) encoded sort order
    weights: np.ndarray       # per-class normalised weights Dp / Dn
    is_positive: np.ndarray   # bool per sample
    p: float                  # positive class mass Wp Ap, normalised with q
    q: float
    a: float                  # static parameters of the root condition
    b: float
    cp: float
    cn: float
    binned: BinnedFeatures | None = None   # compact features instead of values_t / order
    features: np.ndarray | None = None     # the features this round searches (None: all)

    @property
    def coefs(self) -> RootCoefficients:
        return RootCoefficients(self.a, self.b, self.cp, self.cn)


def _max_root_conditional(state: RoundState):
    """AdaBoostDB: the largest root, found by the conditional search."""
    return conditional_root_search(state.order, state.weights, state.is_positive, state.coefs)


def _max_root_exhaustive(state: RoundState):
    """AdaBoostDB without conditional search (DBN): every root solved."""
    return exhaustive_root_search(state.order, state.weights, state.is_positive, state.coefs)


def _min_loss_hull(state: RoundState):
    """Cost-Sensitive AdaBoost's criterion, exactly, over per-feature hull vertices."""
    return hull_loss_search(state.order, state.weights, state.is_positive,
                            (state.p, state.q), state.coefs)


def min_loss_brute_force(state: RoundState, solver: str = "vectorized",
                         features=None, chunk: int = 256):
    """Cost-Sensitive AdaBoost as the paper ran it: every candidate's alpha solved.

    ``solver="scalar"`` runs Brent's method (compiled zeroin) once per candidate, as
    Algorithm 1 of the paper; ``"scipy"`` does the same through ``scipy.optimize.brentq``
    (pure-Python cost per candidate); ``"vectorized"`` solves a chunk of features at once
    with numpy. Candidates are visited
    in ``(feature, polarity, position)`` order and the first of equal losses wins; only
    candidates with a positive root compete (the other polarity of the same threshold has
    the same loss with the opposite sign of alpha).
    """
    n_features = state.order.shape[0]
    features = np.arange(n_features) if features is None else np.asarray(features)
    best = None
    roots = 0
    for start in range(0, len(features), chunk):
        block = features[start:start + chunk]
        e_pos, e_neg, valid = candidate_errors(state.values_t, state.order, state.weights,
                                               state.is_positive, block)
        valid = np.broadcast_to(valid[:, None, :], e_pos.shape)
        contributing = valid & (state.a * e_pos + state.b * e_neg < 0.5)
        flat = np.flatnonzero(contributing)
        if flat.size == 0:
            continue
        ep, en = e_pos.ravel()[flat], e_neg.ravel()[flat]
        if solver == "scalar":
            alpha = cs_solve_each(ep, en, state.p, state.q, state.cp, state.cn)
        elif solver == "scipy":
            alpha = np.array([cs_solve_scipy(x, y, state.p, state.q, state.cp, state.cn)
                              for x, y in zip(ep, en)])
        else:
            alpha = cs_solve_vectorized(ep, en, state.p, state.q, state.cp, state.cn)
        roots += int(flat.size)
        loss = loss_vectorized(alpha, ep, en, state.p, state.q, state.cp, state.cn)
        winner = int(np.argmin(loss))
        if best is None or loss[winner] < best["score"]:
            i, polarity_index, k = np.unravel_index(flat[winner], e_pos.shape)
            best = {"feature": int(block[i]), "position": int(k),
                    "polarity": 1 if polarity_index == 0 else -1,
                    "e_pos": float(ep[winner]), "e_neg": float(en[winner]),
                    "score": float(loss[winner])}
    if best is not None:
        best["roots"] = roots
    return best


def on_features(rule, state: RoundState):
    """``rule`` over the round's ``features`` only (all when None), its choice's feature
    index in the full matrix. The exact rules take whole matrices, so the subset's rows
    are copied: a fraction of the matrix, for a search that much shorter."""
    if state.features is None:
        return rule(state)
    rows = state.features
    restricted = RoundState(state.values_t[rows], state.order[rows], state.weights,
                            state.is_positive, state.p, state.q, state.a, state.b, state.cp,
                            state.cn)
    choice = rule(restricted)
    if choice is not None:
        choice = dict(choice, feature=int(rows[choice["feature"]]))
    return choice


def select_binned(selection: str, search: str, state: RoundState):
    """The rule on compact features: the largest root, conditionally or exhaustively.
    Minimum-loss selection (Cost-Sensitive AdaBoost, ``selection="loss"``) needs the
    exact features."""
    if selection != "root":
        raise ValueError("minimum-loss selection (Cost-Sensitive AdaBoost, selection="
                         "'loss') needs exact features: train with exact storage")
    return binned_root_search(state.binned, state.weights, state.is_positive, state.coefs,
                              exhaustive=search == "exhaustive", features=state.features)


RULES = {
    ("root", "conditional"): _max_root_conditional,
    ("root", "exhaustive"): _max_root_exhaustive,
    ("loss", "conditional"): _min_loss_hull,
    ("loss", "exhaustive"): min_loss_brute_force,
}
