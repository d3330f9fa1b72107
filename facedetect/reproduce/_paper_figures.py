"""Figures reported in the paper (``../shared/paper/adaboostdb-paper.tex``), for comparison.

These are facts from the paper's tables, not results of this project; the full set is in
:mod:`facedetect.reproduce._paper_tables`.
"""

from ._paper_tables import paper_tables

PAPER_COSTS = [(1, 100), (1, 50), (1, 25), (1, 10), (1, 7), (1, 5), (1, 3), (1, 2), (2, 3),
               (1, 1), (3, 2), (2, 1), (3, 1), (5, 1), (7, 1), (10, 1), (25, 1), (50, 1),
               (100, 1)]


def cost_key(cost) -> str:
    """The tables' key of a cost pair: ``(1, 10)`` -> ``"1,10"``."""
    return ",".join(f"{float(c):g}" for c in cost)


# Table "CBCL": AdaBoostDB on a balanced CBCL subset, 3-fold cross-validation.
# cost -> (FN, FP, CE, NEC)
CBCL_TABLE = {cost: tuple(paper_tables()["cbcl"][cost_key(cost)]) for cost in PAPER_COSTS}
