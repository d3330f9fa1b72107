"""The scanner, grouping, images, export to OpenCV, and the detect command."""

import json
import subprocess
import sys

import cv2
import numpy as np
import pytest
from PIL import Image

from facedetect.detector import _multiscale as detect_module
from facedetect.detector._multiscale import DetectionParams, detect_faces, scan_raw
from facedetect.detector._image_evaluation import (ImageResult, evaluation_images, iou_matrix,
                                                 match, read_annotations, summarize)
from facedetect.detector._export import cascade_xml, opencv_rects, opencv_threshold
from facedetect.detector._grouping import group_rectangles
from facedetect.images import read_grey, to_grey
from facedetect.detector._model import HaarDetectorModel
from facedetect.detector import _scan as scan_module
from facedetect.detector._scan import LevelScanner
from facedetect.errors import FacedetectError
from facedetect.detector._api import shipped_model_path

from .conftest import needs_data


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
    not change that. The shipped step is 2; 3 is the lever benchmarks/refine_step.py
    measures."""
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


@pytest.mark.slow
@pytest.mark.parametrize("threshold", [0.0, 5.0, -20.0])
def test_early_rejection_changes_no_decision(model, astronaut, threshold):
    exact = LevelScanner(model, threshold, early_rejection=False)
    fast = LevelScanner(model, threshold, pruning=False)
    level = astronaut
    full = exact.scan(level, step=1)
    early = fast.scan(level, step=1)
    for a, b in zip(full, early):
        np.testing.assert_array_equal(a, b)
    assert len(full[0]) > 0


@pytest.mark.parametrize("threshold", [-10.0, -15.0])
def test_pruning_keeps_every_training_face_and_only_drops_windows(model, cbcl, seen,
                                                                  astronaut, threshold):
    """Learnt rejection (pruning) on faces it was learnt from loses none of those the full
    model accepts; on an image it keeps a subset of the exact windows, with equal scores."""
    faces = seen[cbcl.labels == 1][::7]
    pruned_model = model.with_rejection(faces, reference=-20.0)
    exact = LevelScanner(pruned_model, threshold, pruning=False)
    pruned = LevelScanner(pruned_model, threshold)
    assert np.any(pruned.reject_at > exact.reject_at)
    for face in faces:
        accepted = exact.scan(face)[2]
        np.testing.assert_array_equal(pruned.scan(face)[2], accepted)
    full = exact.scan(astronaut, step=2)
    kept = pruned.scan(astronaut, step=2)
    window = dict(zip(zip(full[0], full[1]), full[2]))
    assert all(window[(x, y)] == score for x, y, score in zip(*kept))
    assert len(kept[0]) < len(full[0])


def test_soft_rejection_loses_at_most_its_budget_of_the_faces_above_the_threshold(model,
                                                                                   cbcl, seen):
    """Oracle (brute force): the recorded loss is the share of the faces scoring above the
    threshold whose running score falls under a level somewhere; it is within budget, the
    next bolder quantile is not, budget 0 is the minimum (direct backward pruning), and
    the scanner drops exactly the faces the levels say."""
    from facedetect.detector._pruning import QUANTILES
    faces = seen[cbcl.labels == 1]
    scores = model.running_scores(faces)
    threshold = float(np.quantile(scores[:, -1], 0.3))
    above = scores[scores[:, -1] > threshold]
    exact = model.with_rejection(faces).rejection[1]
    assert np.array_equal(model.with_rejection(faces, threshold=threshold, max_loss=0.0)
                          .rejection[1], exact)
    soft = model.with_rejection(faces, threshold=threshold, max_loss=0.01)
    record = soft.detection["rejection"]
    levels = np.array(record["thresholds"])
    lost = (above < levels).any(axis=1)
    assert record["loss"] == pytest.approx(lost.mean(), abs=1e-6) and lost.mean() <= 0.01
    assert record["quantile"] > 0 and np.all(levels >= exact)
    bolder = QUANTILES[QUANTILES.index(record["quantile"]) - 1]
    kept = scores[:, -1] > 0.0
    bolder_levels = np.quantile(scores[kept], bolder, axis=0)
    if record["quantile"] != QUANTILES[0]:
        assert (above < bolder_levels).any(axis=1).mean() > 0.01
    scanner = LevelScanner(soft, threshold)
    accepted = np.array([len(scanner.scan(face)[2]) == 1 for face in faces])
    should = (scores[:, -1] > threshold) & ~(scores < levels).any(axis=1)
    np.testing.assert_array_equal(accepted, should)


def test_soft_rejection_takes_the_first_quantile_within_budget_as_a_linear_scan_does(model,
                                                                                     cbcl, seen):
    """Oracle (brute force): the bisection over ``QUANTILES`` picks the quantile a scan from
    the boldest down picks, for several budgets, with that quantile's levels and loss."""
    from facedetect.detector._pruning import QUANTILES, soft_rejection_thresholds
    faces = seen[cbcl.labels == 1]
    scores = model.running_scores(faces)
    threshold = float(np.quantile(scores[:, -1], 0.3))
    setting = scores[scores[:, -1] > 0.0]
    above = scores[scores[:, -1] > threshold]
    margin = 1e-9 * float(np.sum(model.alphas))
    losses = [float((above < np.quantile(setting, q, axis=0) - margin).any(axis=1).mean())
              for q in QUANTILES]
    for budget in (0.0, 0.003, 0.01, 0.02, 0.05, 0.5):
        first = next(k for k, loss in enumerate(losses) if loss <= budget)
        levels, quantile, loss = soft_rejection_thresholds(model, faces, threshold, budget)
        assert quantile == QUANTILES[first] and loss == pytest.approx(losses[first])
        np.testing.assert_allclose(
            levels, np.quantile(setting, QUANTILES[first], axis=0) - margin, rtol=0, atol=1e-9)
    # no face above the threshold: no loss to count, so no levels (not the boldest)
    above_all = float(scores[:, -1].max())
    assert soft_rejection_thresholds(model, faces, above_all, 0.04) is None
    assert model.with_rejection(faces, threshold=above_all, max_loss=0.04) is model


