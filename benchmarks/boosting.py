"""Boosting speed on the full CBCL Haar pool: DB, DB (loss rule), DBN, CS, scikit-learn.

Run: ``python -m benchmarks.boosting [--rounds 10] [--sklearn-rounds 2] [--busy]``

All methods run in this one process on the same feature matrix (the 75% training part of a
stratified CBCL split: about 5,233 windows x 63,960 features). DB runs on the whole pool.
The methods that solve every root cannot run a round on the whole pool in reasonable time,
so each runs on an evenly spaced subset of the features and its time and root count are
scaled to the whole pool (the work is linear in the number of features): this is stated
in the output next to every scaled figure.

``--busy`` also times DB on the compact features training uses (one byte a window and
feature, :class:`facedetect.training._binned.BinnedFeatures`), idle and beside a busy-loop
process holding one core, under this process's ``OMP_WAIT_POLICY`` (training keeps
OpenMP's default; set the variable to compare policies).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from facedetect.data import load_cbcl
from facedetect.training._splits import stratified_holdout
from facedetect.haar import feature_matrix, haar_feature_pool
from facedetect.training import AdaBoostDB, CostSensitiveAdaBoost
from facedetect.reproduce._experiment import RuleComparingDB
from facedetect.training._binned import BinnedFeatures
from facedetect.training._stumps import presort

from .common import machine, one_core_busy, peak_rss_mb, write_results


def per_round(model_factory, X, y, order, rounds):
    model = model_factory(rounds).fit(X, y, order=order)
    return float(np.median(model.round_seconds_)), float(np.mean(model.roots_solved_)), model


def compact_per_round(X, y, cost, rounds) -> dict:
    """DB's median seconds a round on ``X``'s compact features, idle and with one core
    busy (the idle round compiles first)."""
    binned = BinnedFeatures.from_values(np.ascontiguousarray(X.T))
    AdaBoostDB(1, cost).fit_binned(binned, y)
    idle = float(np.median(AdaBoostDB(rounds, cost).fit_binned(binned, y).round_seconds_))
    with one_core_busy():
        busy = float(np.median(AdaBoostDB(rounds, cost).fit_binned(binned, y).round_seconds_))
    return {"s_per_round_idle": idle, "s_per_round_one_core_busy": busy,
            "busy_over_idle": busy / idle,
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "unset")}


def disagreement(X, y, order, cost, rounds):
    model = RuleComparingDB(n_rounds=rounds, cost=cost).fit(X, y, order=order)
    return float(np.mean(model.rule_disagreements_))


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--cost", default="1,10")
    parser.add_argument("--dbn-features", type=int, default=4000)
    parser.add_argument("--cs-features", type=int, default=1000)
    parser.add_argument("--scalar-cs-features", type=int, default=8)
    parser.add_argument("--sklearn-rounds", type=int, default=2)
    parser.add_argument("--disagreement-rounds", type=int, default=10)
    parser.add_argument("--busy", action="store_true",
                        help="also DB on compact features, idle and with one core busy")
    args = parser.parse_args(argv)
    cost = tuple(float(c) for c in args.cost.split(","))

    data = load_cbcl(args.data)
    train, _ = stratified_holdout(data.labels, 0.25, seed=0)
    pool = haar_feature_pool()
    feature_matrix(data.images[:8], pool, progress=False)
    start = time.perf_counter()
    X = feature_matrix(data.images[train], pool, progress=False)
    features_s = time.perf_counter() - start
    y = data.labels[train]
    start = time.perf_counter()
    order = presort(X.T)
    presort_s = time.perf_counter() - start
    rss_matrix = peak_rss_mb()
    n_features = X.shape[1]

    # Warm up every kernel on a small problem, so compile time is not timed.
    warm_rows = np.r_[0:150, len(y) - 150:len(y)]  # faces come first, non-faces last
    small = np.asfortranarray(X[warm_rows, :600])
    for factory in (lambda r: AdaBoostDB(r, cost), lambda r: AdaBoostDB(r, cost, selection="loss"),
                    lambda r: AdaBoostDB(r, cost, search="exhaustive"),
                    lambda r: CostSensitiveAdaBoost(r, cost)):
        factory(2).fit(small, y[warm_rows])

    results = {"machine": machine(), "cost": cost, "n_samples": int(len(y)),
               "n_features": n_features, "feature_matrix_s": features_s, "presort_s": presort_s,
               "memory_matrix_mb": X.nbytes / 2**20, "memory_order_mb": order.nbytes / 2**20,
               "peak_rss_mb_after_matrix_and_order": rss_matrix}
    db_s, db_roots, db = per_round(lambda r: AdaBoostDB(r, cost), X, y, order, args.rounds)
    results["db"] = {"s_per_round": db_s, "roots_per_round": db_roots,
                     "roots_per_round_list": db.roots_solved_.tolist(),
                     "s_per_round_list": db.round_seconds_.round(4).tolist()}
    loss_s, loss_roots, _ = per_round(lambda r: AdaBoostDB(r, cost, selection="loss"),
                                      X, y, order, max(3, args.rounds // 2))
    results["db_loss_rule"] = {"s_per_round": loss_s, "roots_per_round": loss_roots}

    def scaled(factory, n_sub, rounds=2):
        columns = np.linspace(0, n_features - 1, n_sub).astype(np.intp)
        X_sub = np.asfortranarray(X[:, columns])
        order_sub = np.ascontiguousarray(order[columns])
        seconds, roots, _ = per_round(factory, X_sub, y, order_sub, rounds)
        scale = n_features / n_sub
        return {"features_used": n_sub, "s_per_round_scaled": seconds * scale,
                "roots_per_round_scaled": roots * scale, "s_per_round_on_subset": seconds}

    results["dbn"] = scaled(lambda r: AdaBoostDB(r, cost, search="exhaustive"), args.dbn_features)
    results["cs_vectorized"] = scaled(lambda r: CostSensitiveAdaBoost(r, cost), args.cs_features)
    results["cs_scalar"] = scaled(lambda r: CostSensitiveAdaBoost(r, cost, solver="scalar"),
                                  args.scalar_cs_features, rounds=1)

    from sklearn.ensemble import AdaBoostClassifier
    from sklearn.tree import DecisionTreeClassifier
    start = time.perf_counter()
    AdaBoostClassifier(DecisionTreeClassifier(max_depth=1), n_estimators=args.sklearn_rounds
                       ).fit(X, y)
    sklearn_s = (time.perf_counter() - start) / args.sklearn_rounds
    results["sklearn_adaboost"] = {"s_per_round": sklearn_s, "rounds": args.sklearn_rounds}

    disagreements = {}
    for pair in [(1, 10), (10, 1), (1, 2), (1, 1)]:
        disagreements[f"{pair[0]},{pair[1]}"] = disagreement(X, y, order, pair,
                                                             args.disagreement_rounds)
    results["root_vs_loss_disagreement"] = disagreements
    results["peak_rss_mb"] = peak_rss_mb()
    if args.busy:
        results["db_compact"] = compact_per_round(X, y, cost, args.rounds)

    dbn, csv, css = results["dbn"], results["cs_vectorized"], results["cs_scalar"]
    rows = [
        ("DB (conditional search, root rule)", db_s, db_roots, "whole pool"),
        ("DB, loss rule (hull search)", loss_s, results["db_loss_rule"]["roots_per_round"],
         "whole pool"),
        ("DBN (every root solved)", dbn["s_per_round_scaled"], dbn["roots_per_round_scaled"],
         f"scaled from {dbn['features_used']} features"),
        ("CS, vectorised numpy", csv["s_per_round_scaled"], csv["roots_per_round_scaled"],
         f"scaled from {csv['features_used']} features"),
        ("CS, scalar Brent (paper)", css["s_per_round_scaled"], css["roots_per_round_scaled"],
         f"scaled from {css['features_used']} features"),
        ("scikit-learn AdaBoostClassifier, depth-1 trees", sklearn_s, float("nan"),
         f"whole pool, {args.sklearn_rounds} rounds"),
    ]
    table = "\n".join(f"| {name} | {s:.3f} | {s / db_s:.0f}x | {roots:,.0f} | {note} |"
                      for name, s, roots, note in rows)
    dis = ", ".join(f"[{k}] {v:.0%}" for k, v in disagreements.items())
    matrix_mb, candidates = results["memory_matrix_mb"], dbn["roots_per_round_scaled"]
    markdown = f"""# Boosting speed: CBCL Haar pool, cost {cost}

