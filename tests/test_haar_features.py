import numpy as np
import pytest
from skimage.feature import haar_like_feature, haar_like_feature_coord
from skimage.transform import integral_image as sk_integral_image

from facedetect.haar import FEATURE_TYPES, feature_matrix, haar_feature_pool

from .conftest import random_windows


def test_pool_size_for_19x19_is_63960():
    assert len(haar_feature_pool(19, 19)) == 63960


@pytest.mark.parametrize("feature_type", FEATURE_TYPES)
def test_rectangles_equal_skimage_coordinates(feature_type):
    # skimage gives ((row0, col0), (row1, col1)) inclusive corners per rectangle; we give
    # (x=col0, y=row0, w=col1-col0+1, h=row1-row0+1).
    for width, height in ((19, 19), (7, 5)):
        pool = haar_feature_pool(width, height, feature_type)
        coords, _ = haar_like_feature_coord(width, height, feature_type)
        assert len(pool) == len(coords)
        for index in range(0, len(pool), max(1, len(pool) // 400)):
            ours = [(x, y, w, h) for x, y, w, h, _ in pool.feature(index)]
            theirs = [(c0, r0, c1 - c0 + 1, r1 - r0 + 1) for (r0, c0), (r1, c1) in coords[index]]
            assert ours == theirs


@pytest.mark.parametrize("feature_type", FEATURE_TYPES)
def test_raw_values_equal_skimage_on_random_windows(feature_type):
    windows = random_windows(5, seed=11)
    pool = haar_feature_pool(19, 19, feature_type)
    coords, types = haar_like_feature_coord(19, 19, feature_type)
    ours = feature_matrix(windows, pool, normalize=False, progress=False)
    for n, window in enumerate(windows):
        expected = haar_like_feature(sk_integral_image(window.astype(np.float64)), 0, 0, 19, 19,
                                     feature_type=types, feature_coord=coords)
        np.testing.assert_array_equal(ours[n], expected.astype(np.float32))


def test_non_square_window_values_equal_skimage():
    windows = random_windows(3, seed=5, size=(6, 9))
    pool = haar_feature_pool(9, 6)
    coords, types = haar_like_feature_coord(9, 6)
    ours = feature_matrix(windows, pool, normalize=False, progress=False)
    for n, window in enumerate(windows):
        expected = haar_like_feature(sk_integral_image(window.astype(np.float64)), 0, 0, 9, 6,
                                     feature_type=types, feature_coord=coords)
        np.testing.assert_array_equal(ours[n], expected)


def test_normalized_values_are_raw_over_opencvs_factor_computed_by_hand():
    # the oracle: OpenCV's factor sqrt(area * sum(I^2) - sum(I)^2) over the window less a
    # one-pixel border, in float64 from the pixels themselves; 1 for a flat window
    windows = random_windows(20, seed=4)
    windows[0] = 77                                           # flat: the raw sums
    pool = haar_feature_pool(19, 19, "type-3-y")
    raw = feature_matrix(windows, pool, normalize=False, progress=False)
    normalized = feature_matrix(windows, pool, progress=False)
    inner = windows[:, 1:-1, 1:-1].astype(np.float64).reshape(len(windows), -1)
    factor = np.sqrt(inner.shape[1] * (inner ** 2).sum(1) - inner.sum(1) ** 2)
    factor[factor == 0] = 1.0
    np.testing.assert_allclose(normalized, raw / factor[:, None], rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(normalized[0], raw[0])
    assert not np.allclose(normalized[1:], raw[1:])


def test_chunking_and_out_buffer_do_not_change_values():
    windows = random_windows(50, seed=6)
    pool = haar_feature_pool(19, 19, "type-4")
    whole = feature_matrix(windows, pool, progress=False)
    out = np.empty((len(pool), 50), np.float32)
    tiny = feature_matrix(windows, pool, progress=False, working_memory=1, out=out)
    np.testing.assert_array_equal(whole, tiny)
    assert np.shares_memory(tiny, out)
    assert tiny.shape == (50, len(pool))


def test_feature_columns_are_contiguous_for_the_stump_search():
    X = feature_matrix(random_windows(4), haar_feature_pool(19, 19, "type-2-x"), progress=False)
    assert X.flags.f_contiguous


def test_wrong_window_shape_is_rejected():
    with pytest.raises(ValueError, match="shape"):
        feature_matrix(random_windows(2, size=(20, 19)), haar_feature_pool(), progress=False)


def test_unknown_feature_type_is_rejected():
    with pytest.raises(ValueError, match="unknown feature type"):
        haar_feature_pool(19, 19, "type-5")


def test_linear_map_applied_to_integral_image_gives_feature_values():
    from facedetect.haar import integral_image
    window = random_windows(1, seed=9)[0]
    pool = haar_feature_pool(19, 19)
    values = pool.linear_map() @ integral_image(window).ravel()
    np.testing.assert_array_equal(
        values, feature_matrix(window[None], pool, normalize=False, progress=False)[0])
