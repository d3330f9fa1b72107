"""Data access: CBCL faces, the paper's synthetic sets, the UCI sets, and splits."""

from .cbcl import CBCLData, load_cbcl
from .fetch import check_archive, fetch_cbcl
from .locate import find_cbcl
from .splits import balanced_subset, stratified_holdout, stratified_kfold
from .synthetic import (
    BayesOptimalClassifier,
    make_bayes,
    make_two_clouds,
    projection_features,
)
from .uci import UCI_SETS, load_uci

__all__ = [
    "CBCLData", "load_cbcl", "find_cbcl", "fetch_cbcl", "check_archive",
    "stratified_holdout", "stratified_kfold", "balanced_subset",
    "make_bayes", "make_two_clouds", "projection_features", "BayesOptimalClassifier",
    "UCI_SETS", "load_uci",
]