def test_lower_thresholds_still_admit_more_windows_with_pruning(model, astronaut):
    """Below the training faces' lowest final score the learnt levels move down with the
    threshold, so the threshold keeps its meaning."""
    lowest_face = model.rejection[1][-1]
    counts = []
    for threshold in (lowest_face + 5, lowest_face - 5, lowest_face - 15):
        params = DetectionParams(threshold=threshold, scale_factor=1.3)
        counts.append(len(scan_raw(astronaut, LevelScanner(model, threshold), params)[0]))
    assert counts[0] < counts[1] < counts[2]


def test_learnt_levels_move_down_in_proportion_to_the_alpha_spent(model):
    from facedetect.detector._scan import reject_levels
    learnt = model.rejection[1]
    spent = np.cumsum(model.alphas) / model.alphas.sum()
    # Below the last learnt level, and below the levels' reference as well (a refined
    # scan's coarse pass runs there): moved down by the gap times the alpha spent.
    for gap in (8.0, learnt[-1] - model.rejection[0] + 3.0):
        below = learnt[-1] - gap
        levels = reject_levels(model, below)
        exact = reject_levels(model, below, pruning=False)
        np.testing.assert_allclose(levels, np.maximum(exact, learnt - gap * spent))
        assert levels[-1] == pytest.approx(below) and np.any(levels > exact)
    np.testing.assert_array_equal(reject_levels(model, learnt[-1] + 1.0),
                                  np.maximum(reject_levels(model, learnt[-1] + 1.0,
                                                           pruning=False), learnt))


def test_rejection_thresholds_round_trip_and_are_validated(model, cbcl, seen, tmp_path):
    pruned = model.with_rejection(seen[cbcl.labels == 1][:50])
    path = pruned.save(tmp_path / "m.json")
    loaded = HaarDetectorModel.load(path)
    np.testing.assert_array_equal(loaded.rejection[1], pruned.rejection[1])
    document = json.loads(path.read_text())
    document["detection"]["rejection"]["thresholds"] = [1.0]
    from facedetect.modelfile._io import reseal
    path.write_text(json.dumps(reseal(document)))
    with pytest.raises(Exception, match="rejection"):
        HaarDetectorModel.load(path)


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


