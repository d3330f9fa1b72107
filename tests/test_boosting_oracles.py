"""Oracle tests: conditional search vs brute force, the loss rule vs brute force, CS vs CS."""

import numpy as np
import pytest

from facedetect.data import make_bayes, make_two_clouds, projection_features
from facedetect.training import (
    AdaBoost,
    AdaBoostDB,
    AsymmetricInitAdaBoost,
    CostSensitiveAdaBoost,
)

COSTS = [(1, 1), (1, 10), (10, 1), (1, 100), (100, 1), (1.5, 4)]


def small_problem(n=400, n_angles=24, seed=0, kind="bayes"):
    make = make_bayes if kind == "bayes" else make_two_clouds
    points, y = make(n, seed=seed)
    return projection_features(points, n_angles), y


@pytest.fixture(scope="module")
def haar_problem(cbcl):
    """600 Haar features over 500 CBCL windows: exercises the seeding pass and the blocks."""
    from facedetect.haar import feature_matrix, haar_feature_pool
    rng = np.random.default_rng(0)
    rows = np.sort(rng.choice(len(cbcl.labels), 500, replace=False))
    pool = haar_feature_pool().subset(rng.choice(63960, 1200, replace=False))
    X = feature_matrix(cbcl.images[rows], pool, progress=False)
    return X, cbcl.labels[rows]


def assert_same_models(first, second, alpha_tol=1e-9):
    assert first.n_rounds_ == second.n_rounds_
    np.testing.assert_array_equal(first.features_, second.features_)
    np.testing.assert_array_equal(first.thresholds_, second.thresholds_)
    np.testing.assert_array_equal(first.polarities_, second.polarities_)
    np.testing.assert_allclose(first.alphas_, second.alphas_, rtol=alpha_tol, atol=alpha_tol)


@pytest.mark.parametrize("cost", COSTS)
@pytest.mark.parametrize("kind", ["bayes", "clouds"])
def test_conditional_search_equals_exhaustive_on_synthetic(cost, kind):
    X, y = small_problem(kind=kind)
    db = AdaBoostDB(n_rounds=25, cost=cost).fit(X, y)
    dbn = AdaBoostDB(n_rounds=25, cost=cost, search="exhaustive").fit(X, y)
    assert_same_models(db, dbn)
    assert (db.roots_solved_ < dbn.roots_solved_).all()


@pytest.mark.slow
@pytest.mark.parametrize("cost", [(1, 1), (1, 10), (10, 1), (1, 100)])
def test_conditional_search_equals_exhaustive_on_haar_features(haar_problem, cost):
    X, y = haar_problem
    db = AdaBoostDB(n_rounds=12, cost=cost).fit(X, y)
    dbn = AdaBoostDB(n_rounds=12, cost=cost, search="exhaustive").fit(X, y)
    assert_same_models(db, dbn)
    # The paper's claim: the conditional search avoids almost every root.
    assert db.roots_solved_.sum() < 0.05 * dbn.roots_solved_.sum()


def test_conditional_search_with_duplicated_features_keeps_the_first():
    X, y = small_problem(n_angles=12)
    doubled = np.hstack([X, X, X])  # three identical copies: ties everywhere
    db = AdaBoostDB(n_rounds=10, cost=(1, 3)).fit(doubled, y)
    dbn = AdaBoostDB(n_rounds=10, cost=(1, 3), search="exhaustive").fit(doubled, y)
    assert_same_models(db, dbn)
    assert (db.features_ < 12).all()


@pytest.mark.parametrize("cost", [(1, 10), (10, 1), (2, 3), (1, 100)])
def test_loss_rule_hull_search_equals_brute_force(cost):
    X, y = small_problem(seed=3)
    hull = AdaBoostDB(n_rounds=20, cost=cost, selection="loss").fit(X, y)
    brute = CostSensitiveAdaBoost(n_rounds=20, cost=cost).fit(X, y)
    assert_same_models(hull, brute, alpha_tol=1e-7)
    assert hull.roots_solved_.sum() < brute.roots_solved_.sum() / 5


def test_loss_rule_on_haar_features_equals_brute_force(haar_problem):
    X, y = haar_problem
    hull = AdaBoostDB(n_rounds=6, cost=(1, 10), selection="loss").fit(X, y)
    brute = CostSensitiveAdaBoost(n_rounds=6, cost=(1, 10)).fit(X, y)
    assert_same_models(hull, brute, alpha_tol=1e-7)


