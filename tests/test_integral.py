import numpy as np
import pytest

from facedetect.haar import (
    integral_image,
    normalization_factors,
    rectangle_sums,
    squared_integral_image,
)
from facedetect.haar._matrix import window_scales


def test_integral_image_matches_brute_force_sums():
    image = np.random.default_rng(1).integers(0, 256, (7, 5)).astype(np.uint8)
    ii = integral_image(image)
    assert ii.shape == (8, 6) and ii.dtype == np.int64
    assert (ii[0] == 0).all() and (ii[:, 0] == 0).all()
    for r in range(8):
        for c in range(6):
            assert ii[r, c] == image[:r, :c].sum()


def test_rectangle_sums_for_many_windows_at_once():
    images = np.random.default_rng(2).integers(0, 256, (4, 9, 11)).astype(np.uint8)
    ii = integral_image(images)
    x, y = np.array([0, 3, 10]), np.array([0, 2, 8])
    w, h = np.array([11, 4, 1]), np.array([9, 5, 1])
    sums = rectangle_sums(ii, x, y, w, h)
    assert sums.shape == (4, 3)
    for n in range(4):
        for k in range(3):
            assert sums[n, k] == images[n, y[k]:y[k] + h[k], x[k]:x[k] + w[k]].sum()


def test_squared_integral_does_not_overflow_for_white_windows():
    white = np.full((19, 19), 255, np.uint8)
    sq = squared_integral_image(white)
    assert sq[-1, -1] == 361 * 255 ** 2 > 2 ** 24


def test_normalization_factor_hand_computed():
    # 5x5 window: the normalising rectangle is the inner 3x3 block.
    window = np.zeros((5, 5), np.uint8)
    window[1:4, 1:4] = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    window[0, :] = 200  # the border must not count
    # area 9, sum 45, sum of squares 285: nf = sqrt(9*285 - 45^2) = sqrt(540)
    nf = normalization_factors(integral_image(window), squared_integral_image(window), 5, 5)
    assert nf == pytest.approx(np.sqrt(540.0), rel=1e-15)


def test_flat_window_gets_factor_one_and_finite_values():
    flat = np.full((1, 19, 19), 77, np.uint8)
    nf = normalization_factors(integral_image(flat), squared_integral_image(flat), 19, 19)
    assert nf.tolist() == [1.0]
    assert np.isfinite(window_scales(flat)).all()


def test_normalization_cancels_gain_and_offset_for_zero_sum_features():
    from facedetect.haar import feature_matrix, haar_feature_pool
    base = np.random.default_rng(3).integers(10, 100, (1, 8, 8))
    # Gain cancels for every feature; an offset only for the zero-sum types (the
    # three-rectangle types weigh -1, +1, -1 over equal areas, so they see the offset).
    all_types = haar_feature_pool(8, 8)
    np.testing.assert_allclose(
        feature_matrix(base.astype(np.uint8), all_types, progress=False),
        feature_matrix((2 * base).astype(np.uint8), all_types, progress=False), rtol=1e-6)
    zero_sum = haar_feature_pool(8, 8, ["type-2-x", "type-2-y", "type-4"])
    np.testing.assert_allclose(
        feature_matrix(base.astype(np.uint8), zero_sum, progress=False),
        feature_matrix((2 * base + 30).astype(np.uint8), zero_sum, progress=False),
        rtol=1e-5, atol=1e-6)
