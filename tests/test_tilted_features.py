"""Tilted Haar features (Lienhart and Maydt; OpenCV's ``-mode ALL``): the tilted integral
image against its definition, the pool against OpenCV's enumeration, the feature matrix
against the scanner's arithmetic, and a trained tilted model against OpenCV running its
export, window by window and box by box."""

from __future__ import annotations

import copy

import cv2
import numpy as np
import pytest
from PIL import Image

from facedetect.errors import FacedetectError
from facedetect.haar import feature_matrix, haar_feature_pool
from facedetect.haar._features import ALL_FEATURE_TYPES, TILTED_TYPES
from facedetect.haar._integral import tilted_integral_image
from facedetect.modelfile._io import reseal
from facedetect.modelfile._schema import check_document

from .conftest import plain_config


def tilted_by_definition(image: np.ndarray) -> np.ndarray:
    """t[Y, X] = sum of image[y, x] over y < Y and |x - X + 1| <= Y - 1 - y (OpenCV's
    documented definition of the tilted sum), summed pixel by pixel."""
    height, width = image.shape
    out = np.zeros((height + 1, width + 1), np.int64)
    for Y in range(height + 1):
        for X in range(width + 1):
            out[Y, X] = sum(int(image[y, x]) for y in range(Y) for x in range(width)
                            if abs(x - X + 1) <= Y - 1 - y)
    return out


@pytest.mark.parametrize("shape", [(1, 1), (5, 7), (9, 4)])
def test_the_tilted_integral_image_is_its_definition(shape):
    image = np.random.default_rng(sum(shape)).integers(0, 256, shape).astype(np.uint8)
    np.testing.assert_array_equal(tilted_integral_image(image), tilted_by_definition(image))
    stack = tilted_integral_image(np.stack([image, 255 - image]))
    np.testing.assert_array_equal(stack[1], tilted_by_definition(255 - image))
    np.testing.assert_array_equal(tilted_integral_image(image.astype(np.float32)),
                                  tilted_by_definition(image))


@pytest.mark.parametrize("shape", [(1, 1), (1, 6), (6, 1), (2, 2), (13, 7), (7, 13),
                                   (280, 512), (31, 640)])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_the_fast_tilted_integral_is_opencvs(shape, dtype):
    """Oracle: cv2.integral3's tilted output, which the scanner took before (and OpenCV's
    cascade evaluator reads), on white, black and random images of any shape."""
    from facedetect.haar._integral import tilted_integral_into
    rng = np.random.default_rng(shape[0] * 1000 + shape[1])
    for image in (np.full(shape, 255, np.uint8), np.zeros(shape, np.uint8),
                  rng.integers(0, 256, shape).astype(np.uint8)):
        out = np.full((shape[0] + 1, shape[1] + 1), -7, dtype)
        tilted_integral_into(image, out)
        np.testing.assert_array_equal(out, cv2.integral3(image, sdepth=cv2.CV_32S)[2])
    with pytest.raises(ValueError, match="one row and one column more"):
        tilted_integral_into(image, np.empty(shape, dtype))   # never written past its end


def opencv_tilted_features(width: int, height: int) -> set:
    """OpenCV's traincascade enumeration of tilted features (haarfeatures.cpp,
    ``generateFeatures`` in mode ALL), transcribed literally: each as its two
    rectangles ``(x, y, w, h, weight)``."""
    found = set()
    for x in range(width):
        for y in range(height):
            for dx in range(1, width + 1):
                for dy in range(1, height + 1):
                    if x + 2 * dx <= width and y + 2 * dx + dy <= height and x - dy >= 0:
                        found.add(((x, y, dx * 2, dy, -1.0), (x, y, dx, dy, 2.0)))
                    if x + dx <= width and y + dx + 2 * dy <= height and x - 2 * dy >= 0:
                        found.add(((x, y, dx, 2 * dy, -1.0), (x, y, dx, dy, 2.0)))
                    if x + 3 * dx <= width and y + 3 * dx + dy <= height and x - dy >= 0:
                        found.add(((x, y, dx * 3, dy, -1.0), (x + dx, y + dx, dx, dy, 3.0)))
                    if x + dx <= width and y + dx + 3 * dy <= height and x - 3 * dy >= 0:
                        found.add(((x, y, dx, 3 * dy, -1.0), (x - dy, y + dy, dx, dy, 3.0)))
                    if x + 4 * dx <= width and y + 4 * dx + dy <= height and x - dy >= 0:
                        found.add(((x, y, dx * 4, dy, -1.0), (x + dx, y + dx, dx * 2, dy, 2.0)))
                    if x + dx <= width and y + dx + 4 * dy <= height and x - 4 * dy >= 0:
                        found.add(((x, y, dx, 4 * dy, -1.0), (x - dy, y + dy, dx, 2 * dy, 2.0)))
    return found


