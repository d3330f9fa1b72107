"""The methods of the paper's experiments, by name: what ``facedetect paper --methods``
offers. Plain data (each estimator is built on call), so that the command reads its flags
without loading the learners."""

from __future__ import annotations

__all__ = ["METHODS"]


def _algorithm(name: str, rounds: int, cost, **params):
    from ..training._algorithms import make_algorithm
    return make_algorithm(name, rounds, cost, **params)


# name -> estimator factory (rounds, cost): the registry's algorithms, and the paper's
# variants of them.
METHODS = {
    # Cost-Sensitive AdaBoost as the paper ran it: a scalar zeroin per candidate.
    "cs": lambda rounds, cost: _algorithm("cs", rounds, cost, solver="scalar"),
    # Cost-Sensitive AdaBoost, all roots of a chunk at once with numpy.
    "cs-vectorized": lambda rounds, cost: _algorithm("cs", rounds, cost),
    # AdaBoostDB without the conditional search: every candidate's root.
    "dbn": lambda rounds, cost: _algorithm("dbn", rounds, cost),
    # AdaBoostDB with the conditional search.
    "db": lambda rounds, cost: _algorithm("db", rounds, cost),
    # AdaBoostDB with the minimum-loss selection rule (CS's rule, exact hull search).
    "db-loss": lambda rounds, cost: _algorithm("db", rounds, cost, selection="loss"),
    # AdaBoostDB at its cost-aware operating point (train-detector's default): trained on
    # the fold less a calibration part, Platt-calibrated there, Bayes threshold.
    "db-op": lambda rounds, cost: _algorithm("db", rounds, cost),
    # Calibrated AdaMEC (Nikolaou et al. 2016): plain AdaBoost, the same calibration and
    # threshold.
    "adamec": lambda rounds, cost: _algorithm("adaboost", rounds, cost),
}
