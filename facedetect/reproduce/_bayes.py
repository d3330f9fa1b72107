"""The Bayes comparison: DB and CS against the analytic Bayes-optimal classifier."""

from __future__ import annotations

import numpy as np

from ..data import BayesOptimalClassifier
from ..metrics import envelope_area_between, normalized_expected_cost, probability_cost
from ._tables import RATES, Table, cost_label, mean_final

FAMILIES = ("db", "cs", "bayes")


def _bayes_rates(costs, prior_positive: float = 0.5) -> list[np.ndarray]:
    """Analytic FN, FP, CE, NEC of the Bayes-optimal rule for each cost."""
    rows = []
    for cost in costs:
        fn, fp = BayesOptimalClassifier(cost, prior_positive).error_rates()
        pcf = probability_cost(prior_positive, cost)
        rows.append(np.array([fn, fp, prior_positive * fn + (1 - prior_positive) * fp,
                              normalized_expected_cost(fn, fp, pcf)]))
    return rows


def bayes_comparison(costs, grouped, dataset: str = "bayes"):
    """The per-cost table, each family's (FN, FP) lists, and the envelope areas."""
    rates = {"db": [mean_final(grouped[(dataset, tuple(c), "db")]) for c in costs],
             "cs": [mean_final(grouped[(dataset, tuple(c), "cs")]) for c in costs],
             "bayes": _bayes_rates(costs)}
    header = ["cost"] + [f"{family} {r}" for family in FAMILIES for r in RATES]
    table = Table("Bayes: AdaBoostDB, Cost-Sensitive AdaBoost and the Bayes-optimal rule",
                  header, note="DB and CS: held-out means over folds; Bayes: analytic "
                               "population rates of the minimum-risk rule.")
    for i, cost in enumerate(costs):
        table.rows.append([cost_label(cost)] + [v for f in FAMILIES for v in rates[f][i]])
    families = {f: ([r[0] for r in rates[f]], [r[1] for r in rates[f]]) for f in FAMILIES}
    areas = {"db_vs_bayes": envelope_area_between(families["db"], families["bayes"]),
             "cs_vs_bayes": envelope_area_between(families["cs"], families["bayes"]),
             "db_vs_cs": envelope_area_between(families["db"], families["cs"])}
    return table, families, areas
