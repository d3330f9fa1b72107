import numpy as np
import pytest

from facedetect.data import (
    BayesOptimalClassifier,
    UCI_SETS,
    load_uci,
    make_bayes,
    make_two_clouds,
    projection_features,
)
from facedetect.training._splits import balanced_subset, stratified_holdout, stratified_kfold

LABELS = np.r_[np.ones(40, np.int8), np.zeros(60, np.int8)]


def test_holdout_is_stratified_disjoint_and_deterministic():
    train, held = stratified_holdout(LABELS, 0.25, seed=3)
    assert len(np.intersect1d(train, held)) == 0 and len(train) + len(held) == 100
    assert LABELS[held].sum() == 10 and (LABELS[held] == 0).sum() == 15
    again = stratified_holdout(LABELS, 0.25, seed=3)
    assert np.array_equal(held, again[1])
    assert not np.array_equal(held, stratified_holdout(LABELS, 0.25, seed=4)[1])
    with pytest.raises(ValueError):
        stratified_holdout(LABELS, 1.0)


def test_kfold_tests_every_sample_once_with_balanced_classes():
    folds = stratified_kfold(LABELS, 3, seed=0)
    tested = np.concatenate([test for _, test in folds])
    assert np.array_equal(np.sort(tested), np.arange(100))
    for train, test in folds:
        assert len(np.intersect1d(train, test)) == 0
        assert LABELS[test].sum() in (13, 14)


def test_balanced_subset_has_equal_classes():
    subset = balanced_subset(LABELS, seed=1)
    assert LABELS[subset].sum() == 40 and len(subset) == 80
    assert len(balanced_subset(LABELS, per_class=10)) == 20


def test_bayes_set_matches_its_analytic_error_rates():
    points, y = make_bayes(200_000, seed=0)
    for cost in ((1, 1), (1, 10), (5, 1)):
        clf = BayesOptimalClassifier(cost)
        predicted = clf.predict(points)
        fn = np.mean(predicted[y == 1] == 0)
        fp = np.mean(predicted[y == 0] == 1)
        expected_fn, expected_fp = clf.error_rates()
        assert fn == pytest.approx(expected_fn, abs=0.005)
        assert fp == pytest.approx(expected_fp, abs=0.005)
    # Equal costs: Bayes error Phi(-1) = 0.1587 (Mahalanobis distance 2).
    fn, fp = BayesOptimalClassifier((1, 1)).error_rates()
    assert (fn + fp) / 2 == pytest.approx(0.1587, abs=1e-4)
    # Costlier misses give fewer false negatives.
    assert BayesOptimalClassifier((10, 1)).error_rates()[0] < fn


def test_bayes_rule_minimises_expected_cost_on_samples():
    points, y = make_bayes(50_000, seed=1)
    cp, cn = 1.0, 7.0
    clf = BayesOptimalClassifier((cp, cn))
    def cost(shift):
        pred = (clf.decision_function(points) > shift)
        return cp * np.mean(~pred[y == 1]) + cn * np.mean(pred[y == 0])
    assert cost(0.0) <= min(cost(-0.3), cost(0.3))


def test_two_clouds_overlap_and_stay_in_their_regions():
    points, y = make_two_clouds(4000, seed=2)
    radius_pos = np.hypot(*points[y == 1].T)
    assert radius_pos.max() <= 1.0 and y.sum() == 2000
    radius_neg = np.hypot(points[y == 0, 0] - 0.6, points[y == 0, 1] - 0.3)
    assert 0.5 <= radius_neg.min() and radius_neg.max() <= 1.6
    assert (np.hypot(*points[y == 0].T) < 1.0).any()  # the classes overlap


def test_projection_features():
    features = projection_features(np.array([[1.0, 0.0], [0.0, 2.0]]), n_angles=4)
    np.testing.assert_allclose(features, [[1, np.sqrt(.5), 0, -np.sqrt(.5)],
                                          [0, np.sqrt(2), 2, np.sqrt(2)]], atol=1e-12)


@pytest.mark.parametrize("name,n,d,positives", [
    ("ionosphere", 351, 34, 225), ("spambase", 4601, 57, 2788), ("diabetes", 768, 8, 268),
    ("german", 1000, 24, 300), ("australian", 690, 14, 307)])
def test_uci_loaders(uci_dir, name, n, d, positives):
    X, y = load_uci(name, uci_dir)
    assert X.shape == (n, d) and int(y.sum()) == positives and np.isfinite(X).all()
    assert name in UCI_SETS
