"""The scanner: windows scored in place and against brute force, strips, threads, pyramid levels."""

import cv2
import numpy as np
import pytest
from PIL import Image

from facedetect.detector import _multiscale as detect_module
from facedetect.detector._multiscale import DetectionParams, detect_faces, scan_raw
from facedetect.detector._image_evaluation import iou_matrix
from facedetect.images import to_grey
from facedetect.detector._model import HaarDetectorModel
from facedetect.detector import _scan as scan_module
from facedetect.detector._scan import LevelScanner
from facedetect.detector._api import shipped_model_path

# The fixtures below are shared: test_detector_rejection.py, test_detector_export.py and
# test_detector_cli.py bind them to their own names (an import would read as unused).


@pytest.fixture(scope="module")
def model():
    return HaarDetectorModel.load(shipped_model_path())


@pytest.fixture(scope="module")
def haar_model():
    """The shipped Haar model: what export-opencv writes for the default."""
    return HaarDetectorModel.load(shipped_model_path("haar"))


@pytest.fixture(scope="module")
def seen(model, cbcl):
    """CBCL's windows as the shipped model sees them: its window and framing."""
    from facedetect.data._cbcl import framed_windows
    return framed_windows(cbcl.images, cbcl.labels, model.window,
                          model.framing)


@pytest.fixture(scope="module")
def astronaut():
    from skimage import data
    return to_grey(Image.fromarray(data.astronaut()))


def test_cbcl_patch_scanned_in_place_scores_as_in_training(model, seen):
    rng = np.random.default_rng(0)
    width, height = model.window
    for index in (0, 5, 2500, 6000):
        patch = seen[index]
        canvas = rng.integers(0, 256, (height + 21, width + 31)).astype(np.uint8)
        canvas[11:11 + height, 7:7 + width] = patch
        scanner = LevelScanner(model, threshold=-np.inf, early_rejection=False)
        xs, ys, scores = scanner.scan(canvas, step=1)
        at = np.flatnonzero((xs == 7) & (ys == 11))
        assert scores[at[0]] == model.decision_function(patch[None])[0]