def test_grouping_equals_opencv():
    rng = np.random.default_rng(3)
    for _ in range(150):
        centres = rng.integers(0, 300, (rng.integers(1, 5), 2))
        rects = np.array([[*(centres[rng.integers(len(centres))] + rng.integers(-6, 7, 2)),
                           s, s] for s in rng.integers(19, 70, rng.integers(1, 50))])
        for neighbors in (1, 3, 5):
            ours, _, _ = group_rectangles(rects, np.zeros(len(rects)), neighbors)
            theirs, _ = cv2.groupRectangles(rects.tolist(), neighbors, 0.2)
            np.testing.assert_array_equal(ours, np.asarray(theirs).reshape(-1, 4))


@pytest.mark.parametrize("seed", range(4))
def test_grouping_equals_opencv_on_crowded_rectangles_of_any_shape(seed):
    # Thousands of windows, widths and heights drawn apart, spread over many size buckets:
    # the k-d tree candidates must still give exactly OpenCV's groups.
    rng = np.random.default_rng(seed)
    n = 3000
    centres = rng.integers(0, 400, (40, 2))
    sizes = rng.integers(5, 120, (n, 2))
    rects = np.column_stack([centres[rng.integers(0, 40, n)] + rng.integers(-8, 9, (n, 2)),
                             sizes])
    for neighbors in (1, 4):
        ours, _, _ = group_rectangles(rects, np.zeros(n), neighbors)
        theirs, _ = cv2.groupRectangles(rects.tolist(), neighbors, 0.2)
        np.testing.assert_array_equal(ours, np.asarray(theirs).reshape(-1, 4))


def test_grouping_keeps_the_best_score():
    rects = np.array([[10, 10, 20, 20], [11, 10, 20, 20], [10, 11, 20, 20], [100, 100, 20, 20]])
    boxes, scores, counts = group_rectangles(rects, [1.0, 5.0, 2.0, 9.0], min_neighbors=2)
    assert boxes.tolist() == [[10, 10, 20, 20]] and scores.tolist() == [5.0]
    assert counts.tolist() == [3]


def test_hysteresis_grouping_counts_near_misses_as_support():
    from facedetect.detector._multiscale import group_detections
    # A face: one window above the threshold, four near misses around it. Texture: four
    # windows just under the threshold, none above. A lone strong window: no support.
    face = [[10, 10, 20, 20], [11, 10, 20, 20], [10, 11, 20, 20], [9, 10, 20, 20],
            [10, 9, 20, 20]]
    texture = [[100, 100, 20, 20], [101, 100, 20, 20], [100, 101, 20, 20], [99, 100, 20, 20]]
    rects = np.array(face + texture + [[200, 200, 20, 20]])
    scores = np.array([12.0, 8.0, 7.0, 6.0, 5.0, 9.5, 9.5, 9.5, 9.5, 30.0])
    windows, best, counts = group_detections(rects, scores, 10.0, 3, neighbor_margin=8.0)
    assert windows.tolist() == [[10, 10, 20, 20]]
    assert best.tolist() == [12.0] and counts.tolist() == [5]
    # Margin 0 is OpenCV's rule: the face's one window above 10 has no neighbours.
    assert len(group_detections(rects, scores, 10.0, 3, neighbor_margin=0.0)[0]) == 0
    # With no grouping the windows above the threshold come back as they are.
    ungrouped, _, _ = group_detections(rects, scores, 10.0, 0, neighbor_margin=8.0)
    assert ungrouped.tolist() == [[10, 10, 20, 20], [200, 200, 20, 20]]


def test_zero_margin_grouping_is_group_rectangles_above_the_threshold():
    from facedetect.detector._multiscale import group_detections
    rng = np.random.default_rng(5)
    for _ in range(50):
        rects = np.column_stack([rng.integers(0, 80, (40, 2)),
                                 np.repeat(rng.integers(19, 40, (40, 1)), 2, axis=1)])
        scores = rng.normal(10, 5, 40)
        for neighbors in (0, 1, 3):
            ours = group_detections(rects, scores, 10.0, neighbors, 0.0)
            keep = scores > 10.0
            plain = group_rectangles(rects[keep], scores[keep], neighbors)
            for a, b in zip(ours, plain):
                np.testing.assert_array_equal(a, b)


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


