"""The boosters are scikit-learn classifiers: check_estimator, and the tools users combine
them with (Pipeline, GridSearchCV, cross_val_score, CalibratedClassifierCV,
TunedThresholdClassifierCV)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.calibration import CalibratedClassifierCV
from sklearn.exceptions import NotFittedError
from scipy.optimize import minimize
from sklearn.model_selection import (GridSearchCV, StratifiedKFold, TunedThresholdClassifierCV,
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


def test_pipeline_and_cross_val_score():
    X, y = _data(240)
    scores = cross_val_score(make_pipeline(StandardScaler(), AdaBoostDB(10)), X, y, cv=3)
    assert scores.shape == (3,) and scores.mean() > 0.75


def _folds(X, y):
    """The splits an integer ``cv=3`` makes for a classifier: unshuffled stratified."""
    return list(StratifiedKFold(3).split(X, y))


def test_grid_search_picks_the_point_a_hand_cross_validation_ranks_first():
    # The reference: every grid point fitted fresh on the same folds, accuracy by hand.
    X, y = _data(240)
    grid = {"n_rounds": [1, 20], "cost": [(1, 1), (1, 4)]}
    search = GridSearchCV(AdaBoostDB(), grid, cv=3).fit(X, y)
    by_hand = {(n, cost): np.mean([np.mean(AdaBoostDB(n, cost).fit(X[fit], y[fit])
                                           .predict(X[test]) == y[test])
                                   for fit, test in _folds(X, y)])
               for n in grid["n_rounds"] for cost in grid["cost"]}
    np.testing.assert_allclose(search.cv_results_["mean_test_score"],
                               [by_hand[p["n_rounds"], p["cost"]]
                                for p in search.cv_results_["params"]])
    best = (search.best_params_["n_rounds"], search.best_params_["cost"])
    assert by_hand[best] == pytest.approx(search.best_score_) == max(by_hand.values())
    assert best[0] == 20   # one stump cannot follow x0 + x1: 0.72 against 0.84
    np.testing.assert_array_equal(search.best_estimator_.alphas_,
                                  AdaBoostDB(*best).fit(X, y).alphas_)   # refitted on all


def _platt(scores, y):
    """Platt's sigmoid by hand: ``P = 1 / (1 + exp(a s + b))`` of least log loss against
    his smoothed targets (Platt 1999, section 2.2)."""
    n_pos, n_neg = y.sum(), (1 - y).sum()
    target = np.where(y == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))

    def loss(ab):
        z = ab[0] * scores + ab[1]   # -log P = log1p(exp(z)), -log(1 - P) = log1p(exp(-z))
        return np.sum(target * np.logaddexp(0, z) + (1 - target) * np.logaddexp(0, -z))
    return minimize(loss, [0.0, 0.0], method="Nelder-Mead",
                    options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 4000}).x


def test_sigmoid_calibration_is_platts_sigmoid_of_the_out_of_fold_scores():
    X, y = _data(300)
    calibrated = CalibratedClassifierCV(AdaBoost(20), method="sigmoid", cv=3,
                                        ensemble=False).fit(X, y)
    unseen = np.empty(len(y))
    for fit, test in _folds(X, y):
        unseen[test] = AdaBoost(20).fit(X[fit], y[fit]).decision_function(X[test])
    a, b = _platt(unseen, y)
    assert a < 0   # the probability of a face rises with the booster's score
    score = AdaBoost(20).fit(X, y).decision_function(X)
    np.testing.assert_allclose(calibrated.predict_proba(X)[:, 1], 1 / (1 + np.exp(a * score + b)),
                               atol=1e-5)


def test_tuned_threshold_is_the_best_cut_of_the_out_of_fold_scores():
    # The reference: balanced accuracy by hand at every cut of every fold's scores,
    # averaged over the folds; predict is the refitted booster's score at the cut.
    X, y = _data(300)
    folds = [(AdaBoostDB(20, (1, 5)).fit(X[fit], y[fit]).decision_function(X[test]), y[test])
             for fit, test in _folds(X, y)]
    cuts = np.unique(np.concatenate([score for score, _ in folds]))

    def balanced_accuracy(score, truth):
        accepted = score[:, None] >= cuts
        return (accepted[truth == 1].mean(axis=0) + (~accepted[truth == 0]).mean(axis=0)) / 2
    by_hand = np.mean([balanced_accuracy(score, truth) for score, truth in folds], axis=0)
    tuned = TunedThresholdClassifierCV(AdaBoostDB(20, (1, 5)), scoring="balanced_accuracy",
                                       cv=3, thresholds=cuts).fit(X, y)
    assert tuned.best_score_ == pytest.approx(by_hand.max())
    assert by_hand[np.searchsorted(cuts, tuned.best_threshold_)] == pytest.approx(by_hand.max())
    score = AdaBoostDB(20, (1, 5)).fit(X, y).decision_function(X)
    np.testing.assert_array_equal(tuned.predict(X), (score >= tuned.best_threshold_).astype(int))
