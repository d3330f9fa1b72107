"""Tables, cost-response figures and cost-space pictures of the CBCL sweep."""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from .._utils.atomic import atomic_write_text
from ._paper_figures import CBCL_TABLE
from ._cbcl_sweep import METHODS

LABELS = {"db-raw": "AdaBoostDB, raw threshold 0",
          "db-op": "AdaBoostDB, operating point (Platt)",
          "db-emp": "AdaBoostDB, empirical least-cost threshold",
          "adamec": "calibrated AdaMEC"}


def mean_table(rows) -> dict:
    """``{(rounds, cost, method): {fn, fp, nec, nec_folds, seconds}}`` over folds."""
    grouped = defaultdict(list)
    for row in rows:
        grouped[(row["rounds"], row["cost"], row["method"])].append(row)
    table = {}
    for key, group in grouped.items():
        group = sorted(group, key=lambda r: r["fold"])
        table[key] = {k: float(np.mean([r[k] for r in group])) for k in ("fn", "fp", "nec",
                                                                         "seconds")}
        table[key]["nec_folds"] = [r["nec"] for r in group]
    return table


def cost_response(table, costs, rounds: int, method: str) -> dict:
    """Spearman's rho of mean FN and of mean FP against log(Cp / Cn)."""
    log_ratio = [math.log(cp / cn) for cp, cn in costs]
    fn = [table[(rounds, tuple(c), method)]["fn"] for c in costs]
    fp = [table[(rounds, tuple(c), method)]["fp"] for c in costs]
    return {"rho_fn": float(spearmanr(log_ratio, fn).statistic),
            "rho_fp": float(spearmanr(log_ratio, fp).statistic)}


def nec_difference(table, costs, rounds: int, method: str, other: str) -> dict:
    """NEC of ``method`` minus ``other`` per cost: the mean, the worst, and how many costs
    are worse beyond fold-to-fold noise (more than two standard errors of the per-fold
    differences)."""
    diffs, beyond = [], 0
    for cost in costs:
        a = np.array(table[(rounds, tuple(cost), method)]["nec_folds"])
        b = np.array(table[(rounds, tuple(cost), other)]["nec_folds"])
        d = a - b
        diffs.append(d.mean())
        noise = 2 * d.std(ddof=1) / math.sqrt(len(d)) if len(d) > 1 else 0.0
        beyond += bool(d.mean() > max(noise, 1e-12))
    return {"mean": float(np.mean(diffs)), "worst": float(np.max(diffs)),
            "worse_beyond_noise": int(beyond)}


def summary(table, costs, rounds_list) -> list[dict]:
    """Per round count and method: rho of FN and FP, and DB-op's NEC differences."""
    out = []
    for rounds in rounds_list:
        for method in METHODS:
            row = {"rounds": rounds, "method": method,
                   **cost_response(table, costs, rounds, method)}
            if method == "db-op":
                for other in ("db-raw", "db-emp", "adamec"):
                    row[f"vs {other}"] = nec_difference(table, costs, rounds, "db-op", other)
            out.append(row)
    return out


