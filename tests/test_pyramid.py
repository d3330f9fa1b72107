"""Pyramid levels: area averages (checked against numpy and OpenCV's INTER_AREA) and
OpenCV's bilinear resize, as detection and mining use them."""

import cv2
import numpy as np
import pytest
from scipy import ndimage

from facedetect.detector import _multiscale as detect_module
from facedetect.detector._multiscale import DetectionParams, pyramid_scales, scanner_for
from facedetect.detector._model import HaarDetectorModel
from facedetect.detector._api import shipped_model_path
from facedetect.detector._pyramid import Pyramid, halved
from facedetect.errors import FacedetectError
from facedetect.pipeline._bootstrap import BOOTSTRAP_SCAN, random_windows


def _smooth_picture(shape=(180, 240), seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    picture = ndimage.gaussian_filter(rng.normal(128, 60, shape), 3)
    return np.clip(picture, 0, 255).astype(np.uint8)


def _sizes(width: int, height: int, factor: float = 1.1, smallest: int = 19):
    sizes, scale = [], 1.0
    while width / scale >= smallest and height / scale >= smallest:
        sizes.append((int(round(width / scale)), int(round(height / scale))))
        scale *= factor
    return sizes


def test_halved_is_the_mean_of_each_2x2_block():
    picture = np.random.default_rng(1).integers(0, 256, (40, 60), dtype=np.uint8)
    blocks = picture.reshape(20, 2, 30, 2).astype(np.float64).mean(axis=(1, 3))
    assert np.abs(halved(picture).astype(int) - blocks).max() <= 0.5
    assert halved(picture[:39, :59]).shape == (20, 30)   # odd sides round up


def test_area_levels_are_close_to_opencv_area_from_the_image():
    # Octaves, then a level of each: not INTER_AREA's single box per pixel (two boxes,
    # uint8 halvings), but on a photograph far closer to it than a bilinear level.
    from skimage import data
    picture = cv2.cvtColor(data.astronaut(), cv2.COLOR_RGB2GRAY)[::2, ::2].copy()
    pyramid = Pyramid(picture, "area", smallest=(19, 19))
    for size in _sizes(256, 256):
        ours = pyramid.level(size).astype(float)
        direct = cv2.resize(picture, size, interpolation=cv2.INTER_AREA).astype(float)
        bilinear = cv2.resize(picture, size, interpolation=cv2.INTER_LINEAR)
        assert np.corrcoef(ours.ravel(), direct.ravel())[0, 1] > 0.98, size
        if size[0] < 128:
            assert np.abs(ours - direct).mean() < np.abs(bilinear - direct).mean(), size
    # The first octave (even sides) is the direct area average itself.
    assert np.abs(pyramid.level((128, 128)).astype(int)
                  - cv2.resize(picture, (128, 128), interpolation=cv2.INTER_AREA)).max() <= 1


def test_area_levels_average_grain_away_where_bilinear_ones_keep_it():
    # A grey picture with pixel grain, shrunk 4.3 times: an area level's grain is the
    # mean of ~18 pixels (sd 40 / 4.3); bilinear samples keep most of it (why: pyramid.py).
    grain = np.random.default_rng(2).normal(128, 40, (430, 430))
    picture = np.clip(grain, 0, 255).astype(np.uint8)
    area = Pyramid(picture, "area", smallest=(100, 100)).level((100, 100))
    linear = Pyramid(picture, "linear").level((100, 100))
    assert area.std() < 12 < 20 < linear.std()


def test_linear_levels_and_enlarged_levels_are_opencv_bilinear():
    picture = _smooth_picture()
    for method in ("area", "linear"):
        pyramid = Pyramid(picture, method, smallest=(19, 19))
        for size in [(300, 225)] + ([(101, 76)] if method == "linear" else []):
            assert np.array_equal(pyramid.level(size), cv2.resize(
                picture, size, interpolation=cv2.INTER_LINEAR))
        assert pyramid.level((240, 180)) is picture


def test_bad_pyramids_are_refused():
    with pytest.raises(ValueError, match="pyramid"):
        Pyramid(np.zeros((20, 20), np.uint8), "cubic")
    with pytest.raises(FacedetectError, match="pyramid must be one of area, linear"):
        DetectionParams(pyramid="cubic").validate()


@pytest.fixture(scope="module")
def model():
    return HaarDetectorModel.load(shipped_model_path())


@pytest.mark.parametrize("method", ["area", "linear"])
def test_detect_scans_the_levels_its_pyramid_makes(model, method):
    picture = _smooth_picture(seed=3)
    params = DetectionParams(threshold=0.0, step=2, pyramid=method)
    scanner = scanner_for(model, params)
    pyramid = Pyramid(picture, method, smallest=(19, 19))
    levels = list(detect_module._scan_levels(picture, scanner, params))
    assert len(levels) == len(pyramid_scales(240, 180, 19, params))
    for level, *_ in levels:
        assert np.array_equal(level, pyramid.level(level.shape[::-1]))


def test_opencv_steps_resize_as_opencv_whatever_the_pyramid_says(model):
    # Contrast stretched: OpenCV's scan (and step="auto") skips windows whose standard
    # deviation is at most 10 grey levels, as the smooth picture's are.
    smooth = _smooth_picture(seed=4).astype(float)
    picture = np.clip((smooth - smooth.mean()) * 6 + 128, 0, 255).astype(np.uint8)
    found = [detect_module.scan_raw(picture, scanner_for(model, p), p)[:2]
             for p in (DetectionParams(threshold=-5.0, step="auto", pyramid=method)
                       for method in ("area", "linear"))]
    assert np.array_equal(found[0][0], found[1][0]) and len(found[0][0]) > 0
    assert np.array_equal(found[0][1], found[1][1])


@pytest.mark.parametrize("method", ["area", "linear"])
def test_random_negatives_are_cut_from_the_pyramid_asked_for(method):
    picture = _smooth_picture((60, 80), seed=5)
    windows = random_windows([picture], 12, seed=0, pyramid=method)
    scan = DetectionParams(scale_factor=BOOTSTRAP_SCAN.scale_factor, min_size=19)
    pyramid = Pyramid(picture, method)
    levels = [pyramid.level((max(19, int(round(80 / s))), max(19, int(round(60 / s)))))
              for s in pyramid_scales(80, 60, 19, scan)]
    for window in windows:
        assert any((np.lib.stride_tricks.sliding_window_view(level, (19, 19))
                    == window).all(axis=(2, 3)).any() for level in levels)
