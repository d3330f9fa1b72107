"""Boosting: stump search, AdaBoostDB, Cost-Sensitive AdaBoost, AdaBoost, model files."""

from .boosting import (
    AdaBoost,
    AdaBoostDB,
    AsymmetricInitAdaBoost,
    BoostedStumps,
    CostSensitiveAdaBoost,
)

__all__ = ["AdaBoost", "AdaBoostDB", "AsymmetricInitAdaBoost", "BoostedStumps",
           "CostSensitiveAdaBoost"]