@pytest.mark.parametrize("cost", [(1, 5), (7, 1), (1, 1)])
def test_vectorized_cs_equals_scalar_cs(cost):
    """Same round state, both solvers: the same stump unless two losses tie to 1e-12."""
    from facedetect.training._roots import normalized_costs, static_parameters
    from facedetect.training._rules import RoundState, min_loss_brute_force
    from facedetect.training._stumps import presort
    X, y = small_problem(n=120, n_angles=8, seed=5)
    values_t = np.ascontiguousarray(X.T)
    order = presort(values_t)
    is_positive = y == 1
    cp, cn = normalized_costs(cost)
    rng = np.random.default_rng(0)
    for _ in range(10):
        weights = rng.exponential(size=len(y))
        weights[is_positive] /= weights[is_positive].sum()
        weights[~is_positive] /= weights[~is_positive].sum()
        p = rng.uniform(0.1, 0.9)
        a, b = static_parameters(p, 1 - p, cp, cn)
        state = RoundState(values_t, order, weights, is_positive, p, 1 - p, a, b, cp, cn)
        vectorized = min_loss_brute_force(state, "vectorized")
        scalar = min_loss_brute_force(state, "scalar")
        assert min_loss_brute_force(state, "scipy") == scalar
        assert scalar["score"] == pytest.approx(vectorized["score"], rel=1e-12)
        if abs(scalar["score"] - vectorized["score"]) == 0 or \
                (scalar["feature"], scalar["position"]) == (vectorized["feature"],
                                                            vectorized["position"]):
            assert (scalar["feature"], scalar["position"], scalar["polarity"]) == \
                (vectorized["feature"], vectorized["position"], vectorized["polarity"])


def test_equal_costs_make_all_algorithms_pick_the_same_stumps():
    X, y = small_problem(seed=7)
    models = [AdaBoostDB(n_rounds=15, cost=(2, 2)), AdaBoostDB(n_rounds=15, selection="loss"),
              CostSensitiveAdaBoost(n_rounds=15, cost=(1, 1)), AdaBoost(n_rounds=15),
              AsymmetricInitAdaBoost(n_rounds=15, cost=(3, 3))]
    fitted = [m.fit(X, y) for m in models]
    for model in fitted[1:]:
        np.testing.assert_array_equal(model.features_, fitted[0].features_)
        np.testing.assert_array_equal(model.thresholds_, fitted[0].thresholds_)
        np.testing.assert_allclose(model.alphas_, fitted[0].alphas_, rtol=1e-7)


def test_root_and_loss_rules_can_disagree_when_costs_differ():
    X, y = small_problem(seed=1)
    root = AdaBoostDB(n_rounds=30, cost=(1, 5)).fit(X, y)
    loss = AdaBoostDB(n_rounds=30, cost=(1, 5), selection="loss").fit(X, y)
    assert (root.features_ != loss.features_).any() or \
        (root.thresholds_ != loss.thresholds_).any()


def test_false_negatives_fall_as_positive_cost_grows():
    X, y = small_problem(n=3000, n_angles=32, seed=11)
    X_test, y_test = small_problem(n=6000, n_angles=32, seed=12)
    fn_rates, fp_rates = [], []
    for cost in [(1, 10), (1, 3), (1, 1), (3, 1), (10, 1)]:
        predicted = AdaBoostDB(n_rounds=40, cost=cost).fit(X, y).predict(X_test)
        fn_rates.append(np.mean(predicted[y_test == 1] == 0))
        fp_rates.append(np.mean(predicted[y_test == 0] == 1))
    assert all(a > b for a, b in zip(fn_rates, fn_rates[1:])), fn_rates
    assert all(a < b for a, b in zip(fp_rates, fp_rates[1:])), fp_rates


def test_asymmetric_init_shifts_towards_the_costly_class():
    X, y = small_problem(n=2000, seed=4)
    sym = AdaBoost(n_rounds=20).fit(X, y).predict(X)
    asym = AsymmetricInitAdaBoost(n_rounds=20, cost=(5, 1)).fit(X, y).predict(X)
    assert np.mean(asym[y == 1] == 0) < np.mean(sym[y == 1] == 0)


@pytest.mark.parametrize("n_samples", [5, 300, 40_000])   # uint16 and uint32 orders
def test_radix_presort_equals_numpy_stable_argsort(n_samples):
    """The radix presort, shared by both sides of every stump-search oracle, checked
    against numpy's stable sort: ties, signed zeros, negatives, infinities, subnormals."""
    from facedetect.training._stumps import boundary, decode, presort
    rng = np.random.default_rng(n_samples)
    special = np.array([0.0, -0.0, np.inf, -np.inf, 1e-45, -1e-45, 3.4e38, -3.4e38],
                       np.float32)
    values = np.round(rng.normal(size=(6, n_samples)), 1).astype(np.float32)  # many ties
    values[:, :len(special)] = special[:n_samples]
    values[1] = rng.permutation(values[1])
    values[2] = 7.0                                            # one value only
    order = presort(values)
    for row, entries in zip(values, order):
        expected = np.argsort(np.where(row == 0, 0, row), kind="stable")  # -0.0 == +0.0
        np.testing.assert_array_equal(decode(entries), expected)
        sorted_row = row[expected]
        np.testing.assert_array_equal(boundary(entries)[:-1], sorted_row[:-1] != sorted_row[1:])
        assert not boundary(entries)[-1]
