"""Compact (binned) features: edges, bins and the histogram stump search against brute force."""

import numpy as np
import pytest

from facedetect.training._binned import (MAX_EDGES, BinnedFeatures, binned_candidate_errors,
                                        binned_root_search, quantile_bins)
from facedetect.training._roots import solve_alpha, static_parameters
from facedetect.training._algorithms import make_algorithm
from facedetect.training._search import conditional_root_search
from facedetect.training._stumps import presort


def _brute_force_max_root(binned, weights, is_positive, a, b, cp, cn):
    e_pos, e_neg, valid = binned_candidate_errors(binned, weights, is_positive)
    best, best_root = None, 0.0
    n_features = binned.shape[0]
    for f in range(n_features):          # (feature, cut, polarity) order: first root wins
        for k in range(MAX_EDGES):
            if not valid[f, k]:
                continue
            for side, polarity in enumerate((1, -1)):
                root = solve_alpha(e_pos[f, side, k], e_neg[f, side, k], a, b, cp, cn)
                if root > best_root:
                    best_root, best = root, (f, k, polarity)
    return best, best_root


def _problem(seed, n=300, n_features=40, levels=None):
    rng = np.random.default_rng(seed)
    values = rng.normal(size=(n_features, n)).astype(np.float32)
    if levels:
        values = np.round(values * levels) / levels  # ties, few distinct values
    is_positive = rng.random(n) < 0.4
    values[:5, is_positive] += 0.8                   # a few informative features
    weights = rng.random(n) + 0.01
    weights[is_positive] /= weights[is_positive].sum()
    weights[~is_positive] /= weights[~is_positive].sum()
    return values, weights, is_positive