def test_iou_and_one_to_one_matching_hand_computed():
    assert iou_matrix([[0, 0, 10, 10]], [[5, 0, 10, 10]])[0, 0] == pytest.approx(50 / 150)
    truth = np.array([[0, 0, 10, 10], [100, 100, 10, 10]])
    detections = np.array([[0, 0, 10, 10], [1, 0, 10, 10], [100, 101, 10, 10]])
    # Two detections on the first face: only one may count.
    assert match(detections, np.array([3.0, 2.0, 1.0]), truth) == 2


def test_read_annotations(tmp_path):
    path = tmp_path / "b.txt"
    path.write_text("a.gif 1 2 11 22\na.gif 5 5 6 6\nb.gif 0 0 3 4\n")
    boxes = read_annotations(path)
    assert boxes["a.gif"].tolist() == [[1, 2, 10, 20], [5, 5, 1, 1]]


def test_unannotated_images_are_face_free_and_their_detections_false_positives(tmp_path):
    for name in ("a.png", "b.png"):
        Image.new("L", (40, 40)).save(tmp_path / name)
    faces = {"a.png": np.array([[0.0, 0.0, 38.0, 38.0]])}
    images = evaluation_images(tmp_path, faces)
    assert [(path.name, len(truth)) for path, truth in images] == [("a.png", 1), ("b.png", 0)]
    # One window on each image, both mapped (x2 side, shifted down 0.1) onto a's face box.
    window = np.array([[9, 7, 19, 19]])
    results = [ImageResult(path.name, window, np.array([50.0]), truth, 0.0)
               for path, truth in images]
    assert summarize(results, 30.0, 0, 2.0, 0.1) == (1, 1, 1)
    with pytest.raises(FacedetectError, match="no image for 1"):
        evaluation_images(tmp_path, dict(faces, **{"c.png": faces["a.png"]}))


# --- images -------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["L", "RGB", "RGBA", "P", "I;16", "1"])
@pytest.mark.parametrize("suffix", [".png", ".bmp", ".tiff", ".gif", ".jpg", ".pgm"])
def test_image_formats_and_modes(tmp_path, mode, suffix):
    grey = np.tile(np.arange(0, 250, 10, dtype=np.uint8), (20, 1))
    image = Image.fromarray(grey)
    if mode == "I;16":
        if suffix not in (".png", ".tiff", ".pgm"):
            pytest.skip("format has no 16-bit grey")
        image = Image.fromarray(grey.astype(np.uint16) * 257)
    elif mode == "RGBA":
        if suffix in (".jpg", ".bmp", ".pgm", ".gif"):
            pytest.skip("format has no alpha")
        image = image.convert("RGBA")
    elif mode != "L":
        if suffix == ".pgm" or (suffix == ".jpg" and mode in ("P", "1")):
            pytest.skip("format cannot hold this mode")
        image = image.convert(mode)
    path = tmp_path / f"img{suffix}"
    image.save(path)
    read = read_grey(path)
    assert read.shape == (20, 25) and read.dtype == np.uint8
    if mode in ("L", "I;16", "RGB", "RGBA") and suffix != ".jpg":
        np.testing.assert_array_equal(read, grey)


def test_exif_orientation_is_honoured(tmp_path):
    grey = np.zeros((10, 30), np.uint8)
    grey[:, :5] = 255
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display
    Image.fromarray(grey).save(tmp_path / "r.jpg", exif=exif)
    upright = read_grey(tmp_path / "r.jpg")
    assert upright.shape == (30, 10)
    assert upright[:5].mean() > 200 and upright[-5:].mean() < 50


# --- export to OpenCV -----------------------------------------------------------------------

def test_threshold_nudge_makes_comparisons_agree():
    rng = np.random.default_rng(0)
    values = rng.normal(size=10_000).astype(np.float32)
    for threshold in rng.normal(size=50):
        t = opencv_threshold(threshold)
        assert np.array_equal(values > threshold, values >= t)
    assert opencv_threshold(float(values[3])) > values[3]


