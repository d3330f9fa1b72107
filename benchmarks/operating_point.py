"""Where the operating point comes from: a calibration split against k-fold out-of-fold
scores, and the calibrated (Platt, Bayes cut) rule against the least empirical cost.

Run: ``python -m benchmarks.operating_point [--uci DIR] [--cbcl DIR] [--cbcl-rounds 200]``

Part 1, the paper's data sets (UCI and synthetic): for each of the 19 paper costs and each
of 3 outer folds, ``CostSensitiveThreshold(AdaBoostDB(50, cost))`` with ``cv=0.2`` (one
training on 80%) and with ``cv=3`` (three out-of-fold trainings, then a refit on all), each
with both rules; held-out NEC, Spearman's rho of FN and FP against log(Cp/Cn), and the time.

Part 2, CBCL as ``train-detector`` splits it (25% held out): the same comparison at 3 costs
and ``--cbcl-rounds`` rounds, on the full Haar pool.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy.stats import spearmanr

from facedetect.data import load_cbcl
from facedetect.training._splits import stratified_holdout, stratified_kfold
from facedetect.haar import feature_matrix, haar_feature_pool
from facedetect.metrics import binary_rates
from facedetect.reproduce._paper_figures import PAPER_COSTS
from facedetect.reproduce._datasets import ALL_DATASETS, load_experiment_data
from facedetect.training import AdaBoostDB
from facedetect.training._threshold import CostSensitiveThreshold

from .common import machine, write_results

SOURCES = {"split": 0.2, "3-fold": 3}
RULES = ("probability", "expected-cost")


def _score(model, X, y, cost) -> dict:
    rates = binary_rates(y == 1, model.predict(X) == 1)
    return {"fn": rates.false_negative_rate, "fp": rates.false_positive_rate,
            "nec": rates.nec(cost)}


def _fit_both(X, y, cost, rounds, cv):
    """One training, then each rule's operating point from the same unseen scores."""
    start = time.perf_counter()
    model = CostSensitiveThreshold(AdaBoostDB(rounds, cost), cost, cv=cv).fit(X, y)
    took = time.perf_counter() - start
    found = {}
    for rule in RULES:
        point = model.operating_point_for(cost, rule)
        found[rule] = (FixedThreshold(model.estimator_, point.threshold), took)
    return found


class FixedThreshold:
    def __init__(self, estimator, threshold):
        self.estimator, self.threshold_ = estimator, threshold

    def predict(self, X):
        return (self.estimator.decision_function(X) > self.threshold_).astype(int)


def paper_sets(uci, costs, rounds: int = 50, folds: int = 3) -> dict:
    results = {}
    for name in ALL_DATASETS:
        data = load_experiment_data(name, uci)
        rows = {(s, r): [] for s in SOURCES for r in RULES}
        seconds = {s: 0.0 for s in SOURCES}
        for cost in costs:
            per_fold = {(s, r): [] for s in SOURCES for r in RULES}
            for train, test in stratified_kfold(data.y, folds, seed=0):
                for source, cv in SOURCES.items():
                    fits = _fit_both(data.X[train], data.y[train], cost, rounds, cv)
                    for rule, (model, took) in fits.items():
                        per_fold[(source, rule)].append(_score(model, data.X[test],
                                                               data.y[test], cost))
                    seconds[source] += took
            for key, scores in per_fold.items():
                rows[key].append({k: float(np.mean([s[k] for s in scores]))
                                  for k in ("fn", "fp", "nec")})
        results[name] = {f"{s}/{r}": _summary(rows[(s, r)], costs) for s, r in rows}
        results[name]["seconds"] = seconds
        print(name, {k: (round(v["mean_nec"], 4), round(v["rho_fn"], 2), round(v["rho_fp"], 2))
                     for k, v in results[name].items() if k != "seconds"}, flush=True)
    return results


def _summary(rows, costs) -> dict:
    log_ratio = [math.log(cp / cn) for cp, cn in costs]
    return {"mean_nec": float(np.mean([r["nec"] for r in rows])),
            "rho_fn": float(spearmanr(log_ratio, [r["fn"] for r in rows]).statistic),
            "rho_fp": float(spearmanr(log_ratio, [r["fp"] for r in rows]).statistic),
            "per_cost": rows}


def cbcl_split(cbcl_dir, rounds: int, costs) -> dict:
    data = load_cbcl(cbcl_dir)
    train, held = stratified_holdout(data.labels, 0.25, seed=0)
    pool = haar_feature_pool()
    X_train = feature_matrix(data.images[train], pool, progress=False)
    X_held = feature_matrix(data.images[held], pool, progress=False)
    y_train, y_held = data.labels[train], data.labels[held]
    out = {}
    for cost in costs:
        for source, cv in SOURCES.items():
            for rule, (model, took) in _fit_both(X_train, y_train, cost, rounds, cv).items():
                out[f"{cost[0]:g},{cost[1]:g} {source}/{rule}"] = dict(
                    _score(model, X_held, y_held, cost), seconds=took,
                    threshold=model.threshold_)
                print(cost, source, rule, out[f"{cost[0]:g},{cost[1]:g} {source}/{rule}"],
                      flush=True)
    return out


def markdown(results) -> str:
    lines = [f"Machine: {results['machine']}", "",
             "## The paper's data sets (AdaBoostDB, 50 rounds, 19 costs, 3 outer folds)", "",
             "| data set | source / rule | mean NEC | rho FN | rho FP |", "|---|---|---|---|---|"]
    for name, found in results.get("paper_sets", {}).items():
        for key, row in found.items():
            if key != "seconds":
                lines.append(f"| {name} | {key} | {row['mean_nec']:.4f} | "
                             f"{row['rho_fn']:+.3f} | {row['rho_fp']:+.3f} |")
        s = found["seconds"]
        lines.append(f"| {name} | time 3-fold / split | {s['3-fold'] / s['split']:.2f}x | | |")
    if "cbcl" in results:
        lines += ["", f"## CBCL, held-out 25% ({results['cbcl_rounds']} rounds)", "",
                  "| cost source / rule | FN | FP | NEC | threshold | seconds |",
                  "|---|---|---|---|---|---|"]
        for key, row in results["cbcl"].items():
            lines.append(f"| {key} | {row['fn']:.4f} | {row['fp']:.4f} | {row['nec']:.4f} | "
                         f"{row['threshold']:+.3f} | {row['seconds']:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uci", default="../shared/datasets/uci")
    parser.add_argument("--cbcl", help="also run part 2 on this CBCL folder")
    parser.add_argument("--cbcl-rounds", type=int, default=200)
    parser.add_argument("--cbcl-costs", default="1,10;1,1;10,1",
                        help="costs for part 2, e.g. '1,10;10,1'")
    parser.add_argument("--skip-paper-sets", action="store_true")
    args = parser.parse_args(argv)
    results = {"machine": machine()}
    if not args.skip_paper_sets:
        results["paper_sets"] = paper_sets(args.uci, PAPER_COSTS)
    if args.cbcl:
        results["cbcl_rounds"] = args.cbcl_rounds
        costs = [tuple(float(c) for c in pair.split(",")) for pair in args.cbcl_costs.split(";")]
        results["cbcl"] = cbcl_split(args.cbcl, args.cbcl_rounds, costs)
    write_results("operating_point", results, markdown(results))
    return results


if __name__ == "__main__":
    main()
