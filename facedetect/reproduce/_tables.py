"""Our results next to the paper's: the time_cmp, asym_perform and diffs tables.

Each function takes the runs of :mod:`._experiment` and returns a :class:`Table`, which
renders as markdown and CSV.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import spearmanr

from ._paper_figures import cost_key
from ._paper_tables import paper_tables

RATES = ("FN", "FP", "CE", "NEC")
TIMED = ("cs", "cs-vectorized", "dbn", "db")
PAPER_METHOD = {"cs": "CS", "dbn": "DBN", "db": "DB"}


@dataclass
class Table:
    title: str
    header: list
    rows: list = field(default_factory=list)
    note: str = ""
    dataset: str = ""     # the data set a per-data-set table describes

    def markdown(self) -> str:
        lines = [f"### {self.title}", ""] + ([self.note, ""] if self.note else [])
        lines += ["| " + " | ".join(self.header) + " |", "|" + "---|" * len(self.header)]
        lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in self.rows]
        return "\n".join(lines) + "\n"

    def csv(self) -> str:
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(self.header)
        writer.writerows([["" if v is None else v for v in row] for row in self.rows])
        return buffer.getvalue()


def _cell(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, (int, np.integer)):
        return f"{value:,}"
    if isinstance(value, (float, np.floating)):
        if value == 0:
            return "0"
        if abs(value) >= 1e3 and float(value).is_integer():
            return f"{int(value):,}"  # the paper's root counts
        return f"{value:.3g}" if abs(value) < 1e-2 else f"{value:.4g}"
    return str(value)


def cost_label(cost) -> str:
    return "[" + cost_key(cost) + "]"


def group_runs(runs) -> dict:
    """``{(dataset, cost, method): [run per fold]}``."""
    grouped = defaultdict(list)
    for run in runs:
        grouped[(run.dataset, run.cost, run.method)].append(run)
    return grouped


def _paper(table: str, paper_name: str, cost):
    return paper_tables()[table].get(paper_name, {}).get(cost_key(cost))


# --- training burden ----------------------------------------------------------------------

def time_table(data, costs, grouped) -> Table:
    """Roots ("zeros") and seconds per method, totals over the folds, with the paper's."""
    methods = [m for m in TIMED if (data.name, tuple(costs[0]), m) in grouped]
    header = ["cost"] + [f"{m} {what}" for m in methods for what in ("roots", "s")]
    header += [f"paper {PAPER_METHOD[m]} {what}" for m in ("cs", "dbn", "db")
               for what in ("zeros", "s")]
    table = Table(f"{data.name}: roots solved and training seconds (totals over folds)", header,
                  dataset=data.name)
    for cost in costs:
        row = [cost_label(cost)]
        for method in methods:
            folds = grouped[(data.name, tuple(cost), method)]
            row += [sum(r.roots for r in folds), sum(r.seconds for r in folds)]
        paper = paper_tables()["time_cmp"]["runs"].get(data.paper_name, {}).get(cost_key(cost))
        for method in ("cs", "dbn", "db"):
            row += paper[PAPER_METHOD[method]] if paper else [None, None]
        table.rows.append(row)
    return table


def totals(data, costs, grouped, method) -> tuple[int, float]:
    """(roots, seconds) of a method summed over costs and folds."""
    folds = [r for c in costs for r in grouped.get((data.name, tuple(c), method), [])]
    return sum(r.roots for r in folds), sum(r.seconds for r in folds)


def saving(before: float, after: float):
    """Percent saved going from ``before`` to ``after`` (the paper's "Impr" rows)."""
    return None if not before else 100.0 * (1.0 - after / before)


def improvement_rows(data, costs, grouped) -> list:
    """The paper's improvement rows, ours beside its: ``[pair, roots %, time %, paper...]``."""
    paper = paper_tables()["time_cmp"]["improvement"].get(data.paper_name, {})
    found = {m: totals(data, costs, grouped, m) for m in TIMED}
    rows = []
    for before, after in (("cs", "dbn"), ("dbn", "db"), ("cs", "db"), ("cs-vectorized", "db")):
        roots = saving(found[before][0], found[after][0])
        seconds = saving(found[before][1], found[after][1])
        key = f"{PAPER_METHOD.get(before, '')}->{PAPER_METHOD.get(after, '')}"
        theirs = paper.get(key, [None, None])
        rows.append([f"{before} -> {after}", roots, seconds, *theirs])
    return rows


# --- asymmetric behaviour ---------------------------------------------------------------

def mean_final(folds) -> np.ndarray:
    return np.mean([r.final for r in folds], axis=0)


def asym_table(data, costs, grouped, method: str = "db") -> Table:
    header = ["cost", *RATES, *(f"paper {r}" for r in RATES)]
    table = Table(f"{data.name}: AdaBoostDB held-out rates (means over folds)", header,
                  dataset=data.name)
    for cost in costs:
        ours = mean_final(grouped[(data.name, tuple(cost), method)])
        paper = _paper("asym_perform", data.paper_name, cost) or [None] * 4
        table.rows.append([cost_label(cost), *ours, *paper])
    return table


