"""Boosting: stump search, AdaBoostDB, Cost-Sensitive AdaBoost, AdaBoost, model files."""
