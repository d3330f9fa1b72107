"""Train every method on every data set, cost and fold, timing and scoring each run.

All methods run in this one process, one after the other on the same fold, after a warm-up
that compiles every kernel, so their times are comparable.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from .._utils.progress import progress_bar

from ..training._splits import stratified_holdout, stratified_kfold
from ..metrics import binary_rates, normalized_expected_cost, probability_cost
from ..training import AdaBoostDB
from ..training._operating_point import choose_operating_point
from ..training._rules import RULES
from ..training._stumps import presort
from ._methods import METHODS

# Methods decided at an operating point chosen on a calibration part of the training fold.
OPERATING_POINT_METHODS = ("db-op", "adamec")
CALIBRATION_SPLIT = 0.2
STUMP_KEY = ("feature", "position", "polarity")


class RuleComparingDB(AdaBoostDB):
    """AdaBoostDB (root rule) that also asks the loss rule each round, from the same
    weights, and records whether the two picked different stumps."""

    def fit(self, X, y, **kwargs):
        self.rule_disagreements_ = []
        return super().fit(X, y, **kwargs)

    def _select(self, state):
        root = RULES[("root", "conditional")](state)
        loss = RULES[("loss", "conditional")](state)
        if root is not None and loss is not None:
            self.rule_disagreements_.append(
                tuple(root[k] for k in STUMP_KEY) != tuple(loss[k] for k in STUMP_KEY))
        return root


@dataclass
class Run:
    """One trained model: its cost, fold, method, time, roots and held-out figures."""

    dataset: str
    cost: tuple
    fold: int
    method: str
    seconds: float          # median over repeats
    roots: int
    rounds: int
    stumps: np.ndarray      # (rounds, 3): feature, threshold, polarity
    staged: np.ndarray      # (rounds, 4): held-out FN, FP, CE, NEC after each round

    @property
    def final(self) -> np.ndarray:
        return self.staged[-1]


def _staged_rates(model, X, y, cost, prior_positive: float, thresholds=None) -> np.ndarray:
    """Held-out FN, FP, CE and NEC after every round (at ``thresholds[t]`` after round
    t + 1; 0 by default)."""
    pcf = probability_cost(prior_positive, cost)
    labels = y == 1
    rows = []
    for t, score in enumerate(model.staged_decision_function(X)):
        rates = binary_rates(labels, score > (0.0 if thresholds is None else thresholds[t]))
        fn, fp = rates.false_negative_rate, rates.false_positive_rate
        rows.append((fn, fp, rates.classification_error,
                     float(normalized_expected_cost(fn, fp, pcf))))
    return np.array(rows)


def warm_up(methods) -> None:
    """Compile every kernel on a tiny problem so that no timed run pays for it."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] + rng.normal(size=40) > 0).astype(int)
    for name in methods:
        METHODS[name](2, (1, 3)).fit(X, y)
    RuleComparingDB(2, (1, 3)).fit(X, y)


def _timed_fit(factory, rounds, cost, X, y, order, repeats: int):
    """(median seconds, last model) over ``repeats`` fits of ``factory(rounds, cost)``."""
    times, model = [], None
    for _ in range(repeats):
        model = factory(rounds, cost)
        start = time.perf_counter()
        model.fit(X, y, order=order)
        times.append(time.perf_counter() - start)
    return float(np.median(times)), model


def _staged_operating_thresholds(model, X_cal, y_cal, cost) -> list[float]:
    """The operating point after every round: Platt on the calibration scores, Bayes cut."""
    return [choose_operating_point(scores, y_cal == 1, cost).threshold
            for scores in model.staged_decision_function(X_cal)]


def _calibration_parts(X_train, y_train, seed):
    fit, calibration = stratified_holdout(y_train, CALIBRATION_SPLIT, seed=seed + 1)
    X_fit = X_train[fit]
    return (X_fit, y_train[fit], presort(np.ascontiguousarray(X_fit.T)), X_train[calibration],
            y_train[calibration])


def run_dataset(data, costs, methods, *, rounds: int, folds: int = 3, repeats: int = 1,
                seed: int = 0, progress: bool = True):
    """Every (cost, fold, method) of one data set.

    Returns the runs and, per (cost, fold), the fraction of rounds where the root and loss
    rules pick different stumps from the same weights (along DB's path).
    """
    runs, rule_disagreement = [], {}
    bar = progress_bar(total=len(costs) * folds, desc=data.name, unit="cost-fold",
               disable=not progress, leave=False)
    for fold, (train, test) in enumerate(stratified_kfold(data.y, folds, seed=seed)):
        X_train, y_train = data.X[train], data.y[train]
        order = presort(np.ascontiguousarray(X_train.T))
        prior = float(np.mean(data.y[test] == 1))
        X_fit, y_fit, order_fit, X_cal, y_cal = _calibration_parts(X_train, y_train, seed)
        for cost in costs:
            for method in methods:
                at_point = method in OPERATING_POINT_METHODS
                seconds, model = _timed_fit(METHODS[method], rounds, cost,
                                           *((X_fit, y_fit, order_fit) if at_point
                                             else (X_train, y_train, order)), repeats)
                thresholds = (_staged_operating_thresholds(model, X_cal, y_cal, cost)
                              if at_point else None)
                stumps = np.column_stack([model.features_, model.thresholds_,
                                          model.polarities_])
                runs.append(Run(data.name, tuple(cost), fold, method, seconds,
                                int(model.roots_solved_.sum()), model.n_rounds_, stumps,
                                _staged_rates(model, data.X[test], data.y[test], cost, prior,
                                             thresholds)))
            comparing = RuleComparingDB(rounds, cost).fit(X_train, y_train, order=order)
            rule_disagreement[(tuple(cost), fold)] = float(np.mean(comparing.rule_disagreements_))
            bar.update(1)
    bar.close()
    return runs, rule_disagreement