@pytest.mark.parametrize("width, height", [(9, 7), (12, 12)])
def test_the_tilted_pool_is_opencvs(width, height):
    pool = haar_feature_pool(width, height, TILTED_TYPES)
    ours = [tuple(pool.feature(i)) for i in range(len(pool))]
    assert len(set(ours)) == len(ours) and set(ours) == opencv_tilted_features(width, height)
    assert pool.tilted.all()
    both = haar_feature_pool(width, height, ALL_FEATURE_TYPES)
    assert len(both) == len(haar_feature_pool(width, height)) + len(pool)
    assert not both.tilted[:len(haar_feature_pool(width, height))].any()


def test_a_tilted_rectangle_sums_its_area_and_a_tilted_feature_of_a_flat_window_is_zero():
    pool = haar_feature_pool(19, 19, TILTED_TYPES)
    flat = np.full((1, 19, 19), 7, np.uint8)
    values = feature_matrix(flat, pool, normalize=False, progress=False)
    assert not values.any()
    whole = pool.subset(np.arange(0, len(pool), 37))
    rects = np.zeros_like(whole.rects)
    rects[:, 0] = whole.rects[:, 0]       # each feature's outer rectangle alone, weight 1
    weights = np.zeros_like(whole.weights)
    weights[:, 0] = 1.0
    one_rect = type(whole)(19, 19, rects, weights, np.ones(len(whole), np.int8), whole.types)
    sums = feature_matrix(flat, one_rect, normalize=False, progress=False)[0]
    np.testing.assert_array_equal(sums, 7 * 2 * whole.rects[:, 0, 2] * whole.rects[:, 0, 3])


def test_the_feature_matrix_equals_the_scanners_arithmetic():
    from facedetect.detector._model import haar_values
    pool = haar_feature_pool(19, 19, ALL_FEATURE_TYPES)
    rng = np.random.default_rng(0)
    picked = np.sort(rng.choice(len(pool), 3000, replace=False))
    windows = rng.integers(0, 256, (40, 19, 19)).astype(np.uint8)
    subset = pool.subset(picked)
    matrix = feature_matrix(windows, subset, progress=False)
    direct = haar_values(windows, [subset.feature(i) for i in range(len(subset))], (19, 19),
                         tilted=subset.tilted)
    assert subset.tilted.any() and not subset.tilted.all()
    np.testing.assert_array_equal(matrix, direct)


@pytest.fixture(scope="module")
def tilted_model(small_cbcl):
    from facedetect.data import load_cbcl
    from facedetect.pipeline._train import train_detector
    model = train_detector(plain_config((1, 1), 60, tilted=True), load_cbcl(small_cbcl),
                           progress=False).model
    assert model.tilted.sum() >= 5, "too few tilted stumps to test them"
    return model


@pytest.fixture(scope="module")
def astronaut():
    from skimage import data

    from facedetect.images import to_grey
    return to_grey(Image.fromarray(data.astronaut()))


