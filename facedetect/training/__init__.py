"""Boosting: stump search, AdaBoostDB, Cost-Sensitive AdaBoost, AdaBoost, model files."""

from .algorithms import AdaBoost, AdaBoostDB, AsymmetricInitAdaBoost, CostSensitiveAdaBoost
from .boosting import BoostedStumps

__all__ = ["AdaBoost", "AdaBoostDB", "AsymmetricInitAdaBoost", "BoostedStumps",
           "CostSensitiveAdaBoost"]