@pytest.mark.parametrize("step", [1, 2, 3])
@pytest.mark.parametrize("threshold", [-10.0, 5.0])
def test_scan_equals_scoring_every_cut_out_window(model, astronaut, step, threshold):
    """Oracle: the kernel (with its exact early rejection) accepts exactly the windows whose
    cut-out patch the model scores above the threshold, with the same scores."""
    level = cv2.resize(astronaut, (128, 128), interpolation=cv2.INTER_AREA)  # face ~24 px
    shape = model.window[::-1]
    patches = np.lib.stride_tricks.sliding_window_view(level, shape)[::step, ::step]
    expected = model.decision_function(patches.reshape(-1, *shape)).reshape(patches.shape[:2])
    rows, cols = np.nonzero(expected > threshold)
    xs, ys, scores = LevelScanner(model, threshold, pruning=False).scan(level, step=step)
    assert len(rows) > 0
    np.testing.assert_array_equal(np.sort(ys * 10_000 + xs),
                                  np.sort(rows * step * 10_000 + cols * step))
    got = dict(zip(zip(ys // step, xs // step), scores))
    assert all(got[(r, c)] == expected[r, c] for r, c in zip(rows, cols))


def test_int64_integral_images_give_the_same_windows(model, astronaut, monkeypatch):
    """Oracle for OpenCV's integral images (int32 sums, float64 squared sums): the int64
    kernel that a strip too large for int32 sums falls back to."""
    level = cv2.resize(astronaut, (160, 160), interpolation=cv2.INTER_AREA)
    scanner = LevelScanner(model, -5.0)
    usual = scanner.scan(level, step=1)
    monkeypatch.setattr(scan_module.cv2, "integral2", None)   # any call would fail
    monkeypatch.setattr(scan_module, "INT32_PIXELS", 0)
    wide = LevelScanner(model, -5.0).scan(level, step=1)
    assert len(usual[0]) > 0
    for a, b in zip(usual, wide):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("which", ["model", "haar_model"])
@pytest.mark.parametrize("wide", [False, True])
def test_int32_rectangle_sums_change_no_score(which, wide, astronaut, monkeypatch, request):
    """The dense rows sum rectangles in int32 where a window's sums fit (two's complement
    wraps back, so the sums are exact); the int64 sums, which a window too large for
    that takes, give the same scores on either integral image's type."""
    chosen = request.getfixturevalue(which)
    level = cv2.resize(astronaut, (150, 140), interpolation=cv2.INTER_AREA)
    if wide:
        monkeypatch.setattr(scan_module, "INT32_PIXELS", 0)
    found = []
    for narrow in (True, False):
        scanner = LevelScanner(chosen, -5.0)
        scanner.narrow_sums = narrow
        assert scanner._kernel_window()[4] is narrow
        found.append([scanner.scan(level, step=step) for step in (1, 2, "refine")])
    assert sum(len(xs) for xs, _, _ in found[0]) > 0
    for a, b in zip(*found):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("pruning, coarse_below", [(False, None), (True, None), (False, 0.0),
                                                   (True, 4.0)])
@pytest.mark.parametrize("coarse_step", [2, 3])
def test_refined_scan_is_the_step_1_scan_near_promising_coarse_windows(
        model, astronaut, pruning, coarse_below, coarse_step, monkeypatch):
    """Oracle from the full step-1 score map: a refined scan returns exactly the windows
    above the threshold that are on the coarse grid or within ``REFINE_STEP - 1`` of a
    coarse window above the coarse threshold (by default REFINE_MARGIN below the
    threshold; lower or equal under a neighbour margin), with the same scores; strips do
    not change that. The shipped step is 2; 3 is the lever a probe measured
    (notebook-2026-12:benchmarks/refine_step.py)."""
    from facedetect.detector._scan import REFINE_MARGIN
    monkeypatch.setattr(scan_module, "REFINE_STEP", coarse_step)
    reach = coarse_step - 1
    # Below 0 the shipped model's windows are dense enough for the coarse threshold to
    # matter (checked at the end).
    threshold = 0.0 if coarse_below is None else -10.0
    coarse_threshold = threshold - (REFINE_MARGIN if coarse_below is None else coarse_below)
    level = cv2.resize(astronaut, (160, 150), interpolation=cv2.INTER_AREA)
    every = LevelScanner(model, -np.inf, early_rejection=False)
    xs, ys, scores = every.scan(level, step=1)
    grid = np.full((ys.max() + 1, xs.max() + 1), -np.inf)
    grid[ys, xs] = scores
    coarse = np.full(grid.shape, -np.inf)
    coarse[::coarse_step, ::coarse_step] = grid[::coarse_step, ::coarse_step]

    def near(above):
        promising = np.pad(coarse > above, reach)
        found = np.zeros(grid.shape, bool)
        for dy in range(2 * reach + 1):
            for dx in range(2 * reach + 1):
                found |= promising[dy:dy + grid.shape[0], dx:dx + grid.shape[1]]
        return found

    expected = (grid > threshold) & near(coarse_threshold)
    if coarse_below is not None:  # the test can tell the coarse threshold was used
        assert expected.sum() < ((grid > threshold) & near(threshold - REFINE_MARGIN)).sum()
    scanner = LevelScanner(model, threshold, pruning=pruning,
                           coarse_threshold=None if coarse_below is None else coarse_threshold)
    for strip in (None, 7, 8):
        rows = range(0, grid.shape[0], strip or grid.shape[0])
        found = [scanner.scan(level, "refine", row, row + (strip or grid.shape[0]))
                 for row in rows]
        rx, ry, rs = (np.concatenate([f[k] for f in found]) for k in range(3))
        got = np.zeros(grid.shape, bool)
        got[ry, rx] = True
        assert len(rx) == got.sum()  # no window twice
        if pruning:  # learnt rejection may drop windows, never add or change one
            assert not (got & ~expected).any()
        else:
            np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(rs, grid[ry, rx])
    assert expected.sum() > 10 and (expected & ~(coarse > -np.inf)).any()


def test_strips_give_the_same_windows(model, astronaut, monkeypatch):
    params = DetectionParams(threshold=0.0, scale_factor=1.3)
    whole = scan_raw(astronaut, LevelScanner(model, 0.0), params)
    monkeypatch.setattr(detect_module, "STRIP_ROWS", 7)
    strips = scan_raw(astronaut, LevelScanner(model, 0.0), params)
    # the same windows, in any order (a window two levels share sorts by its score too)
    order_a = np.lexsort(np.c_[whole[0], whole[1]].T)
    order_b = np.lexsort(np.c_[strips[0], strips[1]].T)
    np.testing.assert_array_equal(whole[0][order_a], strips[0][order_b])
    np.testing.assert_array_equal(whole[1][order_a], strips[1][order_b])


def test_serial_and_parallel_scans_give_identical_windows(astronaut, monkeypatch):
    from facedetect.detector import _scan as scan
    from facedetect.detector._multiscale import DetectionParams, scan_raw, scanner_for
    from facedetect.detector._api import load_model
    model = load_model(None)
    results = []
    for limit in (0, 10 ** 12):   # every call parallel, then every call serial
        monkeypatch.setattr(scan, "PARALLEL_MIN_WINDOWS", limit)
        for step in ("refine", 2):
            params = DetectionParams(step=step, threshold=-4.0)
            results.append(scan_raw(astronaut, scanner_for(model, params), params))
    for parallel, serial in zip(results[:2], results[2:]):
        np.testing.assert_array_equal(parallel[0], serial[0])
        assert parallel[1].tobytes() == serial[1].tobytes() and len(parallel[1]) > 100


@pytest.mark.skipif(__import__("numba").config.NUMBA_NUM_THREADS < 2,
                    reason="numba has one thread here")
def test_detections_are_identical_across_thread_counts(model, astronaut):
    import numba
    before = numba.get_num_threads()
    try:
        found = []
        for threads in (1, 2):
            numba.set_num_threads(threads)
            result = detect_faces(astronaut, model)
            found.append((np.asarray(result.boxes).tolist(), np.asarray(result.scores).tolist()))
    finally:
        numba.set_num_threads(before)
    assert found[0] == found[1] and found[0][0]


def test_astronaut_face_is_found(model, astronaut):
    found = detect_faces(astronaut, model)
    opencv_face = np.array([[177, 66, 95, 95]])  # haarcascade_frontalface_default's box
    assert len(found.boxes) >= 1
    assert iou_matrix(found.boxes, opencv_face).max() > 0.4


def test_a_wide_window_scans_a_wide_image_on_every_level_that_fits():
    from facedetect.detector._multiscale import pyramid_scales
    params = DetectionParams(scale_factor=1.5, min_size=30)
    scales = pyramid_scales(300, 40, (30, 10), params)
    # brute force: every scale of the geometric series whose window fits both sides
    expected = [1.5 ** k for k in range(20) if 30 * 1.5 ** k <= 300 and 10 * 1.5 ** k <= 40]
    np.testing.assert_allclose(scales, expected)
    assert len(scales) == 4      # comparing the longer side with the shorter gave 1


def test_pyramid_scales_and_steps():
    from facedetect.detector._multiscale import pyramid_scales, step_at
    params = DetectionParams(scale_factor=1.25, min_size=24)
    scales = pyramid_scales(100, 80, 19, params)
    assert scales[0] == pytest.approx(1.25 ** 2) and 19 * scales[-1] <= 80
    assert all(b / a == pytest.approx(1.25) for a, b in zip(scales, scales[1:]))
    # Below the window: enlarged levels, never more than twice.
    assert pyramid_scales(100, 80, 19, DetectionParams(min_size=15))[0] == \
        pytest.approx(15 / 19)
    assert pyramid_scales(100, 80, 19, DetectionParams(min_size=2))[0] == 0.5
    auto = DetectionParams(step="auto")
    assert [step_at(s, auto) for s in (1.0, 2.0, 2.1)] == [2, 2, 1]
    assert step_at(3.0, DetectionParams(step=3)) == 3


def test_small_faces_are_found_on_enlarged_levels(model, astronaut):
    # At 100 px the face box is about 30 px: a window below the trained one (19x19 at
    # BOX_SCALE 2 gives boxes of at least 38; the 24x24 model's derived box scale the
    # same). Only enlarged levels give the face's own smaller box.
    side, box_scale = model.window[0], detect_module.box_mapping(model)[0]
    smallest = side * box_scale
    small = cv2.resize(astronaut, (100, 100), interpolation=cv2.INTER_AREA)
    params = DetectionParams(min_size=side, min_neighbors=2)
    assert all(w >= smallest - 1e-6 for _, _, w, _ in detect_faces(small, model, params).boxes)
    params.min_size = round(side * 12 / 19)
    found = detect_faces(small, model, params)
    assert any(abs(x + w / 2 - 43) < 6 and abs(y + h / 2 - 26) < 6 and w < smallest
               for x, y, w, h in found.boxes)


def test_window_to_box_mapping():
    box = detect_module.window_to_box(np.array([[10, 20, 19, 19]]), scale=2.0, shift=0.1)
    # centre (19.5, 29.5 + 0.1 * 19 = 31.4), side 38
    np.testing.assert_allclose(box, [[0.5, 12.4, 38, 38]])