@pytest.mark.parametrize("step", [1, 2])
def test_the_scan_of_a_tilted_model_equals_scoring_every_cut_out_window(tilted_model,
                                                                        astronaut, step):
    from facedetect.detector._scan import LevelScanner
    level = cv2.resize(astronaut, (120, 120), interpolation=cv2.INTER_AREA)
    shape = tilted_model.window[::-1]
    patches = np.lib.stride_tricks.sliding_window_view(level, shape)[::step, ::step]
    expected = tilted_model.decision_function(patches.reshape(-1, *shape))
    expected = expected.reshape(patches.shape[:2])
    threshold = float(np.quantile(expected, 0.8))
    rows, cols = np.nonzero(expected > threshold)
    for wide in (False, True):   # int32 OpenCV integrals, and the int64 ones of huge strips
        from facedetect.detector import _scan as scan_module
        limit = scan_module.INT32_PIXELS
        scan_module.INT32_PIXELS = 0 if wide else limit
        try:
            xs, ys, scores = LevelScanner(tilted_model, threshold, pruning=False).scan(
                level, step=step)
        finally:
            scan_module.INT32_PIXELS = limit
        np.testing.assert_array_equal(np.sort(ys * 10_000 + xs),
                                      np.sort(rows * step * 10_000 + cols * step))
        got = dict(zip(zip(ys // step, xs // step), scores))
        assert all(got[(r, c)] == expected[r, c] for r, c in zip(rows, cols))


def test_opencv_runs_the_exported_tilted_model_as_we_do(tilted_model, cbcl, tmp_path):
    from facedetect.detector._export import cascade_xml
    path = tmp_path / "tilted.xml"
    path.write_text(cascade_xml(tilted_model, 0.0))
    assert "<tilted>1</tilted>" in path.read_text()
    opencv = cv2.CascadeClassifier(str(path))
    assert not opencv.empty()
    windows = cbcl.images[np.random.default_rng(3).choice(len(cbcl.images), 3000,
                                                           replace=False)]
    ours = tilted_model.decision_function(windows) > 0
    theirs = np.array([len(opencv.detectMultiScale(w, 1.5, 0, minSize=(19, 19),
                                                   maxSize=(19, 19))) > 0 for w in windows])
    assert ours.sum() > 300 and (~ours).sum() > 300
    assert np.mean(ours == theirs) >= 0.999


def test_a_tilted_model_file_round_trips_and_its_tilted_marks_are_checked(tilted_model,
                                                                          tmp_path):
    from facedetect.detector._model import HaarDetectorModel
    copy_back = HaarDetectorModel.load(tilted_model.save(tmp_path / "t.json"))
    np.testing.assert_array_equal(copy_back.tilted, tilted_model.tilted)
    document = copy.deepcopy(tilted_model.document)
    document["features"]["tilted"] = document["features"]["tilted"][:-1]
    with pytest.raises(FacedetectError, match="tilted"):
        check_document(reseal(document), "t.json")
    document = copy.deepcopy(tilted_model.document)
    at = int(np.flatnonzero(tilted_model.tilted)[0])
    document["features"]["rects"][at][0][0] = 0       # its left corner leaves the window
    with pytest.raises(FacedetectError, match="outside the window"):
        check_document(reseal(document), "t.json")


def test_the_tilted_flag_and_field_agree():
    from facedetect.cli._main import build_parser
    from facedetect.pipeline._config import TrainConfig, check_config
    parser = build_parser()
    for flags, expected in (([], None), (["--tilted"], True), (["--no-tilted"], False)):
        assert parser.parse_args(["train", *flags]).tilted is expected
    with pytest.raises(FacedetectError, match="tilted"):
        check_config(TrainConfig(tilted="yes"))


def test_a_staged_tilted_model_keeps_each_stumps_tilt(tilted_model, astronaut):
    # The OpenCV export's stages repeat the first stumps (cumulative stages): each copy
    # keeps its feature's tilt, and the staged model scans as its windows score.
    from facedetect.detector._scan import LevelScanner
    from facedetect.detector._staging import staged_model
    level = cv2.resize(astronaut, (90, 90), interpolation=cv2.INTER_AREA)
    shape = tilted_model.window[::-1]
    patches = np.lib.stride_tricks.sliding_window_view(level, shape).reshape(-1, *shape)
    threshold = float(np.quantile(tilted_model.decision_function(patches), 0.9))
    staged = staged_model(tilted_model, threshold, cuts=(4, 8))
    order = np.concatenate([np.arange(4), np.arange(8), np.arange(tilted_model.n_stumps)])
    np.testing.assert_array_equal(staged.tilted, tilted_model.tilted[order])
    expected = staged.decision_function(patches)
    xs, ys, scores = LevelScanner(staged, threshold, pruning=False).scan(level, step=1)
    assert len(scores) == int((expected > threshold).sum()) > 0
    np.testing.assert_array_equal(np.sort(scores), np.sort(expected[expected > threshold]))
