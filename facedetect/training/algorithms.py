"""The boosting algorithms by name: the one registry that the command line, model files,
the CBCL sweep and the paper's runs all read.

A name is an estimator class with fixed parameters. ``dbn`` is AdaBoostDB with the
exhaustive search, saved in a model file as algorithm ``db`` with search ``exhaustive``:
the file names the class, and its ``search`` and ``selection`` fields the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import FacedetectError
from .boosting import (
    AdaBoost,
    AdaBoostDB,
    AsymmetricInitAdaBoost,
    BoostedStumps,
    CostSensitiveAdaBoost,
)


@dataclass(frozen=True)
class Algorithm:
    """An estimator class and the parameters that make it this algorithm."""

    estimator: type
    params: dict = field(default_factory=dict)
    uses_cost: bool = True
    description: str = ""


ALGORITHMS = {
    "db": Algorithm(AdaBoostDB, description="AdaBoostDB with the conditional search"),
    "dbn": Algorithm(AdaBoostDB, {"search": "exhaustive"},
                     description="AdaBoostDB solving every candidate's root"),
    "cs": Algorithm(CostSensitiveAdaBoost, description="Cost-Sensitive AdaBoost"),
    "adaboost": Algorithm(AdaBoost, uses_cost=False, description="plain AdaBoost"),
    "asym-init": Algorithm(AsymmetricInitAdaBoost,
                           description="AdaBoost with cost-proportional initial weights"),
}
# The estimator classes a model file may name (its "algorithm" field).
FILE_CLASSES = {cls.algorithm: cls for cls in (AdaBoostDB, CostSensitiveAdaBoost, AdaBoost,
                                               AsymmetricInitAdaBoost)}


def make_algorithm(name: str, n_rounds: int, cost=(1.0, 1.0), **params) -> BoostedStumps:
    """A fresh estimator of algorithm ``name``; ``params`` add to or override its own.

    Examples
    --------
    >>> make_algorithm("dbn", 10, (1, 5)).search
    'exhaustive'
    >>> make_algorithm("adaboost", 10, (1, 5)).cost   # cost-free: the cost is not its own
    (1.0, 1.0)
    """
    if name not in ALGORITHMS:
        raise FacedetectError(f"unknown algorithm {name!r}; choose from "
                              f"{', '.join(ALGORITHMS)}")
    algorithm = ALGORITHMS[name]
    arguments = dict(algorithm.params, **params)
    if algorithm.uses_cost:
        arguments["cost"] = tuple(cost)
    return algorithm.estimator(n_rounds, **arguments)