def test_checkerboard_becomes_three_rectangles():
    rects = [(2, 3, 4, 5, -1.0), (6, 3, 4, 5, 1.0), (6, 8, 4, 5, -1.0), (2, 8, 4, 5, 1.0)]
    assert opencv_rects(rects) == [(2, 3, 8, 10, 1.0), (2, 3, 4, 5, -2.0), (6, 8, 4, 5, -2.0)]


def test_exported_cascade_agrees_with_us_per_window(haar_model, seen, tmp_path):
    model = haar_model
    path = tmp_path / "cascade.xml"
    path.write_text(cascade_xml(model, 0.0))
    cascade = cv2.CascadeClassifier(str(path))
    assert not cascade.empty()
    rng = np.random.default_rng(1)
    windows = seen[rng.choice(len(seen), 5000, replace=False)]
    ours = model.decision_function(windows) > 0
    theirs = np.array([len(cascade.detectMultiScale(w, 1.5, 0, minSize=model.window,
                                                    maxSize=model.window)) > 0
                       for w in windows])
    assert ours.sum() > 500 and (~ours).sum() > 500
    assert np.mean(ours == theirs) >= 0.999


def test_exported_cascade_finds_the_astronaut(haar_model, astronaut, tmp_path):
    model = haar_model
    path = tmp_path / "cascade.xml"
    path.write_text(cascade_xml(model, DetectionParams().threshold))
    cascade = cv2.CascadeClassifier(str(path))
    boxes = cascade.detectMultiScale(astronaut, 1.1, 5, minSize=(19, 19))
    assert len(boxes) >= 1
    # the model's own box mapping, as export-opencv prints it for OpenCV users
    faces = detect_module.window_to_box(np.asarray(boxes), model.detection["box_scale"],
                                        model.detection["box_shift"])
    assert iou_matrix(faces, [[177, 66, 95, 95]]).max() > 0.4


# --- the command ---------------------------------------------------------------------------

def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "facedetect", *args], capture_output=True,
                          text=True, timeout=600)


def test_detect_command_on_the_astronaut(tmp_path, astronaut):
    Image.fromarray(astronaut).save(tmp_path / "astronaut.jpg")
    result = run_cli("detect", str(tmp_path / "astronaut.jpg"), "--json", "--output",
                     str(tmp_path / "out.png"))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert len(report) == 1 and len(report[0]["faces"]) >= 1
    with Image.open(tmp_path / "out.png") as annotated:
        assert annotated.size == (512, 512) and annotated.mode == "RGB"


def test_detect_carries_on_past_bad_files(tmp_path, astronaut):
    Image.fromarray(astronaut[:200, :200]).save(tmp_path / "good.png")
    (tmp_path / "corrupt.jpg").write_bytes(b"\xff\xd8\xff\xe0 truncated")
    (tmp_path / "notes.png").write_text("not an image")
    Image.fromarray(np.zeros((10, 10), np.uint8)).save(tmp_path / "tiny.png")
    result = run_cli("detect", str(tmp_path), str(tmp_path / "missing.png"))
    assert result.returncode == 1
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 4
    assert any("tiny.png" in e and "smaller than" in e for e in errors)
    assert any("missing.png" in e for e in errors)
    assert "good.png" in result.stdout


def test_detect_missing_model_is_one_line(tmp_path, astronaut):
    Image.fromarray(astronaut).save(tmp_path / "a.png")
    result = run_cli("detect", str(tmp_path / "a.png"), "--model", str(tmp_path / "none.json"))
    assert result.returncode == 1 and len(result.stderr.strip().splitlines()) == 1


def test_bad_scan_options_are_one_line(tmp_path, astronaut):
    Image.fromarray(astronaut).save(tmp_path / "a.png")
    for flags in (["--neighbor-margin", "-1"], ["--neighbor-margin", "inf"],
                  ["--min-neighbors", "-1"], ["--scale-factor", "1"]):
        result = run_cli("detect", str(tmp_path / "a.png"), *flags)
        assert result.returncode != 0
        assert len(result.stderr.strip().splitlines()) == 1 and flags[0] in result.stderr


