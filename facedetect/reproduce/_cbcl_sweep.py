"""The paper's CBCL experiment: every paper cost on the balanced subset, k-fold CV, at
several round counts, each at the raw threshold 0 and at the cost-aware operating point.

Per fold and cost, three models answer, four ways:

- ``db-raw``: AdaBoostDB on the whole training fold, decided at 0 (the paper's protocol);
- ``db-op``: AdaBoostDB on the fold less a stratified calibration part, Platt-calibrated
  on that part and decided where the calibrated probability crosses the Bayes cut (the
  default operating point of ``train-detector``);
- ``db-emp``: the same model at the threshold of least empirical expected cost on the
  calibration part (:func:`..training._operating_point.cost_optimal_threshold`);
- ``adamec``: plain AdaBoost on the same part, Platt-calibrated on the calibration part,
  decided where the calibrated probability crosses ``Cn / (Cp + Cn)`` (Nikolaou et al.'s
  calibrated AdaMEC; one AdaBoost per fold serves every cost).

One training at the largest round count gives every smaller count: boosting is
sequential, so the first R stumps of a longer run are the R-round model.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from .._utils.progress import progress_bar

from .._utils.atomic import atomic_write_text
from ..training._splits import balanced_subset, stratified_holdout, stratified_kfold
from ..haar import feature_matrix, haar_feature_pool
from ..errors import FacedetectError
from ..metrics import binary_rates
from ..training._algorithms import make_algorithm
from ..training._operating_point import (choose_operating_point, cost_optimal_threshold,
                                        fit_calibration, probability_threshold)
from ..training._stumps import presort

METHODS = ("db-raw", "db-op", "db-emp", "adamec")


def _staged_at(model, X, rounds) -> dict:
    """``{R: scores after R rounds}`` (the final scores where boosting stopped early)."""
    wanted, found, last = set(rounds), {}, None
    for r, scores in enumerate(model.staged_decision_function(X), start=1):
        last = scores
        if r in wanted:
            found[r] = scores
    return {r: found.get(r, last) for r in rounds}


def _rates(positive, scores, threshold, cost) -> dict:
    rates = binary_rates(positive, scores > threshold)
    return {"fn": rates.false_negative_rate, "fp": rates.false_positive_rate,
            "nec": rates.nec(cost)}


class Fold:
    """One fold's matrices: the whole training fold, its boosting part (with the
    calibration part beside it) and the test part, each with its sort order."""

    def __init__(self, values_t, y, X_test, y_test, calibration_split, seed):
        self.y = y
        self.X, self.order = values_t.T, presort(values_t)
        fit, calibration = stratified_holdout(y, calibration_split, seed=seed + 1)
        fit_t = np.ascontiguousarray(values_t[:, fit])
        self.X_fit, self.order_fit, self.y_fit = fit_t.T, presort(fit_t), y[fit]
        self.X_cal, self.cal_positive = self.X[calibration], y[calibration] == 1
        self.X_test, self.test_positive = X_test, y_test == 1

    @classmethod
    def from_matrix(cls, X, y, train, test, calibration_split, seed):
        """From any feature matrix (the paper's data sets)."""
        return cls(np.ascontiguousarray(X[train].T), y[train], X[test], y[test],
                   calibration_split, seed)

    @classmethod
    def from_windows(cls, images, labels, train, test, pool, calibration_split, seed):
        """From CBCL windows, through the Haar pool (the matrices are computed here)."""
        values_t = np.ascontiguousarray(feature_matrix(images[train], pool, progress=False).T)
        return cls(values_t, labels[train], feature_matrix(images[test], pool, progress=False),
                   labels[test], calibration_split, seed)


def fold_results(fold: Fold, costs, rounds, selection, bar) -> list[dict]:
    """Rows ``{rounds, cost, method, fn, fp, nec, seconds}`` of one fold."""
    top, rows = max(rounds), []
    adaboost = make_algorithm("adaboost", top).fit(fold.X_fit, fold.y_fit, order=fold.order_fit)
    ada_cal, ada_test = _staged_at(adaboost, fold.X_cal, rounds), _staged_at(
        adaboost, fold.X_test, rounds)
    maps = {r: fit_calibration(ada_cal[r], fold.cal_positive, "sigmoid") for r in rounds}
    bar.update(1)
    for cost in costs:
        start = time.perf_counter()
        raw = make_algorithm("db", top, cost, selection=selection).fit(
            fold.X, fold.y, order=fold.order)
        seconds = time.perf_counter() - start
        raw_test = _staged_at(raw, fold.X_test, rounds)
        bar.update(1)
        op = make_algorithm("db", top, cost, selection=selection).fit(
            fold.X_fit, fold.y_fit, order=fold.order_fit)
        op_cal, op_test = _staged_at(op, fold.X_cal, rounds), _staged_at(op, fold.X_test, rounds)
        bar.update(1)
        for r in rounds:
            empirical = cost_optimal_threshold(op_cal[r], fold.cal_positive, cost)[0]
            bayes = choose_operating_point(op_cal[r], fold.cal_positive, cost).threshold
            ada_threshold = probability_threshold(maps[r], cost, scores=ada_cal[r])[0]
            for method, scores, cut in (("db-raw", raw_test[r], 0.0),
                                        ("db-op", op_test[r], bayes),
                                        ("db-emp", op_test[r], empirical),
                                        ("adamec", ada_test[r], ada_threshold)):
                rows.append({"rounds": r, "cost": tuple(cost), "method": method,
                             "seconds": seconds, **_rates(fold.test_positive, scores, cut,
                                                          cost)})
    return rows


@dataclass(frozen=True, kw_only=True)
class SweepSettings:
    """What a CBCL sweep runs: every cost at every round count, over ``folds`` folds."""

    costs: tuple
    rounds: tuple = (10, 50, 200, 400)
    folds: int = 3
    seed: int = 0
    selection: str = "root"
    calibration_split: float = 0.2

    def check(self) -> None:
        """Refuse settings the sweep cannot run, naming the parameter."""
        if not (isinstance(self.folds, int) and 2 <= self.folds <= 20):
            raise FacedetectError(f"folds must be in 2..20, got {self.folds!r}")
        if not 0 < self.calibration_split < 1:
            raise FacedetectError("calibration_split must be in (0, 1), got "
                                  f"{self.calibration_split!r}")
        if not self.costs or not self.rounds or min(self.rounds) < 1:
            raise FacedetectError("costs and rounds must be non-empty, rounds at least 1")

    def as_dict(self, data) -> dict:
        """The settings a checkpoint must match, with the data's fingerprint."""
        return {"data": data.fingerprint(), "costs": [list(c) for c in self.costs],
                "rounds": sorted(set(int(r) for r in self.rounds)), "folds": self.folds,
                "seed": self.seed, "selection": self.selection,
                "calibration_split": self.calibration_split, "methods": list(METHODS)}


def run_sweep(data, settings: SweepSettings, *, progress: bool = True,
              checkpoint=None) -> list[dict]:
    """Per-fold held-out FN/FP/NEC of every (round count, cost, method).

    Each fold's feature matrices and sort orders are computed once and shared by all
    costs. Returns one row per (fold, round count, cost, method). With ``checkpoint`` (a
    JSON path), every finished fold is saved there and a later run with the same settings
    starts after the folds it holds.
    """
    settings.check()
    costs, folds, seed = settings.costs, settings.folds, settings.seed
    subset = balanced_subset(data.labels, seed=seed)
    labels = data.labels[subset]
    pool = haar_feature_pool()
    recorded = settings.as_dict(data)
    rows = _load_checkpoint(checkpoint, recorded)
    done = {row["fold"] for row in rows}
    bar = progress_bar(total=folds * (2 * len(costs) + 1),
               initial=len(done) * (2 * len(costs) + 1), desc="sweep", unit="model",
               disable=not progress)
    for k, (train, test) in enumerate(stratified_kfold(labels, folds, seed=seed)):
        if k in done:
            continue
        fold = Fold.from_windows(data.images[subset], labels, train, test, pool,
                                 settings.calibration_split, seed)
        rows += [dict(row, fold=k) for row in fold_results(fold, costs, recorded["rounds"],
                                                           settings.selection, bar)]
        del fold
        if checkpoint is not None:
            atomic_write_text(checkpoint, json.dumps({"settings": recorded, "rows": [
                dict(r, cost=list(r["cost"])) for r in rows]}))
    bar.close()
    return rows


def _load_checkpoint(path, settings) -> list[dict]:
    if path is None or not Path(path).exists():
        return []
    try:
        saved = json.loads(Path(path).read_text(encoding="utf-8"))
        if saved["settings"] != settings:
            raise FacedetectError(f"{path}: a sweep checkpoint with other settings; remove "
                                  "it or use another --out-dir")
        return [dict(r, cost=tuple(r["cost"])) for r in saved["rows"]]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise FacedetectError(f"{path}: unreadable sweep checkpoint ({error})") from None