Machine: {results['machine']}. {len(y):,} training windows x {n_features:,} features.
Feature matrix {features_s:.1f} s, presort {presort_s:.1f} s; matrix {matrix_mb:.0f} MiB
+ sort order {results['memory_order_mb']:.0f} MiB; peak RSS {results['peak_rss_mb']:.0f} MiB.

| method | s per round | vs DB | roots per round | note |
|---|---|---|---|---|
{table}

Roots solved by DB per round over {args.rounds} rounds: {db.roots_solved_.tolist()}
(out of {candidates:,.0f} candidates: {1 - db_roots / candidates:.5%} avoided).

Root rule vs loss rule, fraction of rounds where the two pick different stumps from the
same weights ({args.disagreement_rounds} rounds of DB training each): {dis}.
"""
    if args.busy:
        compact = results["db_compact"]
        markdown += f"""
DB on compact features (median s/round of {args.rounds}, OMP_WAIT_POLICY
{compact['omp_wait_policy']}): {compact['s_per_round_idle']:.3f} idle,
{compact['s_per_round_one_core_busy']:.3f} beside a busy-loop process holding one core
({compact['busy_over_idle']:.2f}x; target at most 1.5x).
"""
    write_results("boosting", results, markdown)
    return results


if __name__ == "__main__":
    main()
