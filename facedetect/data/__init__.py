"""Data access: CBCL faces, the paper's synthetic sets, and the UCI sets."""

from .cbcl import CBCLData, load_cbcl
from .fetch import check_archive, fetch_cbcl
from .locate import find_cbcl
from .synthetic import (
    BayesOptimalClassifier,
    make_bayes,
    make_toy_windows,
    make_two_clouds,
    projection_features,
)
from .uci import UCI_SETS, load_uci
from .wild_faces import WildFaces, find_faces, load_wild_faces

__all__ = [
    "CBCLData", "load_cbcl", "find_cbcl", "fetch_cbcl", "check_archive",
    "make_bayes", "make_toy_windows", "make_two_clouds", "projection_features", "BayesOptimalClassifier",
    "UCI_SETS", "load_uci", "WildFaces", "find_faces", "load_wild_faces",
]
