"""The boosters are scikit-learn classifiers: check_estimator, and the tools users combine
them with (Pipeline, GridSearchCV, cross_val_score, CalibratedClassifierCV,
TunedThresholdClassifierCV)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.calibration import CalibratedClassifierCV
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import (GridSearchCV, TunedThresholdClassifierCV,
                                     cross_val_score)
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

from facedetect.training import (AdaBoost, AdaBoostDB, AsymmetricInitAdaBoost,
                                 CostSensitiveAdaBoost)

ESTIMATORS = [AdaBoostDB(n_rounds=20, cost=(1, 3)), AdaBoostDB(n_rounds=20, search="exhaustive"),
              CostSensitiveAdaBoost(n_rounds=10, cost=(2, 1)), AdaBoost(n_rounds=20),
              AsymmetricInitAdaBoost(n_rounds=20, cost=(1, 2))]


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = (X[:, 0] + X[:, 1] + 0.7 * rng.normal(size=n) > 0.3).astype(int)
    return X, y


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_check_estimator(estimator):
    # Every check runs; the multiclass ones are skipped by the binary-only tag.
    results = check_estimator(estimator, on_fail=None)
    failed = [r for r in results if r["status"] == "failed"]
    assert not failed, [(r["check_name"], str(r["exception"])[:200]) for r in failed]
    assert sum(r["status"] == "passed" for r in results) > 30


def test_binary_only_tag_and_errors():
    model = AdaBoostDB(5)
    assert model.__sklearn_tags__().classifier_tags.multi_class is False
    with pytest.raises(NotFittedError):
        model.predict(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="Only binary classification"):
        model.fit(np.arange(9.0)[:, None], np.arange(9) % 3)


def test_classes_n_features_and_score():
    X, y = _data()
    labels = np.where(y == 1, "face", "background")
    model = AdaBoostDB(30, (1, 2)).fit(X, labels)
    assert model.classes_.tolist() == ["background", "face"] and model.n_features_in_ == 5
    assert set(model.predict(X)) <= {"face", "background"}
    assert model.score(X, labels) == np.mean(model.predict(X) == labels) > 0.8


def test_pipeline_grid_search_and_cross_val_score():
    X, y = _data(240)
    pipe = make_pipeline(StandardScaler(), AdaBoostDB(10))
    scores = cross_val_score(pipe, X, y, cv=3)
    assert scores.shape == (3,) and scores.mean() > 0.75
    grid = GridSearchCV(AdaBoostDB(), {"n_rounds": [2, 20], "cost": [(1, 1), (1, 4)]}, cv=3)
    grid.fit(X, y)
    assert grid.best_params_["n_rounds"] in (2, 20) and hasattr(grid.best_estimator_, "alphas_")


def test_calibrated_and_tuned_threshold_wrappers():
    X, y = _data(300)
    calibrated = CalibratedClassifierCV(AdaBoost(20), method="sigmoid", cv=3).fit(X, y)
    proba = calibrated.predict_proba(X)
    assert proba.shape == (300, 2) and np.allclose(proba.sum(axis=1), 1)
    tuned = TunedThresholdClassifierCV(AdaBoostDB(20, (1, 5)), scoring="balanced_accuracy",
                                       cv=3).fit(X, y)
    assert np.isfinite(tuned.best_threshold_)
    assert tuned.predict(X).shape == (300,)
