"""Feature storage within a memory setting: in memory, spilled to disk, and refused."""

import numpy as np
import pytest

from facedetect.errors import FacedetectError
from facedetect.haar import feature_matrix, haar_feature_pool
from facedetect.training._binned import BinnedFeatures, binned_root_search
from facedetect.training import AdaBoostDB
from facedetect.training._roots import static_parameters
from facedetect.pipeline._storage import (check_memory_setting, compact_features,
                                         minimum_memory)


@pytest.fixture(scope="module")
def windows_and_labels():
    rng = np.random.default_rng(0)
    windows = rng.integers(0, 256, (120, 19, 19), dtype=np.uint8)
    labels = np.arange(120) % 3 == 0
    windows[labels, 5:9, 4:15] //= 3     # a dark band: something to find
    return windows, labels


def test_compact_features_are_the_bins_of_the_feature_matrix(windows_and_labels):
    windows, _ = windows_and_labels
    pool = haar_feature_pool(19, 19)
    stored = compact_features(windows, pool, 2**30, progress=False)
    whole = BinnedFeatures.from_values(feature_matrix(windows, pool, progress=False).T)
    np.testing.assert_array_equal(stored.bins, whole.bins)
    np.testing.assert_array_equal(stored.edges, whole.edges)
    assert stored.chunk_rows is None


@pytest.mark.parametrize("types", ["type-2-x", ("type-2-x", "tilted-2-y",
                                                 "channel-gradient", "channel-orientation-60")])
def test_windows_prepared_once_give_the_feature_matrix_bit_for_bit(types):
    # the integral images computed once (a memory setting they fit in) or per block (one
    # they do not), against the feature matrix of each block's pool
    from facedetect.haar._matrix import PreparedWindows
    windows = np.random.default_rng(4).integers(0, 256, (1500, 24, 24), dtype=np.uint8)
    pool = haar_feature_pool(24, 24, types)
    prepared = PreparedWindows(pool).prepare(windows)
    assert len(prepared.chunks) == 2       # 1,024 windows a chunk
    for start, stop in ((0, 100), (len(pool) - 300, len(pool)), (17, 18)):
        expected = feature_matrix(windows, pool.subset(np.arange(start, stop)),
                                  progress=False).T
        np.testing.assert_array_equal(prepared.features(start, stop), expected)
    small = PreparedWindows(pool).nbytes(len(windows)) * 4 - 1    # just too small
    assert small > 64 * len(windows) * 5 * 8                        # still a block
    once = compact_features(windows, pool, 2**30, progress=False)
    per_block = compact_features(windows, pool, small, progress=False)
    np.testing.assert_array_equal(once.bins, per_block.bins)
    np.testing.assert_array_equal(once.edges, per_block.edges)


def test_spilled_features_train_the_same_model(windows_and_labels):
    windows, labels = windows_and_labels
    pool = haar_feature_pool(19, 19)
    in_memory = compact_features(windows, pool, 2**30, progress=False)
    spilled = compact_features(windows, pool, 2 * 2**20, progress=False)
    assert spilled.chunk_rows is not None and spilled.release is not None
    np.testing.assert_array_equal(np.asarray(spilled.bins), in_memory.bins)
    a, b = static_parameters(0.5, 0.5, 1.0, 0.2)
    w = np.where(labels, 1 / labels.sum(), 1 / (~labels).sum())
    chunked = binned_root_search(spilled, w, labels, (a, b, 1.0, 0.2))
    whole = binned_root_search(in_memory, w, labels, (a, b, 1.0, 0.2))
    chunked.pop("roots"), whole.pop("roots")   # chunks start from the best so far
    assert chunked == whole
    one = AdaBoostDB(5, (1, 3)).fit_binned(in_memory, labels)
    two = AdaBoostDB(5, (1, 3)).fit_binned(spilled, labels)
    np.testing.assert_array_equal(one.features_, two.features_)
    np.testing.assert_array_equal(one.alphas_, two.alphas_)


def test_a_setting_below_one_block_is_refused_naming_the_minimum():
    least = minimum_memory(10_000)
    with pytest.raises(FacedetectError, match=f"minimum is {least / 2**20:.1f} MiB"):
        check_memory_setting(least - 1, 10_000, 63_960, exact=False)
    check_memory_setting(least, 10_000, 63_960, exact=False)


def test_exact_storage_beyond_the_setting_is_refused():
    with pytest.raises(FacedetectError, match="exact features .* need 3.57 GiB"):
        check_memory_setting(2**30, 10_000, 63_960, exact=True)


def test_bins_at_edges_count_the_edges_below_each_value():
    # oracle: numpy's searchsorted (left: edges strictly below), on values at, between,
    # below and above the edges
    from facedetect.training._binned import bins_at_edges, quantile_bins
    rng = np.random.default_rng(3)
    values = rng.normal(size=(40, 500)).astype(np.float32)
    values[:5] = np.round(values[:5])          # few distinct values: every one an edge
    _, edges, n_edges = quantile_bins(values)
    new = np.concatenate([rng.normal(scale=2, size=(40, 300)).astype(np.float32),
                          edges[:, :10], values[:, :53]], axis=1)   # 363: a tail of 3
    new = np.where(np.isinf(new), 0.0, new).astype(np.float32)
    found = bins_at_edges(new, edges, n_edges)
    for f in range(40):
        expected = np.searchsorted(edges[f, :n_edges[f]], new[f], side="left")
        np.testing.assert_array_equal(found[f], expected)
    # the values the edges came from get the bins quantile_bins gave them
    np.testing.assert_array_equal(bins_at_edges(values, edges, n_edges),
                                  quantile_bins(values)[0])


