"""Cost-aware operating points: exact cut search against brute force and scikit-learn's
TunedThresholdClassifierCV, calibration maps against CalibratedClassifierCV, and the
meta-estimator."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.calibration import CalibratedClassifierCV
from sklearn.frozen import FrozenEstimator
from sklearn.metrics import make_scorer
from sklearn.model_selection import TunedThresholdClassifierCV, cross_val_score

from facedetect.errors import FacedetectError
from facedetect.training import AdaBoost, AdaBoostDB
from facedetect.training._operating_point import (calibrated_probability,
                                                 choose_operating_point,
                                                 cost_optimal_threshold, fit_calibration)
from facedetect.training._threshold import CostSensitiveThreshold

COSTS = [(1, 100), (1, 10), (1, 3), (1, 1), (3, 1), (10, 1), (100, 1)]


def _expected_cost(scores, positive, threshold, cost, prior):
    cp, cn = cost
    fn = np.mean(scores[positive] <= threshold)
    fp = np.mean(scores[~positive] > threshold)
    return cp * prior * fn + cn * (1 - prior) * fp


def _scores(seed, n=120, ties=False):
    rng = np.random.default_rng(seed)
    positive = rng.random(n) < 0.35
    scores = rng.normal(np.where(positive, 1.0, -0.5))
    return (np.round(scores, 1) if ties else scores), positive


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("cost", COSTS)
def test_threshold_is_a_least_cost_cut_by_brute_force(seed, cost):
    scores, positive = _scores(seed, ties=seed % 2 == 1)
    prior = positive.mean()
    threshold, nec, extreme = cost_optimal_threshold(scores, positive, cost)
    values = np.unique(scores)
    candidates = np.r_[values[0] - 1, (values[1:] + values[:-1]) / 2, values[-1]]
    brute = min(_expected_cost(scores, positive, t, cost, prior) for t in candidates)
    ours = _expected_cost(scores, positive, threshold, cost, prior)
    assert ours == pytest.approx(brute, abs=1e-12)
    cp, cn = cost
    assert nec == pytest.approx(ours / (cp * prior + cn * (1 - prior)), abs=1e-12)


@pytest.mark.parametrize("cost", [(1, 20), (1, 1), (20, 1)])
def test_threshold_matches_tuned_threshold_classifier(cost):
    """TunedThresholdClassifierCV over every cut (prefit, our scores as the model) finds
    a threshold of the same expected cost."""
    scores, positive = _scores(7, n=200)
    prior = positive.mean()
    model = AdaBoostDB(1).fit(scores[:, None], positive)   # one stump: we only need the API

    class Identity(type(model)):
        def decision_function(self, X):
            return np.asarray(X)[:, 0]
    identity = Identity(1).fit(scores[:, None], positive)
    values = np.unique(scores)
    grid = np.r_[values[0] - 1, (values[1:] + values[:-1]) / 2, values[-1] + 1]

    def negative_cost(y_true, y_pred):
        y_true, y_pred = np.asarray(y_true, bool), np.asarray(y_pred, bool)
        return -(cost[0] * prior * np.mean(~y_pred[y_true])
                 + cost[1] * (1 - prior) * np.mean(y_pred[~y_true]))
    tuned = TunedThresholdClassifierCV(FrozenEstimator(identity), scoring=make_scorer(
        negative_cost), thresholds=grid, cv="prefit", refit=False,
        response_method="decision_function").fit(scores[:, None], positive)
    theirs = -tuned.best_score_
    threshold, _, _ = cost_optimal_threshold(scores, positive, cost)
    assert _expected_cost(scores, positive, threshold, cost, prior) == pytest.approx(
        theirs, abs=1e-12)


def test_threshold_moves_with_the_costs_even_on_a_separable_set():
    scores = np.r_[np.linspace(-3, -1, 30), np.linspace(1, 3, 20)]
    positive = np.r_[np.zeros(30, bool), np.ones(20, bool)]
    thresholds = [cost_optimal_threshold(scores, positive, c)[0] for c in COSTS]
    assert all(-1 <= t < 1 for t in thresholds)   # every one separates perfectly
    assert all(a > b for a, b in zip(thresholds, thresholds[1:]))   # and leans to the cheap side


def test_extremes_are_reported():
    scores, positive = np.array([0.0, 1.0, 2.0, 3.0]), np.array([1, 0, 1, 0], bool)
    low, _, extreme = cost_optimal_threshold(scores, positive, (1000, 1))
    assert extreme == "accept-all" and low < 0
    high, _, extreme = cost_optimal_threshold(scores, positive, (1, 1000))
    assert extreme == "reject-all" and high >= 3.0


def test_extreme_costs_are_flagged_by_the_probability_rule():
    scores, positive = _scores(4, n=300)
    low = choose_operating_point(scores, positive, (1e6, 1))
    high = choose_operating_point(scores, positive, (1, 1e6))
    assert low.extreme == "accept-all" and low.threshold < scores.min()
    assert high.extreme == "reject-all" and high.threshold >= scores.max()
    assert choose_operating_point(scores, positive, (1, 1)).extreme is None


@pytest.mark.parametrize("prior", [0.0, 1.0, -0.1, 1.5, float("nan"), "x"])
def test_prior_outside_the_unit_interval_is_refused(prior):
    with pytest.raises(FacedetectError, match="prior"):
        cost_optimal_threshold([0, 1], [0, 1], (1, 1), prior)


def test_one_class_calibration_data_is_refused():
    with pytest.raises(FacedetectError, match="one class"):
        choose_operating_point([0.1, 0.2, 0.3], [1, 1, 1], (1, 1))
    with pytest.raises(FacedetectError, match="one class"):
        fit_calibration([0.1, 0.2, 0.3], [0, 0, 0])


def test_a_higher_face_prior_lowers_the_threshold():
    scores, positive = _scores(3, n=400)
    low = cost_optimal_threshold(scores, positive, (1, 1), prior=0.9)[0]
    high = cost_optimal_threshold(scores, positive, (1, 1), prior=0.1)[0]
    assert low < high


@pytest.mark.parametrize("method", ["sigmoid", "isotonic"])
def test_stored_calibration_reproduces_calibrated_classifier_cv(method):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    y = (X[:, 0] + rng.normal(size=400) > 0).astype(int)
    model = AdaBoost(15).fit(X[:200], y[:200])
    reference = CalibratedClassifierCV(FrozenEstimator(model), method=method).fit(
        X[200:], y[200:])
    stored = fit_calibration(model.decision_function(X[200:]), y[200:], method)
    np.testing.assert_allclose(calibrated_probability(stored, model.decision_function(X)),
                               reference.predict_proba(X)[:, 1], rtol=1e-12, atol=1e-12)


def test_probability_rule_cuts_the_sigmoid_at_the_bayes_point():
    scores, positive = _scores(2, n=300)
    point = choose_operating_point(scores, positive, (1, 3), calibration="sigmoid",
                                   rule="probability")
    probability = calibrated_probability(point.calibration, [point.threshold])[0]
    assert probability == pytest.approx(3 / 4)


def _data(n=400, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = (X[:, 0] + X[:, 1] + rng.normal(size=n) > 0.5).astype(int)
    return X, y


@pytest.mark.parametrize("rule", ["probability", "expected-cost"])
@pytest.mark.parametrize("cv", [0.25, 3])
def test_meta_estimator_moves_errors_the_way_the_costs_say(cv, rule):
    X, y = _data()
    X_test, y_test = _data(2000, seed=2)
    rates = []
    for cost in [(1, 10), (1, 1), (10, 1)]:
        model = CostSensitiveThreshold(AdaBoostDB(20, cost), cost, rule=rule, cv=cv).fit(X, y)
        predicted = model.predict(X_test) == 1
        rates.append((np.mean(~predicted[y_test == 1]), np.mean(predicted[y_test == 0])))
        assert model.operating_point_.source == ("calibration-split" if cv == 0.25
                                                 else "3-fold out-of-fold")
    fn, fp = zip(*rates)
    assert fn[0] > fn[1] > fn[2] and fp[0] < fp[1] < fp[2]


def test_meta_estimator_predict_proba_only_when_calibrated():
    X, y = _data()
    plain = CostSensitiveThreshold(AdaBoost(10), calibration=None,
                                   rule="expected-cost").fit(X, y)
    assert not hasattr(plain, "predict_proba")
    adamec = CostSensitiveThreshold(AdaBoost(10), (1, 4)).fit(X, y)
    proba = adamec.predict_proba(X)
    assert np.allclose(proba.sum(axis=1), 1)
    # The Bayes rule on the calibrated probability is the prediction.
    np.testing.assert_array_equal(adamec.predict(X) == 1, proba[:, 1] > 4 / 5)
    assert cross_val_score(CostSensitiveThreshold(AdaBoost(5)), X, y, cv=3).mean() > 0.6


def test_operating_point_for_another_cost_needs_no_training():
    X, y = _data()
    model = CostSensitiveThreshold(AdaBoostDB(10, (1, 1)), (1, 1)).fit(X, y)
    other = model.operating_point_for((1, 10))
    refit = CostSensitiveThreshold(AdaBoostDB(10, (1, 1)), (1, 10)).fit(X, y)
    assert other.threshold == refit.threshold_ > model.threshold_
