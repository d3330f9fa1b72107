"""The data sets of the paper's experiments, as feature matrices for the stump learners."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data import load_uci

# Our name -> the paper's column name. Both credit sets map to "Credit": the paper does not
# say which it used, so both are run and compared with its column.
PAPER_NAME = {"bayes": "Bayes", "twoclouds": "TwoClouds", "german": "Credit",
              "australian": "Credit", "ionosphere": "Ionosphere", "diabetes": "Diabetes",
              "spambase": "Spam"}
ALL_DATASETS = tuple(PAPER_NAME)
SYNTHETIC_SAMPLES = 1500   # 750 per class; the paper's test counts suggest about this size
PROJECTION_ANGLES = 32


@dataclass
class _ExperimentData:
    """One data set: features ``X`` (stumps are learnt on its columns) and labels ``y``
    (1 = positive, the more valuable class)."""

    name: str
    X: np.ndarray
    y: np.ndarray
    pool: str

    @property
    def paper_name(self) -> str:
        return PAPER_NAME[self.name]

    @property
    def prior_positive(self) -> float:
        return float(np.mean(self.y == 1))


def load_experiment_data(name: str, uci_root=None, seed: int = 0) -> _ExperimentData:
    """The features of one of :data:`ALL_DATASETS`.

    Bayes and TwoClouds are drawn with ``seed`` and projected on
    :data:`PROJECTION_ANGLES` directions (the paper's "projection of the points on a
    discrete range of angles"); the UCI sets use their own columns.
    """
    from ..data import make_bayes, make_two_clouds, projection_features
    if name in ("bayes", "twoclouds"):
        make = make_bayes if name == "bayes" else make_two_clouds
        points, y = make(SYNTHETIC_SAMPLES, seed=seed)
        X = projection_features(points, PROJECTION_ANGLES)
        return _ExperimentData(name, X, y, f"{PROJECTION_ANGLES} projection angles")
    X, y = load_uci(name, uci_root)
    return _ExperimentData(name, X, y, f"{X.shape[1]} columns")
