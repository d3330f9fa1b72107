"""Numerics, input validation and properties of the shared training loop."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from facedetect.training import AdaBoost, AdaBoostDB, AsymmetricInitAdaBoost, CostSensitiveAdaBoost
from facedetect.training._cs_roots import cs_solve_scalar, cs_solve_scipy, cs_solve_vectorized
from facedetect.training._roots import (
    ALPHA_CAP,
    root_function,
    normalized_costs,
    round_loss,
    solve_alpha,
    static_parameters,
)

errors = st.floats(0.0, 1.0, allow_nan=False)
masses = st.floats(0.01, 0.99)
costs = st.tuples(st.floats(0.01, 100.0), st.floats(0.01, 100.0))


@settings(max_examples=300, deadline=None)
@given(e_pos=errors, e_neg=errors, p=masses, cost=costs)
def test_alpha_minimises_the_round_objective(e_pos, e_neg, p, cost):
    cp, cn = normalized_costs(cost)
    q = 1 - p
    a, b = static_parameters(p, q, cp, cn)
    alpha = solve_alpha(e_pos, e_neg, a, b, cp, cn)
    if math.isinf(alpha):
        assert e_pos == 0 and e_neg == 0 or e_pos == 1 and e_neg == 1
        return
    assert abs(alpha) <= ALPHA_CAP
    if abs(alpha) == ALPHA_CAP:  # the root lies beyond the documented cap
        assert np.sign(root_function(alpha, e_pos, e_neg, a, b, cp, cn)) != np.sign(alpha)
        return
    loss = round_loss(alpha, e_pos, e_neg, p, q, cp, cn)
    for delta in (1e-4, 1e-2, 0.5):
        assert loss <= round_loss(alpha + delta, e_pos, e_neg, p, q, cp, cn) * (1 + 1e-12)
        assert loss <= round_loss(alpha - delta, e_pos, e_neg, p, q, cp, cn) * (1 + 1e-12)
    assert loss <= 1 + 1e-12  # alpha = 0 gives exactly p + q = 1


@settings(max_examples=200, deadline=None)
@given(e_pos=st.floats(0.001, 0.999), e_neg=st.floats(0.001, 0.999), p=masses, cost=costs)
def test_scalar_and_vectorized_cs_roots_match_ours(e_pos, e_neg, p, cost):
    cp, cn = normalized_costs(cost)
    a, b = static_parameters(p, 1 - p, cp, cn)
    ours = solve_alpha(e_pos, e_neg, a, b, cp, cn)
    assert cs_solve_scalar(e_pos, e_neg, p, 1 - p, cp, cn) == pytest.approx(ours, abs=1e-9)
    assert cs_solve_vectorized([e_pos], [e_neg], p, 1 - p, cp, cn)[0] == \
        pytest.approx(ours, abs=1e-9)


@settings(max_examples=300, deadline=None)
@given(e_pos=st.floats(0.0, 1.0), e_neg=st.floats(0.0, 1.0), p=masses, cost=costs)
def test_compiled_zeroin_is_scipy_brentq_bit_for_bit(e_pos, e_neg, p, cost):
    cp, cn = normalized_costs(cost)
    compiled = cs_solve_scalar(e_pos, e_neg, p, 1 - p, cp, cn)
    reference = cs_solve_scipy(e_pos, e_neg, p, 1 - p, cp, cn)
    assert compiled == reference or (math.isnan(compiled) and math.isnan(reference))


def test_adaboost_alpha_is_half_log_odds():
    a, b = static_parameters(0.5, 0.5, 1.0, 1.0)
    e = 0.5 * 0.2 + 0.5 * 0.1
    assert solve_alpha(0.2, 0.1, a, b, 1.0, 1.0) == pytest.approx(0.5 * math.log((1 - e) / e))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), cost=st.sampled_from([(1, 1), (1, 10), (10, 1), (1, 100)]))
def test_weights_stay_normalised_and_the_bound_decreases(seed, cost):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(60, 5))
    y = (X[:, 0] + 0.8 * rng.normal(size=60) > 0).astype(int)
    if y.min() == y.max():
        return
    model = AdaBoostDB(n_rounds=15, cost=cost).fit(X, y)
    weights = model.training_state_.weights
    assert weights[y == 1].sum() == pytest.approx(1.0)
    assert weights[y == 0].sum() == pytest.approx(1.0)
    assert np.all(np.diff(np.r_[1.0, model.bounds_]) < 0)
    assert np.allclose(model.bounds_, np.cumprod(model.round_losses_))


@pytest.mark.parametrize("cost", [(1, 100), (100, 1), (1e-3, 1e3)])
def test_extreme_costs_do_not_overflow(cost):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 6))
    y = (X[:, 1] + rng.normal(size=200) > 0).astype(int)
    model = AdaBoostDB(n_rounds=30, cost=cost).fit(X, y)
    assert np.isfinite(model.alphas_).all() and np.isfinite(model.bounds_).all()
    assert np.isfinite(model.decision_function(X)).all()


def test_separable_data_gets_a_finite_alpha_and_stops():
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    y = np.array([0, 0, 1, 1])
    for model in (AdaBoostDB(n_rounds=10, cost=(1, 10)), AdaBoost(n_rounds=10),
                  CostSensitiveAdaBoost(n_rounds=10)):
        model.fit(X, y)
        assert model.n_rounds_ == 1 and np.isfinite(model.alphas_).all()
        assert model.alphas_[0] > 0 and model.thresholds_[0] == 1.5
        assert model.predict(X).tolist() == [0, 0, 1, 1]


def test_two_samples():
    model = AdaBoostDB(n_rounds=5).fit(np.array([[1.0], [2.0]]), np.array([-1, 1]))
    assert model.predict(np.array([[0.0], [5.0]])).tolist() == [-1, 1]


def test_constant_features_are_an_error():
    with pytest.raises(ValueError, match="no stump separates"):
        AdaBoostDB(n_rounds=5).fit(np.ones((10, 3)), np.r_[np.zeros(5), np.ones(5)])


def test_ties_never_split_equal_values():
    X = np.array([[0.0], [1.0], [1.0], [1.0], [2.0]])
    y = np.array([0, 0, 1, 1, 1])
    model = AdaBoostDB(n_rounds=3).fit(X, y)
    assert set(model.thresholds_) <= {0.5, 1.5}


@pytest.mark.parametrize("labels", [np.array([0, 1] * 10), np.array([-1, 1] * 10),
                                    np.array([False, True] * 10)])
def test_label_encodings(labels):
    X = np.arange(20, dtype=float)[:, None] + labels[:, None] * 30
    model = AdaBoostDB(n_rounds=3).fit(X, labels)
    assert np.array_equal(model.predict(X), labels)


@pytest.mark.parametrize("X, y, message", [
    (np.ones((4, 2)), np.ones(4), "exactly two classes"),
    (np.ones((4, 2)), np.array([0, 1, 0]), "inconsistent numbers of samples"),
    (np.array([[np.nan, 1], [1, 1], [2, 2], [3, 3]]), np.array([0, 1, 0, 1]), "NaN"),
    (np.array([[np.inf], [1], [2], [3]]), np.array([0, 1, 0, 1]), "NaN or infinite"),
    (np.ones(4), np.array([0, 1, 0, 1]), "Expected 2D array"),
])
def test_bad_inputs(X, y, message):
    with pytest.raises(ValueError, match=message):
        AdaBoostDB(n_rounds=2).fit(X, y)


@pytest.mark.parametrize("cost", [(0, 1), (-1, 1), (1, float("inf")), ("a", 1), (1,)])
def test_bad_costs(cost):
    with pytest.raises(ValueError, match="cost"):
        AdaBoostDB(n_rounds=2, cost=cost).fit(np.arange(4.0)[:, None], [0, 1, 0, 1])


def test_predict_before_fit_and_wrong_width():
    model = AdaBoostDB()
    with pytest.raises(ValueError, match="not fitted"):
        model.predict(np.ones((2, 2)))
    model = AdaBoostDB(n_rounds=2).fit(np.arange(8.0).reshape(4, 2), [0, 0, 1, 1])
    with pytest.raises(ValueError, match="X has 3 features, but AdaBoostDB is expecting 2"):
        model.predict(np.ones((2, 3)))


def test_staged_decision_function_ends_at_the_decision_function():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(80, 4))
    y = (X[:, 0] > 0).astype(int)
    model = AdaBoostDB(n_rounds=6, cost=(1, 2)).fit(X, y)
    stages = list(model.staged_decision_function(X))
    assert len(stages) == model.n_rounds_
    np.testing.assert_allclose(stages[-1], model.decision_function(X))


@pytest.mark.parametrize("balance_classes", [True, False])
def test_sample_weight_matches_duplicating_samples(balance_classes):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] + rng.normal(size=40) > 0).astype(int)
    weights = np.ones(40)
    weights[:5] = 2.0
    weighted = AdaBoostDB(n_rounds=5, cost=(1, 2), balance_classes=balance_classes).fit(
        X, y, sample_weight=weights)
    doubled = AdaBoostDB(n_rounds=5, cost=(1, 2), balance_classes=balance_classes).fit(
        np.vstack([X, X[:5]]), np.r_[y, y[:5]])
    np.testing.assert_array_equal(weighted.features_, doubled.features_)
    np.testing.assert_allclose(weighted.alphas_, doubled.alphas_)


@pytest.mark.parametrize("estimator", [AdaBoostDB(6, (1, 3)),
                                       AdaBoostDB(6, (1, 3), balance_classes=False),
                                       AsymmetricInitAdaBoost(6, (1, 3)),
                                       AsymmetricInitAdaBoost(6, (1, 3), balance_classes=False)])
def test_no_sample_weight_is_uniform_weight(estimator):
    from sklearn.base import clone
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 4))
    y = (X[:, 0] + 0.5 * rng.normal(size=60) > 0.4).astype(int)   # unequal class sizes
    plain = clone(estimator).fit(X, y)
    ones = clone(estimator).fit(X, y, sample_weight=np.ones(60))
    np.testing.assert_array_equal(plain.features_, ones.features_)
    assert plain.alphas_.tobytes() == ones.alphas_.tobytes()


def test_balance_classes_sets_the_initial_class_masses():
    X = np.arange(10.0)[:, None]
    y = np.r_[np.zeros(7), np.ones(3)]
    assert AdaBoostDB(1).fit(X, y).class_masses_ == (0.5, 0.5)
    np.testing.assert_allclose(AdaBoostDB(1, balance_classes=False).fit(X, y).class_masses_,
                               (0.3, 0.7))
    # Asymmetric init: the balanced masses (or the class sizes) times the costs.
    np.testing.assert_allclose(AsymmetricInitAdaBoost(1, (1, 3)).fit(X, y).class_masses_,
                               (0.25, 0.75))
    np.testing.assert_allclose(
        AsymmetricInitAdaBoost(1, (1, 3), balance_classes=False).fit(X, y).class_masses_,
        (3 * 1 / (3 + 21), 21 / (3 + 21)))


def test_same_input_gives_an_identical_model():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 40)).astype(np.float32)
    y = (X[:, :3].sum(axis=1) > 0).astype(int)
    first = AdaBoostDB(n_rounds=10, cost=(1, 5), random_state=1).fit(X, y)
    second = AdaBoostDB(n_rounds=10, cost=(1, 5), random_state=1).fit(X, y)
    assert first.thresholds_.tobytes() == second.thresholds_.tobytes()
    assert first.alphas_.tobytes() == second.alphas_.tobytes()