def test_export_command_writes_a_loadable_cascade(tmp_path):
    result = run_cli("export-opencv", "default", str(tmp_path / "c.xml"))
    assert result.returncode == 0, result.stderr
    assert not cv2.CascadeClassifier(str(tmp_path / "c.xml")).empty()


def test_evaluate_images_with_opencv_baseline(tmp_path):
    dev = needs_data("mit-cmu-dev", "bboxes.txt")
    names = ("cnn1160.gif", "cnn2600.gif")
    lines = [l for l in (dev / "bboxes.txt").read_text().splitlines() if l.split()[0] in names]
    (tmp_path / "b.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "images").mkdir()
    for name in names:
        (tmp_path / "images" / name).write_bytes((dev / "images" / name).read_bytes())
    result = run_cli("evaluate-images", str(tmp_path / "images"), "--annotations",
                     str(tmp_path / "b.txt"), "--baseline", "opencv", "--json", "--quiet",
                     "--curve", str(tmp_path / "curve"))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    # The same count, found another way: detect each image and match its boxes here.
    model = HaarDetectorModel.load(shipped_model_path())
    truth = read_annotations(tmp_path / "b.txt")
    found = 0
    for name in names:
        detections = detect_faces(read_grey(tmp_path / "images" / name), model,
                                  detect_module.params_for(model))
        found += match(detections.boxes, detections.scores, truth[name])
    assert report["faces"] == 3 and report["found"] == found >= 1
    assert [b["cascade"] for b in report["opencv"]] == [
        "haarcascade_frontalface_default.xml", "haarcascade_frontalface_alt2.xml"]
    assert (tmp_path / "curve.csv").exists() and (tmp_path / "curve.png").exists()


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


@pytest.mark.parametrize("line", ["a.jpg 10 10 5 20", "a.jpg 1 2 nan 4", "a.jpg 1 2 inf 4",
                                  "a.jpg 1 2 3 4 junk", "a.jpg 1 2 3",
                                  "a.jpg -1e308 -1e308 1e308 1e308"])
def test_bad_annotation_lines_are_refused_with_their_number(tmp_path, line):
    path = tmp_path / "boxes.txt"
    path.write_text("ok.jpg 1 2 30 40\n" + line + "\n")
    with pytest.raises(FacedetectError, match=r"boxes.txt:2: expected"):
        read_annotations(path)


def test_duplicate_and_outside_boxes_are_refused(tmp_path):
    path = tmp_path / "boxes.txt"
    path.write_text("a.png 1 2 30 40\nb.png 1 1 9 9\na.png 1 2 30 40\n")
    with pytest.raises(FacedetectError, match="boxes.txt:3: the same box twice for a.png"):
        read_annotations(path)
    from facedetect.detector._image_evaluation import inside_boxes
    # Faces the border cuts are clipped to the image; a box wholly outside is skipped,
    # each with a warning (issue 26: real annotation sets hold such close-ups).
    with pytest.warns(UserWarning, match="wholly outside the 320x240 image; skipped"):
        assert inside_boxes("a.png", np.array([[5000.0, 5000, 1000, 1000]]),
                            (240, 320)).shape == (0, 4)
    with pytest.warns(UserWarning, match="clipped to the image"):
        clipped = inside_boxes("a.png", np.array([[0.0, 0, 1e6, 1e6], [300, 200, 80, 80]]),
                               (240, 320))
    np.testing.assert_array_equal(clipped, [[0, 0, 320, 240], [300, 200, 20, 40]])
    path.write_bytes(b"\xef\xbb\xbfa.png 1 2 30 40\n")   # a byte-order mark
    assert list(read_annotations(path)) == ["a.png"]
    path.write_bytes(b"a.png\x00 1 2 30 40\n")
    with pytest.raises(FacedetectError, match="boxes.txt:1: the image name"):
        read_annotations(path)
    with pytest.raises(FacedetectError, match="not a regular file"):
        read_annotations("/dev/zero")


def test_non_utf8_annotations_are_one_error(tmp_path):
    path = tmp_path / "boxes.txt"
    path.write_bytes(b"\xff\xfe a.jpg 1 2 3 4\n")
    with pytest.raises(FacedetectError, match="not UTF-8"):
        read_annotations(path)


def test_a_declared_giant_is_refused_before_decoding(tmp_path):
    """A tiny PNG whose header declares 100,000 x 100,000 pixels: one line, no decode."""
    import struct
    import zlib

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    header = struct.pack(">IIBBBBB", 100_000, 100_000, 8, 0, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(
        b"IDAT", zlib.compress(b"\x00" * 10)) + chunk(b"IEND", b"")
    path = tmp_path / "bomb.png"
    path.write_bytes(png)
    with pytest.raises(FacedetectError, match="10000 megapixels, above the limit"):
        read_grey(path)
    result = subprocess.run([sys.executable, "-m", "facedetect", "detect", str(path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "--max-pixels" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_grouping_refuses_more_windows_than_its_bound(monkeypatch):
    from facedetect.detector import _grouping as grouping
    monkeypatch.setattr(grouping, "MAX_WINDOWS", 10)
    rects = np.tile([5, 5, 20, 20], (11, 1))
    with pytest.raises(FacedetectError, match="raise it"):
        group_rectangles(rects, np.zeros(11), 2)


def test_tree_pair_search_equals_all_pairs():
    from facedetect.detector._grouping import _similar_pairs
    rng = np.random.default_rng(3)
    rects = np.column_stack([rng.integers(0, 400, 700), rng.integers(0, 300, 700),
                             rng.integers(5, 120, (700, 2))])
    i, j = _similar_pairs(rects, 0.2)
    x, y, w, h = (rects[:, k].astype(float) for k in range(4))
    delta = 0.2 * (np.minimum(w[:, None], w) + np.minimum(h[:, None], h)) * 0.5
    close = ((abs(x[:, None] - x) <= delta) & (abs(y[:, None] - y) <= delta)
             & (abs(x[:, None] + w[:, None] - x - w) <= delta)
             & (abs(y[:, None] + h[:, None] - y - h) <= delta))
    np.fill_diagonal(close, False)
    unordered = lambda a, b: {(min(p, q), max(p, q)) for p, q in zip(a.tolist(), b.tolist())}
    assert unordered(i, j) == unordered(*np.nonzero(close)) and len(i) > 50


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


def test_float_images_with_nan_pixels_are_refused(tmp_path):
    pixels = np.random.default_rng(0).random((40, 40)).astype(np.float32)
    pixels[3, 4] = np.nan
    Image.fromarray(pixels, mode="F").save(tmp_path / "f.tif")
    with pytest.raises(FacedetectError, match="NaN or infinite pixels"):
        read_grey(tmp_path / "f.tif")


def test_a_dark_16_bit_pgm_stays_dark(tmp_path):
    # Every sample at most 255 of 65535: Pillow's mode I gives no hint of the range but
    # the format; read as 8-bit it would come out bright.
    samples = np.full((20, 20), 200, ">u2")
    (tmp_path / "dark.pgm").write_bytes(b"P5\n20 20\n65535\n" + samples.tobytes())
    assert read_grey(tmp_path / "dark.pgm").max() == 1


def test_wide_images_outside_the_usual_ranges_keep_their_contrast(tmp_path):
    ramp = np.tile(np.linspace(0, 1, 30), (20, 1))
    Image.fromarray((ramp * 1e6).astype(np.int32), mode="I").save(tmp_path / "i32.tif")
    Image.fromarray((ramp * 10 - 5).astype(np.float32), mode="F").save(tmp_path / "neg.tif")
    for name in ("i32.tif", "neg.tif"):
        grey = read_grey(tmp_path / name)
        assert grey[0, 0] == 0 and grey[0, -1] == 255, name


def test_a_pipe_is_not_read_as_an_image(tmp_path):
    import os
    os.mkfifo(tmp_path / "fifo.png")
    with pytest.raises(FacedetectError, match="not a regular file"):
        read_grey(tmp_path / "fifo.png")
