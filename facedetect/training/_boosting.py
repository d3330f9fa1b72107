"""The one training loop of the boosting estimators (the algorithms on it are in
:mod:`._algorithms`).

All four share :class:`BoostedStumps`: the per-class weight bookkeeping of the paper's
Algorithm 2 (normalised sub-distributions ``Dp``, ``Dn`` and accumulators ``Ap``, ``An``,
kept as logarithms so hundreds of rounds cannot underflow), the stump search over a
presorted feature matrix, and the diagnostics. What differs is small:

============================  ===================  =====================  ===============
estimator                     initial class mass   selection rule         costs in update
============================  ===================  =====================  ===============
AdaBoostDB                    balanced             max root / min loss    (Cp, Cn)
CostSensitiveAdaBoost         balanced             min loss (brute force) (Cp, Cn)
AdaBoost                      balanced             min weighted error     (1, 1)
AsymmetricInitAdaBoost        proportional to cost min weighted error     (1, 1)
============================  ===================  =====================  ===============

``alphas_`` are in units where ``max(Cp, Cn) = 1``; only their ratios matter for the sign
of the decision.
"""

from __future__ import annotations

import math
import time

import numpy as np
from sklearn import get_config
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import validate_data

from ..costs import check_cost
from ._inputs import _all_finite, _check_sample_weight, check_labels, feature_major
from ._roots import normalized_costs, round_loss, solve_alpha, static_parameters
from ._binned import BinnedFeatures
from ._ensemble import StumpEnsemble, TrainingState
from ._rules import RULES, RoundState, on_features, select_binned
from ._stumps import presort, stump_predict, stump_threshold


def check_max_features(max_features) -> None:
    """Refuse a ``max_features`` that is not None, a fraction in (0, 1] or a count."""
    if max_features is None:
        return
    if isinstance(max_features, (bool, np.bool_)):
        raise ValueError(f"max_features must be None, a fraction in (0, 1] or a positive "
                         f"integer, got {max_features!r}")
    if isinstance(max_features, (int, np.integer)):
        if max_features < 1:
            raise ValueError(f"max_features must be a positive integer, got {max_features}")
        return
    if not (isinstance(max_features, (float, np.floating)) and 0.0 < max_features <= 1.0):
        raise ValueError(f"max_features must be None, a fraction in (0, 1] or a positive "
                         f"integer, got {max_features!r}")


def _feature_count(max_features, n_features: int) -> int:
    """How many of ``n_features`` a round searches (at least one)."""
    if max_features is None:
        return n_features
    if isinstance(max_features, (int, np.integer)):
        return min(int(max_features), n_features)
    return max(1, min(n_features, math.ceil(float(max_features) * n_features)))