def test_edges_are_increasing_and_bins_match_the_threshold_test():
    values, _, _ = _problem(0, n=2000, n_features=8)
    binned, edges, n_edges = quantile_bins(values)
    for f in range(len(values)):
        e = edges[f, :n_edges[f]]
        assert np.all(np.diff(e) > 0) and 0 < n_edges[f] <= MAX_EDGES
        assert np.isinf(edges[f, n_edges[f]:]).all()
        # value > edge k exactly when bin > k: the stored float threshold is the stump
        for k in (0, n_edges[f] // 2, n_edges[f] - 1):
            np.testing.assert_array_equal(values[f] > e[k], binned[f] > k)


def test_few_distinct_values_are_kept_exactly():
    values = np.array([[5, 1, 1, 3, 5, 2]], np.float32)
    bins, edges, n_edges = quantile_bins(values)
    assert edges[0, :n_edges[0]].tolist() == [1.0, 2.0, 3.0]
    assert bins.tolist() == [[3, 0, 0, 2, 3, 1]]


def test_edges_sit_at_the_quantiles():
    values = np.arange(1000, dtype=np.float32)[None, ::-1].copy()
    bins, edges, n_edges = quantile_bins(values)
    assert n_edges[0] == MAX_EDGES
    np.testing.assert_array_equal(edges[0], np.arange(1, 256) * 1000 // 256)
    assert np.bincount(bins[0]).min() >= 3 and np.bincount(bins[0]).max() <= 5


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("cost", [(1.0, 1.0), (1.0, 0.1), (0.2, 1.0)])
@pytest.mark.parametrize("exhaustive", [False, True])
def test_root_search_equals_brute_force(seed, cost, exhaustive):
    values, weights, is_positive = _problem(seed, levels=4 if seed % 2 else None)
    binned = BinnedFeatures.from_values(values)
    p = 0.3 + 0.1 * seed
    cp, cn = cost
    a, b = static_parameters(p, 1 - p, cp, cn)
    expected, root = _brute_force_max_root(binned, weights, is_positive, a, b, cp, cn)
    found = binned_root_search(binned, weights, is_positive, (a, b, cp, cn), exhaustive)
    assert (found["feature"], found["position"], found["polarity"]) == expected
    assert found["score"] == pytest.approx(root, rel=1e-12)  # sums in another order


def test_conditional_solves_fewer_roots_than_exhaustive():
    values, weights, is_positive = _problem(1, n=500, n_features=200)
    binned = BinnedFeatures.from_values(values)
    a, b = static_parameters(0.5, 0.5, 1.0, 0.1)
    fast = binned_root_search(binned, weights, is_positive, (a, b, 1.0, 0.1), False)
    full = binned_root_search(binned, weights, is_positive, (a, b, 1.0, 0.1), True)
    assert fast["feature"] == full["feature"] and fast["position"] == full["position"]
    assert fast["roots"] < full["roots"] / 5


def test_equals_the_exact_search_when_the_bins_are_the_values():
    # With at most 256 distinct values the bins lose nothing: same stump as the exact search.
    values, weights, is_positive = _problem(3, levels=3)
    binned = BinnedFeatures.from_values(values)
    assert (binned.n_edges < MAX_EDGES).all()
    a, b = static_parameters(0.5, 0.5, 1.0, 0.5)
    exact = conditional_root_search(presort(values), weights, is_positive, (a, b, 1.0, 0.5))
    found = binned_root_search(binned, weights, is_positive, (a, b, 1.0, 0.5))
    assert (found["feature"], found["polarity"]) == (exact["feature"], exact["polarity"])
    assert found["score"] == pytest.approx(exact["score"], rel=1e-12)
    f = found["feature"]
    threshold = binned.threshold(f, found["position"])
    sorted_values = np.sort(values[f])
    assert sorted_values[exact["position"]] == threshold  # the exact cut's lower value


def test_alpha0_and_feature_offset_continue_a_search_over_blocks():
    values, weights, is_positive = _problem(4, n_features=60)
    binned = BinnedFeatures.from_values(values)
    a, b = static_parameters(0.5, 0.5, 1.0, 0.3)
    whole = binned_root_search(binned, weights, is_positive, (a, b, 1.0, 0.3))
    first = binned_root_search(BinnedFeatures(binned.bins[:30], binned.edges[:30],
                                              binned.n_edges[:30]), weights, is_positive,
                               (a, b, 1.0, 0.3))
    second = binned_root_search(BinnedFeatures(binned.bins[30:], binned.edges[30:],
                                               binned.n_edges[30:]), weights, is_positive,
                                (a, b, 1.0, 0.3), alpha0=first["score"], feature_offset=30)
    merged = second if second is not None and second["score"] > first["score"] else first
    assert (merged["feature"], merged["position"]) == (whole["feature"], whole["position"])


@pytest.mark.parametrize("make", [
    lambda: make_algorithm("db", 15, (1, 4)),
    lambda: make_algorithm("dbn", 15, (3, 1)),
    lambda: make_algorithm("adaboost", 15),
    lambda: make_algorithm("asym-init", 15, (1, 5)),
])
def test_boosting_on_bins_equals_boosting_on_the_values(make):
    # Few distinct values: the bins are the values, so each round picks the same stump.
    values, _, is_positive = _problem(5, n=400, levels=3)
    exact = make().fit(values.T, is_positive)
    compact = make().fit_binned(BinnedFeatures.from_values(values), is_positive)
    np.testing.assert_array_equal(compact.features_, exact.features_)
    np.testing.assert_array_equal(compact.polarities_, exact.polarities_)
    np.testing.assert_allclose(compact.alphas_, exact.alphas_, rtol=1e-9)
    np.testing.assert_array_equal(compact.predict(values.T), exact.predict(values.T))
    assert compact.n_features_in_ == values.shape[0]


def test_minimum_loss_selection_asks_for_exact_features():
    from facedetect.training import CostSensitiveAdaBoost
    values, _, is_positive = _problem(0)
    with pytest.raises(ValueError, match="exact"):
        CostSensitiveAdaBoost(3, (1, 2)).fit_binned(BinnedFeatures.from_values(values),
                                                    is_positive)


def test_a_search_in_chunks_equals_the_whole_search():
    values, weights, is_positive = _problem(2, n_features=50)
    binned = BinnedFeatures.from_values(values)
    a, b = static_parameters(0.4, 0.6, 0.5, 1.0)
    released = []
    chunked = BinnedFeatures(binned.bins, binned.edges, binned.n_edges, chunk_rows=7,
                             release=lambda start, stop: released.append((start, stop)))
    for exhaustive in (False, True):
        whole = binned_root_search(binned, weights, is_positive, (a, b, 0.5, 1.0), exhaustive)
        parts = binned_root_search(chunked, weights, is_positive, (a, b, 0.5, 1.0), exhaustive)
        assert {k: whole[k] for k in whole if k != "roots"} == \
            {k: parts[k] for k in parts if k != "roots"}
    assert released[:8] == [(0, 7), (7, 14), (14, 21), (21, 28), (28, 35), (35, 42),
                            (42, 49), (49, 50)]


# --- a random subset of features per round (max_features) ----------------------------------

@pytest.mark.parametrize("seed", [0, 3])
def test_a_search_over_some_features_equals_brute_force_over_them(seed):
    values, weights, is_positive = _problem(seed, n_features=50)
    binned = BinnedFeatures.from_values(values)
    a, b = static_parameters(0.4, 0.6, 1.0, 0.5)
    subset = np.sort(np.random.default_rng(seed).choice(50, size=13, replace=False))
    only = BinnedFeatures(binned.bins[subset], binned.edges[subset], binned.n_edges[subset])
    (f, k, polarity), root = _brute_force_max_root(only, weights, is_positive, a, b, 1.0, 0.5)
    chunked = BinnedFeatures(binned.bins, binned.edges, binned.n_edges, chunk_rows=9,
                             release=lambda start, stop: None)
    for store in (binned, chunked):
        for exhaustive in (False, True):
            found = binned_root_search(store, weights, is_positive, (a, b, 1.0, 0.5),
                                       exhaustive, features=subset)
            assert (found["feature"], found["position"], found["polarity"]) == \
                (subset[f], k, polarity)
            assert found["score"] == pytest.approx(root, rel=1e-12)


@pytest.mark.parametrize("name", ["db", "dbn", "adaboost", "asym-init"])
def test_each_round_searches_its_own_seeded_subset(name):
    # Exact and compact features (the bins are the values) draw the same subsets, so they
    # pick the same stumps; each stump is one of its round's features; the same seed
    # gives the same model, another seed another one.
    values, _, is_positive = _problem(5, n=400, n_features=60, levels=3)

    def make(seed):
        return make_algorithm(name, 12, (1, 4), max_features=0.25, random_state=seed)

    exact = make(7).fit(values.T, is_positive)
    compact = make(7).fit_binned(BinnedFeatures.from_values(values), is_positive)
    np.testing.assert_array_equal(compact.features_, exact.features_)
    np.testing.assert_allclose(compact.alphas_, exact.alphas_, rtol=1e-9)
    for t, f in enumerate(exact.features_):
        subset = exact._round_features(t, 60)
        assert len(subset) == 15 and f in subset
    np.testing.assert_array_equal(make(7).fit(values.T, is_positive).features_,
                                  exact.features_)
    assert not np.array_equal(make(8).fit(values.T, is_positive).features_, exact.features_)


def test_a_subset_round_picks_the_best_stump_of_its_features():
    # Oracle for the whole loop: round 0 of a subset model is the full-search model's
    # round 0 on the matrix cut down to the subset's columns.
    from facedetect.training import AdaBoostDB
    values, _, is_positive = _problem(1, n=300, n_features=40)
    model = AdaBoostDB(1, (1, 3), max_features=10, random_state=2).fit(values.T, is_positive)
    subset = model._round_features(0, 40)
    full = AdaBoostDB(1, (1, 3)).fit(values[subset].T, is_positive)
    assert model.features_[0] == subset[full.features_[0]]
    assert model.thresholds_[0] == full.thresholds_[0]
    assert model.alphas_[0] == pytest.approx(full.alphas_[0], rel=1e-12)


@pytest.mark.parametrize("bad", [0, -1, 0.0, 1.5, "half", True, float("nan")])
def test_max_features_is_checked(bad):
    from facedetect.training import AdaBoostDB
    values, _, is_positive = _problem(0)
    with pytest.raises(ValueError, match="max_features"):
        AdaBoostDB(2, max_features=bad).fit(values.T, is_positive)


def test_cost_sensitive_adaboost_searches_the_subset_too():
    from facedetect.training import CostSensitiveAdaBoost
    values, _, is_positive = _problem(4, n=200, n_features=30)
    model = CostSensitiveAdaBoost(4, (1, 2), max_features=0.2, random_state=1).fit(
        values.T, is_positive)
    for t, f in enumerate(model.features_):
        assert f in model._round_features(t, 30)


@pytest.mark.parametrize("n_rows", [1, 2, 7, 64])
def test_features_in_pairs_give_the_histograms_and_choice_of_one_at_a_time(n_rows):
    # Oracle: each feature's class-weight histogram made alone (the kernel before pairs),
    # bit for bit, and the search's choice over an odd and an even number of features as
    # brute force over the same bins gives it.
    from facedetect.training._binned_kernels import (N_BINS, _histogram,
                                                     _histogram_pair)
    rng = np.random.default_rng(n_rows)
    bins = rng.integers(0, N_BINS, (2, 1001), dtype=np.uint8)
    weights = rng.random(1001)
    run_stop, run_positive = np.array([400, 1001]), np.array([True, False])
    alone = [np.empty(2 * N_BINS), np.empty(2 * N_BINS)]
    for row, hist in zip(bins, alone):
        _histogram(row, weights, run_stop, run_positive, hist)
    pair = [np.empty(2 * N_BINS), np.empty(2 * N_BINS)]
    _histogram_pair(bins[0], bins[1], weights, run_stop, run_positive, *pair)
    assert all(np.array_equal(a, b) for a, b in zip(alone, pair))   # the same bits
    values, weights, is_positive = _problem(n_rows, n_features=n_rows)
    binned = BinnedFeatures.from_values(values)
    a, b = static_parameters(0.4, 0.6, 1.0, 0.2)
    expected, root = _brute_force_max_root(binned, weights, is_positive, a, b, 1.0, 0.2)
    found = binned_root_search(binned, weights, is_positive, (a, b, 1.0, 0.2))
    assert (found["feature"], found["position"], found["polarity"]) == expected


def _exact_test_passes(hist, top, coefs, terms):
    """Brute force: the cuts below ``top`` that pass the kernel's exact improvement test,
    for either polarity, with the class sums added one bin at a time as the scan adds them."""
    from facedetect.training._binned_kernels import N_BINS
    from facedetect.training._search_kernels import EXACT_SLACK
    a, b = coefs[0], coefs[1]
    r_pos, r_neg, s = terms
    passing, cum_pos, cum_neg = [], 0.0, 0.0
    for k in range(top):
        cum_pos += hist[k]
        cum_neg += hist[N_BINS + k]
        for e_pos, e_neg in ((cum_pos, max(1.0 - cum_neg, 0.0)),
                             (max(1.0 - cum_pos, 0.0), cum_neg)):
            lhs = a * e_pos * r_pos + b * e_neg * r_neg
            if lhs <= s + EXACT_SLACK * (lhs + s):
                passing.append(k)
    return passing


@pytest.mark.parametrize("cost", [(1.0, 1.0), (1.0, 10.0), (10.0, 1.0), (1.0, 1000.0)])
def test_a_feature_skipped_by_its_bound_has_no_cut_that_passes_the_exact_test(cost):
    # Oracle: the exact test of every cut, one at a time. The terms are set at the largest
    # root among a feature's cuts, times 0.999 to 1.001, so that cuts sit on either side of
    # the test and on its edge; the bound may skip a feature only when no cut passes, and
    # it must skip most of those whose cuts all fail by a clear margin.
    from facedetect.training._binned_kernels import N_BINS, _no_cut_can_improve
    from facedetect.training._search_kernels import test_terms
    rng = np.random.default_rng(int(cost[1] * 7 + cost[0]))
    cp, cn = cost
    a, b = static_parameters(0.4, 0.6, cp, cn)
    coefs = np.array([a, b, cp, cn])
    signed = np.zeros(N_BINS + 3)
    skipped = clear = 0
    for trial in range(400):
        top = int(rng.integers(0, N_BINS))
        hist = np.zeros(2 * N_BINS)
        hist[:N_BINS] = rng.random(N_BINS) ** 4 * (rng.random(N_BINS) < 0.7)
        hist[N_BINS:] = rng.random(N_BINS) ** 4 * (rng.random(N_BINS) < 0.7)
        hist[:N_BINS] /= hist[:N_BINS].sum()
        hist[N_BINS:] /= hist[N_BINS:].sum()
        cums = np.cumsum(hist[:N_BINS])[:top], np.cumsum(hist[N_BINS:])[:top]
        roots = [solve_alpha(e_pos, e_neg, a, b, cp, cn) for cp_, cn_ in zip(*cums)
                 for e_pos, e_neg in ((cp_, max(1 - cn_, 0)), (max(1 - cp_, 0), cn_))]
        best = max([r for r in roots if np.isfinite(r)], default=0.1)
        alpha = max(best, 1e-3) * rng.choice([0.999, 1.0, 1.001, 1.5])
        terms = test_terms(alpha, coefs)
        if trial % 2 and top:
            # s on one cut's own left-hand side, give or take 1e-11 to 1e-16 of it: the
            # exact test's slack (1e-12) decides that cut, and the bound must not skip it.
            k = int(rng.integers(0, top))
            e_pos, e_neg = cums[0][k], max(1 - cums[1][k], 0)
            lhs = a * e_pos * terms[0] + b * e_neg * terms[1]
            terms = (terms[0], terms[1], lhs * (1 + rng.choice([-1e-11, -1e-12, -1e-13,
                                                                 -1e-16, 0.0, 1e-13])))
        passing = _exact_test_passes(hist, top, coefs, terms)
        skip = _no_cut_can_improve(hist, top, coefs, terms, signed)
        assert not (skip and passing), (trial, passing)
        skipped += skip
        clear += not passing and alpha > 1.01 * best
    assert skipped >= 0.5 * clear > 0


@pytest.mark.parametrize("make", [
    lambda: make_algorithm("db", 12, (1, 4)),
    lambda: make_algorithm("dbn", 12, (3, 1)),
    lambda: make_algorithm("adaboost", 12),
])
def test_a_compacted_store_boosts_the_stumps_of_the_one_with_empty_bins(make):
    """Samples binned at edges other samples set leave bins empty: the search counts
    them each round, or the store is compacted once; the same stumps either way."""
    values, _, is_positive = _problem(7, n=400)
    whole = BinnedFeatures.from_values(values)
    keep = np.flatnonzero(np.random.default_rng(1).random(400) < 0.3)   # gaps in the bins
    sparse = BinnedFeatures(np.ascontiguousarray(whole.bins[:, keep]), whole.edges,
                            whole.n_edges)
    counted = make().fit_binned(sparse, is_positive[keep])
    dense = BinnedFeatures(sparse.bins.copy(), sparse.edges, sparse.n_edges).compacted()
    assert dense.dense and (dense.n_edges < whole.n_edges).any()
    compacted = make().fit_binned(dense, is_positive[keep])
    np.testing.assert_array_equal(compacted.features_, counted.features_)
    np.testing.assert_array_equal(compacted.thresholds_, counted.thresholds_)
    np.testing.assert_array_equal(compacted.polarities_, counted.polarities_)
    np.testing.assert_array_equal(compacted.alphas_, counted.alphas_)
    # every cut of the compacted store splits the samples as its threshold does
    for f in range(0, len(values), 7):
        for cut in range(dense.n_edges[f]):
            assert np.array_equal(dense.bins[f] > cut,
                                  values[f, keep] > dense.threshold(f, cut))
