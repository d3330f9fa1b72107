"""The one list of boosting algorithms: what ``--algorithm`` offers, what a model file's
``algorithm`` may name, and (in :mod:`facedetect.training._algorithms`) which estimator
class each is. Plain data, so that the file schema, which sits below the trainer, reads it
too."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["AlgorithmEntry", "ALGORITHMS", "FILE_ALGORITHMS"]


class AlgorithmEntry(NamedTuple):
    """One algorithm: the estimator it runs (by the name model files record), the
    parameters that make it this algorithm, whether it takes the cost, and a line of
    description."""

    file_name: str
    params: dict
    uses_cost: bool
    description: str


ALGORITHMS = {
    "db": AlgorithmEntry("db", {}, True, "AdaBoostDB with the conditional search"),
    "dbn": AlgorithmEntry("db", {"search": "exhaustive"}, True,
                          "AdaBoostDB solving every candidate's root"),
    "cs": AlgorithmEntry("cs", {}, True, "Cost-Sensitive AdaBoost"),
    "adaboost": AlgorithmEntry("adaboost", {}, False, "plain AdaBoost"),
    "asym-init": AlgorithmEntry("asym-init", {}, True,
                                "AdaBoost with cost-proportional initial weights"),
}
# The names a model file's "algorithm" may hold: one per estimator class.
FILE_ALGORITHMS = tuple(dict.fromkeys(entry.file_name for entry in ALGORITHMS.values()))