class BoostedStumps(StumpEnsemble, ClassifierMixin, BaseEstimator):
    """The shared training loop. Subclasses set the initial masses and the selection rule.

    A scikit-learn binary classifier: it works in ``Pipeline``, ``GridSearchCV``,
    ``cross_val_score``, ``CalibratedClassifierCV`` and ``TunedThresholdClassifierCV``.

    Parameters
    ----------
    n_rounds : int
        Boosting rounds (weak classifiers).
    cost : (float, float)
        ``(Cp, Cn)``: the cost of a false negative (missed positive), then of a false
        positive. Any positive reals.
    balance_classes : bool
        True (default, the paper's set-up): each class starts with half the total
        weight, spread within the class in proportion to ``sample_weight``. False: every
        sample starts with its ``sample_weight``, so the classes weigh in proportion to
        their (weighted) sizes. Either way ``sample_weight=None`` means uniform weights,
        and an integer weight acts as that many copies of the sample (a zero weight as
        its absence). There is no scikit-learn-style ``class_weight``: boosting forgets
        initial class weights within a few rounds (Landesa-Vázquez & Alba-Castro 2012);
        ``cost`` is the way to ask for asymmetry.
    max_features : int, float or None
        Features each round searches, as scikit-learn's gradient boosting and forests
        draw them per split: None (default) all of them, the paper's exact search; a
        float in (0, 1] that fraction of them; an int that many. A random subset per
        round makes a round that much faster: with tens of thousands of correlated Haar
        features, a subset still holds a near-best stump.
    random_state : int or None
        Seeds the rounds' feature subsets (round ``t`` draws from ``(random_state,
        t)``, so a resumed run draws the same ones; None acts as 0, so that a model is
        always reproducible); without ``max_features`` the search is exhaustive and
        deterministic, so it does not change the model.

    Attributes
    ----------
    classes_ : (2,) array
        The labels; ``classes_[1]`` is the positive class.
    n_features_in_ : int
    features_, thresholds_, polarities_, alphas_ : arrays, one entry per stump
    class_masses_ : (float, float)
        The initial weight of the positive and the negative class.

    See Also
    --------
    AdaBoostDB : the paper's algorithm.
    sklearn.ensemble.AdaBoostClassifier : scikit-learn's.

    Examples
    --------
    >>> from facedetect.training import AdaBoostDB
    >>> issubclass(AdaBoostDB, BoostedStumps)
    True
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> model = AdaBoostDB(n_rounds=1, cost=(1, 1)).fit(X, [0, 0, 1, 1])
    >>> model.features_.tolist(), model.thresholds_.tolist(), model.predict(X).tolist()
    ([0], [1.5], [0, 0, 1, 1])
    """

    algorithm = "base"
    selection = "root"
    search = "conditional"

    def __init__(self, n_rounds: int = 200, cost=(1.0, 1.0), balance_classes: bool = True,
                 random_state=None, max_features=None):
        self.n_rounds = n_rounds
        self.cost = cost
        self.balance_classes = balance_classes
        self.random_state = random_state
        self.max_features = max_features

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.input_tags.allow_nan = False
        return tags

    # --- the pieces subclasses change ----------------------------------------------------
    def _checked_cost(self, check: bool = True) -> tuple[float, float]:
        """The estimator's cost pair as floats, checked unless ``check`` is false (once per
        fit, in :meth:`_check_params`)."""
        return check_cost(self.cost) if check else tuple(float(c) for c in self.cost)

    def _update_costs(self, cost: tuple[float, float]) -> tuple[float, float]:
        """Normalised costs used in the exponents of the weight update."""
        return normalized_costs(cost)

    def _initial_class_masses(self) -> tuple[float, float]:
        return 0.5, 0.5

    def _select(self, state: RoundState):
        if state.binned is not None:
            return select_binned(self.selection, self.search, state)
        return on_features(RULES[(self.selection, self.search)], state)

    def _alpha(self, choice, state: RoundState) -> float:
        return solve_alpha(choice["e_pos"], choice["e_neg"], state.a, state.b,
                           state.cp, state.cn)

    # --- the shared loop -------------------------------------------------------------------
    def _check_params(self):
        # Under scikit-learn's skip_parameter_validation the caller has checked them (the
        # training pipeline checks its whole configuration once, before any data is read).
        check = not get_config()["skip_parameter_validation"]
        if check:
            self._check_param_values()
        cost = self._cost_pair = self._checked_cost(check)
        self._round_costs = self._update_costs(cost)

    def _check_param_values(self):
        if not (isinstance(self.n_rounds, (int, np.integer)) and self.n_rounds >= 1):
            raise ValueError(f"n_rounds must be a positive integer, got {self.n_rounds!r}")
        if not isinstance(self.balance_classes, (bool, np.bool_)):
            raise ValueError(f"balance_classes must be True or False, got "
                             f"{self.balance_classes!r}")
        if self.selection not in ("root", "loss"):
            raise ValueError(f"selection must be 'root' or 'loss', got {self.selection!r}")
        if self.search not in ("conditional", "exhaustive"):
            raise ValueError(f"search must be 'conditional' or 'exhaustive', got {self.search!r}")
        check_max_features(self.max_features)

    def _round_features(self, round_index: int, n_features: int) -> np.ndarray | None:
        """The features round ``round_index`` searches (increasing), None for all."""
        count = _feature_count(self.max_features, n_features)
        if count >= n_features:
            return None
        seed = self.random_state if self.random_state is not None else 0
        rng = np.random.default_rng([int(seed), round_index])
        return np.sort(rng.choice(n_features, size=count, replace=False))

    def _initial_state(self, is_positive, sample_weight) -> TrainingState:
        n = len(is_positive)
        base = _check_sample_weight(sample_weight, n)
        # Perfect stumps smooth their errors by 1 / (2 n): n counts weight, so that a
        # weight of 2 acts as two copies of the sample.
        self._weight_count = float(base.sum())
        mass_pos, mass_neg = base[is_positive].sum(), base[~is_positive].sum()
        if mass_pos <= 0 or mass_neg <= 0:
            raise ValueError("sample_weight gives a class zero total weight")
        if self.balance_classes:
            mass_pos = mass_neg = 1.0
        scale_pos, scale_neg = self._initial_class_masses()
        mass_pos, mass_neg = mass_pos * scale_pos, mass_neg * scale_neg
        weights = base.copy()
        weights[is_positive] /= weights[is_positive].sum()
        weights[~is_positive] /= weights[~is_positive].sum()
        total = mass_pos + mass_neg
        self.class_masses_ = (mass_pos / total, mass_neg / total)
        return TrainingState(weights)

    def _round_state(self, state: TrainingState, values_t, order, is_positive,
                     binned=None) -> RoundState:
        mass_pos, mass_neg = self.class_masses_
        # p / q = Wp Ap / (Wn An), in logs so tiny accumulators cannot underflow to 0/0.
        log_ratio = (math.log(mass_neg) + state.log_acc_neg
                     - math.log(mass_pos) - state.log_acc_pos)
        # Both from the ratio: "q = 1 - p" would round a class mass of 1e-22 to zero.
        p = 1.0 / (1.0 + math.exp(min(log_ratio, 700.0)))
        q = 1.0 / (1.0 + math.exp(min(-log_ratio, 700.0)))
        cp, cn = self._round_costs
        a, b = static_parameters(p, q, cp, cn)
        return RoundState(values_t, order, state.weights, is_positive, p, q, a, b, cp, cn,
                          binned)

    def fit(self, X, y, sample_weight=None, *, order=None, callback=None,
            state: TrainingState | None = None):
        """Train on a feature matrix.

        Parameters
        ----------
        X : (n_samples, n_features) array
            Any real features; a Fortran-ordered float32 matrix (as
            :func:`facedetect.haar.feature_matrix` returns) is used without a copy.
        y : (n_samples,) labels
            Two classes: {0, 1}, {-1, +1}, booleans or strings; the larger is positive.
        sample_weight : (n_samples,) array, optional
            Initial weights within each class (None: uniform); how the classes weigh
            against each other is ``balance_classes``' (and, for asymmetric init, the costs').
        order : array, optional
            The sort order from :func:`facedetect.training._stumps.presort`, if computed.
        callback : callable, optional
            Called as ``callback(self, state)`` after every round (progress, checkpoints).
        state : TrainingState, optional
            Continue a run from a checkpoint instead of starting over.

        Returns
        -------
        self
        """
        self._check_params()
        X, y = validate_data(self, X, y, dtype=[np.float32, np.float64],
                             ensure_all_finite=False, order=None)
        values_t = feature_major(X)
        n_features, n_samples = values_t.shape
        if n_samples < 2:
            raise ValueError(f"training needs at least two samples, got {n_samples} sample")
        if not _all_finite(values_t):
            raise ValueError("X contains NaN or infinite values")
        is_positive, self.classes_ = check_labels(y, n_samples)
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, n_samples)
            if (sample_weight == 0).any():  # a zero weight is no sample: not even a cut
                keep = sample_weight > 0
                values_t, is_positive = values_t[:, keep], is_positive[keep]
                sample_weight, order = sample_weight[keep], None
                if is_positive.all() or not is_positive.any():
                    raise ValueError("sample_weight gives a class zero total weight")
        if order is None:
            order = presort(values_t)
        elif order.shape != values_t.shape:
            raise ValueError("order does not match X")
        return self._fit_loop(values_t, order, None, is_positive, sample_weight, callback,
                              state)

    def fit_binned(self, binned: BinnedFeatures, y, sample_weight=None, *, callback=None,
                   state: TrainingState | None = None):
        """Train on compact features (:class:`._binned.BinnedFeatures`, one byte per sample
        and feature) instead of a float matrix: the stumps' thresholds are the bins' cut
        values. Same parameters as :meth:`fit`, with ``binned`` for ``X``."""
        self._check_params()
        n_features, n_samples = binned.shape
        if n_samples < 2:
            raise ValueError(f"training needs at least two samples, got {n_samples} sample")
        is_positive, self.classes_ = check_labels(np.asarray(y), n_samples)
        self.n_features_in_ = n_features
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, n_samples)
            if (sample_weight == 0).any():
                keep = sample_weight > 0
                binned, is_positive = binned.subset(keep), is_positive[keep]
                sample_weight = sample_weight[keep]
                if is_positive.all() or not is_positive.any():
                    raise ValueError("sample_weight gives a class zero total weight")
        return self._fit_loop(None, None, binned, is_positive, sample_weight, callback, state)

    def fit_sharded(self, shards, y, sample_weight=None, *, callback=None,
                    state: TrainingState | None = None):
        """Train on features sharded over a Dask cluster
        (:class:`._sharded.ShardedFeatures`): the model :meth:`fit` or :meth:`fit_binned`
        gives on the same features, bit for bit. Same parameters, with ``shards`` for
        ``X``; a zero ``sample_weight`` is refused (it would reshape every shard)."""
        if sample_weight is not None and (np.asarray(sample_weight) == 0).any():
            raise ValueError("sharded training takes no zero sample_weight: leave those "
                             "samples out of the windows instead")
        return self.fit_binned(shards, y, sample_weight, callback=callback, state=state)

    def _fit_loop(self, values_t, order, binned, is_positive, sample_weight, callback, state):
        if state is None:
            state = self._initial_state(is_positive, sample_weight)
        else:
            self._initial_state(is_positive, sample_weight)
        while len(state.alphas) < self.n_rounds and not state.finished:
            self._boost_once(state, values_t, order, is_positive, binned)
            if callback is not None:  # the fitted attributes are rebuilt only when read
                self._set_fitted(state)
                callback(self, state)
        self._set_fitted(state)
        if not state.alphas:
            raise ValueError("no stump separates the classes at all (are all features "
                             "constant?)")
        self.training_state_ = state
        return self

    def _boost_once(self, state: TrainingState, values_t, order, is_positive, binned=None):
        start = time.perf_counter()
        round_state = self._round_state(state, values_t, order, is_positive, binned)
        n_features = binned.shape[0] if binned is not None else values_t.shape[0]
        round_state.features = self._round_features(len(state.alphas), n_features)
        # Feature shards on a cluster (.sharded) run this estimator's _select on each shard.
        choice = (binned.select(self, round_state) if hasattr(binned, "select")
                  else self._select(round_state))
        if choice is None:  # nothing with a positive alpha is left
            state.finished = True
            return
        f, k, polarity = choice["feature"], choice["position"], choice["polarity"]
        if hasattr(binned, "stump"):          # feature shards: the owner computes them
            threshold, outputs = binned.stump(f, k, polarity)
        elif binned is not None:
            threshold, outputs = binned.threshold(f, k), binned.outputs(f, k, polarity)
        else:
            threshold = stump_threshold(values_t, order, f, k)
            outputs = stump_predict(values_t[f], threshold, polarity)
        # The search ranks candidates by errors from running sums, where "1 - sum" can be
        # off by 1e-16 absolute; with a large alpha that is a large factor. The chosen
        # stump's alpha is solved from its errors summed directly.
        wrong = outputs != np.where(is_positive, 1, -1)
        choice = dict(choice, e_pos=float(state.weights[is_positive & wrong].sum()),
                      e_neg=float(state.weights[~is_positive & wrong].sum()))
        perfect = choice["e_pos"] == 0.0 and choice["e_neg"] == 0.0
        if perfect:
            # No finite alpha; smooth the errors (Schapire & Singer) and stop: the stump
            # alone separates the training set.
            smoothed = dict(choice, e_pos=0.5 / self._weight_count,
                            e_neg=0.5 / self._weight_count)
            alpha = self._alpha(smoothed, round_state)
            state.finished = True
        else:
            alpha = self._alpha(choice, round_state)
        cp, cn = round_state.cp, round_state.cn
        signed_cost = np.where(is_positive, -cp, cn)
        state.weights *= np.exp(signed_cost * alpha * outputs)
        sum_pos = state.weights[is_positive].sum()
        sum_neg = state.weights[~is_positive].sum()
        state.weights[is_positive] /= sum_pos
        state.weights[~is_positive] /= sum_neg
        state.log_acc_pos += math.log(sum_pos)
        state.log_acc_neg += math.log(sum_neg)
        mass_pos, mass_neg = self.class_masses_
        log_bound = np.logaddexp(math.log(mass_pos) + state.log_acc_pos,
                                 math.log(mass_neg) + state.log_acc_neg)
        state.stumps.append((int(f), float(threshold), int(polarity)))
        state.alphas.append(float(alpha))
        state.history.append({
            "roots": int(choice["roots"]), "e_pos": choice["e_pos"], "e_neg": choice["e_neg"],
            "loss": float(round_loss(alpha, choice["e_pos"], choice["e_neg"], round_state.p,
                                     round_state.q, cp, cn)),
            "bound": float(math.exp(log_bound)), "seconds": time.perf_counter() - start})