def sweep_markdown(table, costs, rounds_list, folds, n_per_class) -> str:
    lines = [f"CBCL sweep: balanced subset ({n_per_class} faces + {n_per_class} non-faces), "
             f"{folds}-fold cross-validation, means over folds. raw = AdaBoostDB at threshold "
             "0 (trained on the whole fold); op = AdaBoostDB at its cost-aware operating "
             "point (trained on 80% of the fold, Platt-calibrated on the other 20%, Bayes "
             "threshold); emp = the same model at the least empirical cost on the 20%; "
             "AdaMEC = AdaBoost, Platt-calibrated on the same 20%, Bayes threshold. Paper: "
             "its Table \"CBCL\" (rounds not stated).", "",
             "| rounds | method | rho(FN, log Cp/Cn) | rho(FP, log Cp/Cn) | NEC op - this: "
             "mean | worst | costs where op is worse beyond noise |",
             "|---|---|---|---|---|---|---|"]
    for row in summary(table, costs, rounds_list):
        extra = "| | |"
        if row["method"] == "db-op":
            extra = "| (see the two rows beside) | | |"
        lines.append(f"| {row['rounds']} | {row['method']} | {row['rho_fn']:+.3f} | "
                     f"{row['rho_fp']:+.3f} {extra}")
        if row["method"] == "db-op":
            for other in ("vs db-raw", "vs db-emp", "vs adamec"):
                d = row[other]
                lines.append(f"| {row['rounds']} | op {other} | | | "
                             f"{d['mean']:+.4f} | {d['worst']:+.4f} | "
                             f"{d['worse_beyond_noise']} of {len(costs)} |")
    for rounds in rounds_list:
        lines += ["", f"{rounds} rounds:", "",
                  "| cost | raw FN | raw FP | raw NEC | op FN | op FP | op NEC | emp FN | "
                  "emp FP | emp NEC | AdaMEC FN | AdaMEC FP | AdaMEC NEC | paper FN | "
                  "paper FP | paper NEC |", "|---" * 16 + "|"]
        for cost in costs:
            cells = []
            for method in METHODS:
                m = table[(rounds, tuple(cost), method)]
                cells += [f"{m['fn']:.4f}", f"{m['fp']:.4f}", f"{m['nec']:.4f}"]
            paper = CBCL_TABLE.get(tuple(cost))
            cells += ([f"{paper[0]:.4f}", f"{paper[1]:.4f}", f"{paper[3]:.4f}"] if paper
                      else ["", "", ""])
            lines.append(f"| [{cost[0]:g},{cost[1]:g}] | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _sweep_csv(table, costs, rounds_list) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["rounds", "cp", "cn", "method", "fn", "fp", "nec", "nec_fold_sd",
                     "paper_fn", "paper_fp", "paper_nec", "seconds_per_model"])
    for rounds in rounds_list:
        for cost in costs:
            paper = CBCL_TABLE.get(tuple(cost))
            for method in METHODS:
                m = table[(rounds, tuple(cost), method)]
                writer.writerow([rounds, *cost, method, f"{m['fn']:.6f}", f"{m['fp']:.6f}",
                                 f"{m['nec']:.6f}", f"{np.std(m['nec_folds'], ddof=1):.6f}",
                                 *((paper[0], paper[1], paper[3]) if paper else ("",) * 3),
                                 f"{m['seconds']:.2f}"])
    return buffer.getvalue()


def write_sweep(rows, out_dir, costs, folds, n_per_class) -> dict:
    """Markdown and CSV tables and one cost-space picture per round count."""
    from ..plots import cost_space_figure
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    table = mean_table(rows)
    rounds_list = sorted({r["rounds"] for r in rows})
    paths = {"markdown": out_dir / "cbcl_sweep.md", "csv": out_dir / "cbcl_sweep.csv"}
    atomic_write_text(paths["markdown"], sweep_markdown(table, costs, rounds_list, folds,
                                                        n_per_class))
    atomic_write_text(paths["csv"], _sweep_csv(table, costs, rounds_list))
    paper_rows = [CBCL_TABLE[tuple(c)] for c in costs if tuple(c) in CBCL_TABLE]
    for rounds in rounds_list:
        families = {LABELS[m]: ([table[(rounds, tuple(c), m)]["fn"] for c in costs],
                                [table[(rounds, tuple(c), m)]["fp"] for c in costs])
                    for m in METHODS}
        if paper_rows:
            families["paper (Table CBCL)"] = ([p[0] for p in paper_rows],
                                              [p[1] for p in paper_rows])
        paths[f"png_{rounds}"] = cost_space_figure(
            families, out_dir / f"cbcl_cost_space_{rounds}.png",
            title=f"CBCL, {rounds} rounds, {folds}-fold CV")
    return paths
