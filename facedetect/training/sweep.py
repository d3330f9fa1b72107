"""The paper's CBCL experiment: every paper cost on the balanced subset, k-fold CV."""

from __future__ import annotations

import csv
import io
import time
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from ..atomic import atomic_write_text
from ..data import balanced_subset, stratified_kfold
from ..detector.model import HaarDetectorModel
from ..haar import feature_matrix, haar_feature_pool
from ..metrics import binary_rates
from ..paper_figures import CBCL_TABLE
from .boosting import AdaBoostDB
from .stumps import presort


def run_sweep(data, costs, *, rounds: int = 200, folds: int = 3, seed: int = 0,
              selection: str = "root", progress: bool = True) -> list[dict]:
    """Mean held-out FN/FP/CE/NEC per cost over ``folds`` folds of the balanced subset.

    Each fold's feature matrix and sort order are computed once and shared by all costs.
    """
    subset = balanced_subset(data.labels, seed=seed)
    labels = data.labels[subset]
    pool = haar_feature_pool()
    per_cost = {tuple(c): [] for c in costs}
    bar = tqdm(total=len(costs) * folds, desc="sweep", unit="model", disable=not progress)
    for train, test in stratified_kfold(labels, folds, seed=seed):
        X = feature_matrix(data.images[subset[train]], pool, progress=False)
        order = presort(X.T)
        test_windows = data.images[subset[test]]
        for cost in per_cost:
            start = time.perf_counter()
            estimator = AdaBoostDB(rounds, cost, selection=selection).fit(
                X, labels[train], order=order)
            model = HaarDetectorModel.from_estimator(estimator, pool)
            predicted = model.decision_function(test_windows) > 0
            rates = binary_rates(labels[test] == 1, predicted)
            per_cost[cost].append({"fn": rates.false_negative_rate,
                                   "fp": rates.false_positive_rate,
                                   "ce": rates.classification_error, "nec": rates.nec(cost),
                                   "seconds": time.perf_counter() - start})
            bar.update(1)
        del X, order
    bar.close()
    rows = []
    for cost, results in per_cost.items():
        mean = {k: float(np.mean([r[k] for r in results])) for k in results[0]}
        rows.append({"cost": list(cost), **mean, "paper": CBCL_TABLE.get(cost)})
    return rows


def sweep_markdown(rows, rounds, folds, n_per_class) -> str:
    lines = [f"AdaBoostDB on the balanced CBCL subset ({n_per_class} faces + {n_per_class} "
             f"non-faces), {folds}-fold cross-validation, {rounds} rounds; means over folds. "
             "Paper: Table \"CBCL\" of the paper (its rounds are not stated).", "",
             "| cost | FN | FP | CE | NEC | paper FN | paper FP | paper CE | paper NEC |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        paper = row["paper"] or (float("nan"),) * 4
        cost = f"[{row['cost'][0]:g},{row['cost'][1]:g}]"
        ours = " | ".join(f"{row[k]:.4f}" for k in ("fn", "fp", "ce", "nec"))
        theirs = " | ".join(f"{v:.4f}" for v in paper)
        lines.append(f"| {cost} | {ours} | {theirs} |")
    return "\n".join(lines) + "\n"


def sweep_csv(rows) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["cp", "cn", "fn", "fp", "ce", "nec", "paper_fn", "paper_fp", "paper_ce",
                     "paper_nec", "seconds_per_model"])
    for row in rows:
        paper = row["paper"] or ("",) * 4
        writer.writerow([*row["cost"], *(f"{row[k]:.6f}" for k in ("fn", "fp", "ce", "nec")),
                         *paper, f"{row['seconds']:.2f}"])
    return buffer.getvalue()


def write_sweep(rows, out_dir, rounds, folds, n_per_class) -> dict:
    """Markdown and CSV tables and the cost-space picture; returns the paths."""
    from ..plots import cost_space_figure
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out_dir / "cbcl_sweep.md", "csv": out_dir / "cbcl_sweep.csv",
             "png": out_dir / "cbcl_cost_space.png"}
    atomic_write_text(paths["markdown"], sweep_markdown(rows, rounds, folds, n_per_class))
    atomic_write_text(paths["csv"], sweep_csv(rows))
    families = {"facedetect AdaBoostDB": ([r["fn"] for r in rows], [r["fp"] for r in rows])}
    paper_rows = [r["paper"] for r in rows if r["paper"]]
    if paper_rows:
        families["paper (Table CBCL)"] = ([p[0] for p in paper_rows], [p[1] for p in paper_rows])
    cost_space_figure(families, paths["png"], title=f"CBCL, {rounds} rounds, {folds}-fold CV")
    return paths