def test_an_extended_store_is_the_store_computed_at_once(windows_and_labels):
    """A stage's new windows binned at the first stage's edges: in memory or spilled, the
    same bins as computing every window at once with those edges, and the same model."""
    from facedetect.pipeline._storage import extend_features, spilled_bytes
    windows, labels = windows_and_labels
    pool = haar_feature_pool(19, 19, ("type-2-x", "type-3-y"))
    values = feature_matrix(windows, pool, progress=False).T
    at_once = compact_features(windows, pool, 2**30, progress=False, edges_from=80)
    expected = BinnedFeatures.from_values(values[:, :80])
    np.testing.assert_array_equal(at_once.bins[:, :80], expected.bins)
    np.testing.assert_array_equal(at_once.edges, expected.edges)
    rest = np.stack([np.searchsorted(expected.edges[f, :expected.n_edges[f]], values[f, 80:])
                     for f in range(len(pool))])
    np.testing.assert_array_equal(at_once.bins[:, 80:], rest)
    for memory, capacity in ((2**30, None), (2**30, 120), (minimum_memory(120), None),
                             (minimum_memory(120), 120)):
        first = compact_features(windows[:80], pool, memory, progress=False,
                                 capacity=capacity)
        middle = extend_features(first, windows[80:100], pool, memory, progress=False)
        grown = extend_features(middle, windows[100:], pool, memory, progress=False)
        assert grown.shape[1] == 120 and middle.shape[1] == 100 and first.shape[1] == 80
        np.testing.assert_array_equal(grown.bins, at_once.bins)
        np.testing.assert_array_equal(middle.bins, at_once.bins[:, :100])   # still whole
        spilled = memory < 2**30
        assert (grown.release is not None) == spilled
        # with room, the one buffer made first holds every window: nothing is copied
        assert (grown.buffer is first.buffer) == (capacity is not None)
        assert spilled_bytes(grown) == (len(pool) * 120 if spilled else 0)
        one = AdaBoostDB(6, (1, 3)).fit_binned(at_once, labels)
        two = AdaBoostDB(6, (1, 3)).fit_binned(grown, labels)
        assert one.features_.tolist() == two.features_.tolist()
        assert one.alphas_.tobytes() == two.alphas_.tobytes()


def test_the_search_over_room_and_class_runs_is_the_search_of_the_whole_matrix():
    # the search over a buffer with room, and over class runs, against the brute-force oracle and
    # the plain store of the same bins, samples in any class order
    from facedetect.training._binned import binned_candidate_errors
    rng = np.random.default_rng(5)
    values = rng.normal(size=(30, 90)).astype(np.float32)
    labels = rng.random(90) < 0.4
    values[:, labels] += 0.5
    whole = BinnedFeatures.from_values(values)
    room = np.zeros((30, 120), np.uint8)          # bins in the first columns of a buffer
    room[:, :50] = whole.bins[:, :50]
    parts = BinnedFeatures(room[:, :50], whole.edges, whole.n_edges, dense=True, room=room)
    parts = parts.append(whole.bins[:, 50:70]).append(whole.bins[:, 70:])
    assert parts.buffer is room and parts.shape == (30, 90)
    sparse = BinnedFeatures(whole.bins, whole.edges, whole.n_edges)   # bins counted
    weights = rng.random(90)
    weights[labels] /= weights[labels].sum()
    weights[~labels] /= weights[~labels].sum()
    a, b = static_parameters(0.5, 0.5, 1.0, 0.25)
    e_pos, e_neg, valid = binned_candidate_errors(parts, weights, labels)
    found, roots = [], []
    for store in (whole, parts, sparse):
        best = binned_root_search(store, weights, labels, (a, b, 1.0, 0.25), exhaustive=True)
        roots.append(best.pop("roots"))
        found.append(best)
    assert found[0] == found[1] == found[2]
    assert roots[0] == roots[1] == roots[2] == 2 * int(valid.sum())   # every candidate
    best = found[0]
    side = 0 if best["polarity"] > 0 else 1
    assert valid[best["feature"], best["position"]]
    assert abs(e_pos[best["feature"], side, best["position"]] - best["e_pos"]) < 1e-12
    assert abs(e_neg[best["feature"], side, best["position"]] - best["e_neg"]) < 1e-12
    # the same samples stored faces first (two runs): the same stump and errors
    by_class = np.argsort(~labels, kind="stable")
    sorted_store = BinnedFeatures.from_values(values[:, by_class])
    again = binned_root_search(sorted_store, weights[by_class], labels[by_class],
                               (a, b, 1.0, 0.25), exhaustive=True)
    again.pop("roots")
    assert (again["feature"], again["position"], again["polarity"]) == (
        best["feature"], best["position"], best["polarity"])
    assert abs(again["e_pos"] - best["e_pos"]) < 1e-12


def test_a_source_keeps_its_store_for_the_next_stage_only_when_windows_extend(
        windows_and_labels):
    from facedetect.pipeline._storage import FeatureSource
    windows, _ = windows_and_labels
    pool = haar_feature_pool(19, 19, "type-2-x")
    source = FeatureSource(2**30)
    source(windows[:90], pool, False, edges_from=90)
    grown = source(windows, pool, False, edges_from=90)
    assert source.computed == 30
    whole = compact_features(windows, pool, 2**30, progress=False, edges_from=90)
    np.testing.assert_array_equal(grown.bins, whole.bins)
    other = source(windows[::-1], pool, False, edges_from=90)     # not an extension
    assert source.computed == 120
    np.testing.assert_array_equal(other.bins, compact_features(
        windows[::-1], pool, 2**30, progress=False, edges_from=90).bins)
    source.release()
    source(windows, pool, False)           # a cascade's stage: nothing kept
    assert source.computed == 120 and source._held is None
