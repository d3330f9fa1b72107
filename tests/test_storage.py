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
