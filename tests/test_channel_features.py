"""Channel features over the gradient channels (Dollár's integral channel features): the
channels against Sobel derivatives summed by hand, OpenCV's Sobel and an arc tangent, the
pool's rectangles inside the border, the feature matrix against summing the pixels and the
scanner's arithmetic, a trained model's scan against every cut-out window, its file, its
flag, and its export refused."""

from __future__ import annotations

import copy

import cv2
import numpy as np
import pytest

from facedetect.errors import FacedetectError
from facedetect.haar import feature_matrix, haar_feature_pool
from facedetect.haar._channels import (BORDER, CHANNEL_TYPES, N_ORIENTATIONS,
                                       channel_integrals, gradient_channels, integral_blocks)
from facedetect.haar._features import ALL_FEATURE_TYPES, FEATURE_TYPES
from facedetect.modelfile._io import reseal
from facedetect.modelfile._schema import N_CHANNELS, check_document

from .conftest import plain_config


def channels_by_definition(image: np.ndarray) -> np.ndarray:
    """The 3x3 Sobel derivatives summed by hand over a border reflected as OpenCV's
    BORDER_REFLECT_101 (numpy's "reflect"), (|gx| + |gy|) >> 3, and the orientation bin of
    the line's angle by an arc tangent."""
    p = np.pad(image.astype(np.int64), 1, mode="reflect")
    column = p[:-2] + 2 * p[1:-1] + p[2:]           # smoothed down the rows
    row = p[:, :-2] + 2 * p[:, 1:-1] + p[:, 2:]     # smoothed along the rows
    gx = column[:, 2:] - column[:, :-2]
    gy = row[2:] - row[:-2]
    magnitude = (np.abs(gx) + np.abs(gy)) >> 3
    angle = np.degrees(np.arctan2(gy, gx)) % 180.0
    bins = np.minimum((angle // (180.0 / N_ORIENTATIONS)).astype(int), N_ORIENTATIONS - 1)
    out = np.zeros((1 + N_ORIENTATIONS, *image.shape), np.int64)
    out[0] = magnitude
    for k in range(N_ORIENTATIONS):
        out[1 + k] = np.where(bins == k, magnitude, 0)
    return out


@pytest.mark.parametrize("shape", [(24, 24), (7, 31), (2, 2), (1, 5), (61, 83)])
def test_the_channels_are_sobels_magnitude_split_by_orientation(shape):
    rng = np.random.default_rng(shape[0] * 100 + shape[1])
    image = rng.integers(0, 256, shape).astype(np.uint8)
    if min(shape) >= 2:   # a border of one pixel reflected
        np.testing.assert_array_equal(gradient_channels(image), channels_by_definition(image))
        gx = cv2.Sobel(image, cv2.CV_16S, 1, 0).astype(np.int64)   # and OpenCV's own
        gy = cv2.Sobel(image, cv2.CV_16S, 0, 1).astype(np.int64)
        np.testing.assert_array_equal(gradient_channels(image)[0], (abs(gx) + abs(gy)) >> 3)
    channels = gradient_channels(image)
    assert channels.shape == (len(CHANNEL_TYPES), *shape) and channels.dtype == np.uint8
    np.testing.assert_array_equal(channels[1:].sum(axis=0), channels[0])
    assert N_CHANNELS == len(CHANNEL_TYPES)
    assert gradient_channels(np.zeros((0, 5), np.uint8)).shape == (len(CHANNEL_TYPES), 0, 5)


def test_edges_fall_in_the_bins_of_their_lines():
    image = np.zeros((9, 9), np.uint8)
    image[:, 5:] = 200                                   # vertical edge: 0 degrees
    assert gradient_channels(image)[1, 4, 4] > 0
    assert gradient_channels(image.T)[1 + N_ORIENTATIONS // 2, 4, 4] > 0   # 90 degrees
    flat = gradient_channels(np.full((6, 6), 77, np.uint8))
    assert not flat.any()


def test_the_channel_pool_keeps_off_the_border_on_a_two_pixel_grid():
    pool = haar_feature_pool(24, 24, CHANNEL_TYPES)
    assert len(pool) == 7 * (11 * 12 // 2) ** 2 == 30492
    x, y, w, h = (pool.rects[:, 0, k].astype(int) for k in range(4))
    assert (x >= BORDER).all() and (y >= BORDER).all()
    assert (x + w <= 24 - BORDER).all() and (y + h <= 24 - BORDER).all()
    assert (w % 2 == 0).all() and (h % 2 == 0).all() and (x % 2 == 1).all()
    assert (pool.n_rects == 1).all() and not pool.tilted.any()
    np.testing.assert_array_equal(np.bincount(pool.channels), [4356] * 7)
    both = haar_feature_pool(24, 24, ALL_FEATURE_TYPES + CHANNEL_TYPES)
    assert both.tilted.sum() == 51200 and (both.channels >= 0).sum() == 30492


def test_the_integral_blocks_follow_the_upright_one():
    assert integral_blocks([False], [-1])[1] == 1
    assert integral_blocks([True, False], [-1, -1])[1] == 2
    assert integral_blocks([False, False], [-1, 6])[0].tolist() == [0, 7]
    assert integral_blocks([True, False], [-1, 0])[0].tolist() == [1, 2]


def test_the_feature_matrix_sums_the_pixels_and_equals_the_scanners_arithmetic():
    from facedetect.detector._model import haar_values
    pool = haar_feature_pool(19, 19, ALL_FEATURE_TYPES + CHANNEL_TYPES)
    rng = np.random.default_rng(0)
    picked = np.sort(rng.choice(len(pool), 3000, replace=False))
    windows = rng.integers(0, 256, (30, 19, 19)).astype(np.uint8)
    subset = pool.subset(picked)
    assert subset.tilted.any() and (subset.channels >= 0).any()
    raw = feature_matrix(windows, subset, normalize=False, progress=False)
    for f in np.flatnonzero(subset.channels >= 0)[::50]:
        (x, y, w, h, _), = subset.feature(f)
        brute = [gradient_channels(win)[subset.channels[f], y:y + h, x:x + w].sum()
                 for win in windows]
        np.testing.assert_array_equal(raw[:, f], brute)
    direct = haar_values(windows, [subset.feature(i) for i in range(len(subset))], (19, 19),
                         tilted=subset.tilted, channels=subset.channels)
    np.testing.assert_array_equal(feature_matrix(windows, subset, progress=False), direct)


def test_haar_values_in_blocks_of_features_are_the_values_at_once(monkeypatch):
    """The gathers run a block of features at a time; a block of 7 (30 windows, 210
    elements) splits the features unevenly and must change nothing, nor the stumps of
    one stage scored alone (their own tables: the stage has no tilted feature)."""
    from facedetect.detector import _model
    pool = haar_feature_pool(19, 19, ALL_FEATURE_TYPES + CHANNEL_TYPES)
    subset = pool.subset(np.sort(np.random.default_rng(3).choice(len(pool), 300, False)))
    features = [subset.feature(i) for i in range(len(subset))]
    windows = np.random.default_rng(4).integers(0, 256, (30, 19, 19)).astype(np.uint8)
    at_once = _model.haar_values(windows, features, (19, 19), tilted=subset.tilted,
                                 channels=subset.channels)
    monkeypatch.setattr(_model, "GATHER_ELEMENTS", 210)
    np.testing.assert_array_equal(_model.haar_values(
        windows, features, (19, 19), tilted=subset.tilted, channels=subset.channels),
        at_once)
    upright = np.flatnonzero(~subset.tilted)
    np.testing.assert_array_equal(_model.haar_values(
        windows, [features[i] for i in upright], (19, 19), tilted=subset.tilted[upright],
        channels=subset.channels[upright]), at_once[:, upright])
    with pytest.raises(ValueError, match="outside the 19x19 window"):
        _model.haar_values(windows, [[(15, 0, 5, 4, 1.0)]], (19, 19))


def test_a_window_cut_out_has_the_channel_sums_of_the_picture_inside_its_border():
    rng = np.random.default_rng(5)
    picture = rng.integers(0, 256, (40, 50)).astype(np.uint8)
    whole = channel_integrals(picture)
    window = picture[7:31, 11:35]
    cut = channel_integrals(window)
    for c in range(7):   # any rectangle one pixel inside the window's border
        x, y, w, h = 1, 1, 22, 22
        inside = (cut[c, y + h, x + w] - cut[c, y, x + w] - cut[c, y + h, x] + cut[c, y, x])
        X, Y = 11 + x, 7 + y
        there = (whole[c, Y + h, X + w] - whole[c, Y, X + w] - whole[c, Y + h, X]
                 + whole[c, Y, X])
        assert inside == there


def _trained(small_cbcl, tilted: bool):
    from facedetect.data import load_cbcl
    from facedetect.pipeline._train import train_detector
    model = train_detector(plain_config((1, 1), 40, tilted=tilted, channels=True),
                           load_cbcl(small_cbcl), progress=False).model
    assert (model.channels >= 0).sum() >= 5, "too few channel stumps to test them"
    return model


@pytest.fixture(scope="module")
def channel_model(small_cbcl):
    """Haar, tilted and channel features together."""
    return _trained(small_cbcl, tilted=True)


@pytest.fixture(scope="module")
def channels_only_model(small_cbcl):
    """Upright Haar and channel features: no tilted integral between them."""
    return _trained(small_cbcl, tilted=False)


@pytest.mark.parametrize("which", ["channel_model", "channels_only_model"])
@pytest.mark.parametrize("step", [1, 2, "refine"])
def test_the_scan_of_a_channel_model_equals_scoring_every_cut_out_window(which, step,
                                                                         request):
    from skimage import data

    from facedetect.detector import _scan as scan_module
    from facedetect.detector._scan import LevelScanner
    channel_model = request.getfixturevalue(which)
    refine, step = step == "refine", 1 if step == "refine" else step
    level = cv2.resize(data.camera(), (110, 100), interpolation=cv2.INTER_AREA)
    shape = channel_model.window[::-1]
    patches = np.lib.stride_tricks.sliding_window_view(level, shape)[::step, ::step]
    expected = channel_model.decision_function(patches.reshape(-1, *shape))
    expected = expected.reshape(patches.shape[:2])
    threshold = float(np.quantile(expected, 0.8))
    rows, cols = np.nonzero(expected > threshold)
    limit = scan_module.INT32_PIXELS
    for wide in (False, True):   # int32 sums, and the int64 ones of huge strips
        scan_module.INT32_PIXELS = 0 if wide else limit
        try:
            xs, ys, scores = LevelScanner(channel_model, threshold, pruning=False).scan(
                level, step="refine" if refine else step)
        finally:
            scan_module.INT32_PIXELS = limit
        got = dict(zip(zip(ys // step, xs // step), scores))
        assert all(score == expected[key] for key, score in got.items())   # exact scores
        if refine:   # coarse to fine skips a window whose coarse neighbours all scored low
            assert set(got) <= set(zip(rows, cols)) and len(got) >= 0.99 * len(rows)
            continue
        np.testing.assert_array_equal(np.sort(ys * 10_000 + xs),
                                      np.sort(rows * step * 10_000 + cols * step))


def test_a_channel_model_file_round_trips_and_its_channels_are_checked(channel_model,
                                                                       tmp_path):
    from facedetect.detector._model import HaarDetectorModel
    back = HaarDetectorModel.load(channel_model.save(tmp_path / "c.json"))
    np.testing.assert_array_equal(back.channels, channel_model.channels)
    at = int(np.flatnonzero(channel_model.channels >= 0)[0])
    for change, message in (
            (lambda f: f.__setitem__("channels", f["channels"][:-1]), "channels"),
            (lambda f: f["channels"].__setitem__(at, 7), "channels"),
            (lambda f: f["rects"][at].append([1, 1, 2, 2, 1.0]), "one upright rectangle")):
        document = copy.deepcopy(channel_model.document)
        change(document["features"])
        with pytest.raises(FacedetectError, match=message):
            check_document(reseal(document), "c.json")


def test_a_channel_model_scores_no_windows_and_a_staged_one_rejects_all(channel_model):
    from facedetect.detector._staging import staged_model
    shape = channel_model.window[::-1]
    assert channel_model.decision_function(np.empty((0, *shape), np.uint8)).shape == (0,)
    staged = staged_model(channel_model, 1e6)   # every window rejected at a cut
    flat = np.full((1, *shape), 128, np.uint8)
    assert staged.decision_function(flat).shape == (1,)


def test_a_channel_rectangle_on_the_border_or_malformed_is_refused(channel_model):
    from facedetect.modelfile._schema import CHANNEL_BORDER
    assert CHANNEL_BORDER == BORDER
    at = int(np.flatnonzero(channel_model.channels >= 0)[0])
    for rect, message in (([0, 1, 2, 2, 1.0], "border"), ("x", "rectangle")):
        document = copy.deepcopy(channel_model.document)
        document["features"]["rects"][at] = [rect] if rect != "x" else "x"
        with pytest.raises(FacedetectError, match=message):
            check_document(reseal(document), "c.json")


def test_opencv_export_refuses_a_channel_model_in_one_line(channel_model, tmp_path):
    from facedetect.detector._export import cascade_xml
    with pytest.raises(FacedetectError, match="OpenCV's cascade format holds Haar"):
        cascade_xml(channel_model)


def test_the_channels_flag_and_field_agree():
    from facedetect.cli._main import build_parser
    from facedetect.pipeline._config import TrainConfig, check_config, feature_types
    parser = build_parser()
    for flags, expected in (([], None), (["--channels"], True), (["--no-channels"], False)):
        assert parser.parse_args(["train", *flags]).channels is expected
    with pytest.raises(FacedetectError, match="channels"):
        check_config(TrainConfig(channels="yes"))
    # None: the recipe's choice, on with faces from the wild, off on CBCL alone
    from facedetect.pipeline._config import resolved_window
    assert resolved_window(TrainConfig(), wild_faces=True).channels is True
    assert resolved_window(TrainConfig(), wild_faces=False).channels is False
    assert resolved_window(TrainConfig(channels=False), wild_faces=True).channels is False
    assert feature_types(TrainConfig()) == FEATURE_TYPES
    assert feature_types(TrainConfig(channels=True)) == FEATURE_TYPES + CHANNEL_TYPES
    assert len(feature_types(TrainConfig(tilted=True, channels=True))) == 18
