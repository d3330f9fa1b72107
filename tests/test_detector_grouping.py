"""Grouping windows into detections: as OpenCV's groupRectangles, with hysteresis, bounded."""

import cv2
import numpy as np
import pytest

from facedetect.detector._grouping import group_rectangles
from facedetect.errors import FacedetectError


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
    def unordered(a, b):
        return {(min(p, q), max(p, q)) for p, q in zip(a.tolist(), b.tolist())}

    assert unordered(i, j) == unordered(*np.nonzero(close)) and len(i) > 50