def asymmetry_verdict(costs, fn_rates, fp_rates) -> tuple[str, float, float]:
    """Does FN fall and FP rise as Cp/Cn grows? Spearman's rho of each against log(Cp/Cn)."""
    log_ratio = [np.log(c[0] / c[1]) for c in costs]
    rho_fn = float(spearmanr(log_ratio, fn_rates).statistic)
    rho_fp = float(spearmanr(log_ratio, fp_rates).statistic)
    if rho_fn <= -0.8 and rho_fp >= 0.8:
        verdict = "yes"
    elif rho_fn < 0 < rho_fp:
        verdict = "mostly"
    else:
        verdict = "no"
    return verdict, rho_fn, rho_fp


def cost_response_table(data, config, grouped) -> Table:
    """Raw AdaBoostDB, AdaBoostDB at its operating point and calibrated AdaMEC: does each
    move FN and FP the way the costs say (rho against log(Cp/Cn)), and at what NEC."""
    table = Table(f"{data.name}: the costs' effect, raw threshold against operating point "
                  f"({config.rounds} rounds)",
                  ["method", "verdict", "rho FN", "rho FP", "mean NEC",
                   "NEC minus db-op: mean", "NEC minus db-op: least (db-op's worst case)"],
                  dataset=data.name)
    methods = [m for m in ("db", "db-op", "adamec") if m in config.methods]
    nec = {m: np.array([mean_final(grouped[(data.name, tuple(c), m)])[3]
                        for c in config.costs]) for m in methods}
    for method in methods:
        finals = [mean_final(grouped[(data.name, tuple(c), method)]) for c in config.costs]
        verdict, rho_fn, rho_fp = asymmetry_verdict(config.costs, [f[0] for f in finals],
                                                    [f[1] for f in finals])
        gap = nec[method] - nec["db-op"] if "db-op" in nec else np.full(len(config.costs),
                                                                         np.nan)
        table.rows.append([method, verdict, rho_fn, rho_fp, float(nec[method].mean()),
                           float(gap.mean()), float(gap.min())])
    return table


# --- DB against CS, root rule against loss rule -----------------------------------------------

def _padded(staged: np.ndarray, rounds: int) -> np.ndarray:
    """Rows after each round, the last one repeated if the run stopped early."""
    extra = rounds - len(staged)
    return staged if extra <= 0 else np.vstack([staged, np.repeat(staged[-1:], extra, 0)])


def _stump_mismatch(first, second) -> float:
    """Fraction of rounds whose stumps differ (a missing round counts as different)."""
    rounds = max(len(first), len(second))
    common = min(len(first), len(second))
    same = np.all(first[:common] == second[:common], axis=1).sum()
    return 1.0 - same / rounds


def pair_differences(folds_a, folds_b) -> list:
    """Mean |difference| of FN, FP, CE, NEC over every round and fold, then the fraction
    of rounds with different stumps."""
    diffs, mismatch = [], []
    for run_a, run_b in zip(folds_a, folds_b):
        rounds = max(len(run_a.staged), len(run_b.staged))
        diffs.append(np.abs(_padded(run_a.staged, rounds) - _padded(run_b.staged, rounds)))
        mismatch.append(_stump_mismatch(run_a.stumps, run_b.stumps))
    return [*np.vstack(diffs).mean(axis=0), float(np.mean(mismatch))]


def diffs_table(data, costs, grouped, rule_disagreement) -> Table:
    header = ["cost", *(f"|dDB-CS| {r}" for r in RATES), "stumps differ DB/CS",
              "rules differ, same weights", "stumps differ CS/DB-loss",
              *(f"paper {r}" for r in RATES)]
    table = Table(f"{data.name}: DB against CS (mean absolute difference over rounds and "
                  "folds)", header, dataset=data.name)
    for cost in costs:
        key = (data.name, tuple(cost))
        db, cs = grouped[(*key, "db")], grouped[(*key, "cs")]
        loss = grouped.get((*key, "db-loss"))
        same_state = np.mean([v for (c, _), v in rule_disagreement[data.name].items()
                              if c == tuple(cost)])
        loss_vs_cs = pair_differences(cs, loss)[-1] if loss else None
        paper = _paper("diffs", data.paper_name, cost) or [None] * 4
        table.rows.append([cost_label(cost), *pair_differences(db, cs), float(same_state),
                           loss_vs_cs, *paper])
    return table


def credit_match(costs, grouped, priors: dict) -> Table:
    """Which credit set matches the paper's "Credit" column: mean |ours - paper|.

    ``priors`` maps each candidate set (``german``, ``australian``) to its positive prior.
    """
    table = Table("Credit: which UCI set the paper used",
                  ["data set", "positive prior", *(f"mean |ours - paper| {r}" for r in RATES)])
    for name, prior in priors.items():
        errors = []
        for cost in costs:
            paper = _paper("asym_perform", "Credit", cost)
            if paper and (name, tuple(cost), "db") in grouped:
                errors.append(np.abs(mean_final(grouped[(name, tuple(cost), "db")])
                                     - np.array(paper)))
        if errors:
            table.rows.append([name, prior, *np.mean(errors, axis=0)])
    return table
