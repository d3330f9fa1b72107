"""Early rejection in the scanner: exact, learnt (pruning) and soft, and its levels in a model."""

import json

import numpy as np
import pytest

from facedetect.detector._multiscale import DetectionParams, scan_raw
from facedetect.detector._model import HaarDetectorModel
from facedetect.detector._scan import LevelScanner

from . import test_detector_scan

# Fixtures of test_detector_scan.py: the shipped model, CBCL's windows as it sees them and
# the astronaut.
model, seen, astronaut = (test_detector_scan.model, test_detector_scan.seen,
                          test_detector_scan.astronaut)


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
    # every quantile's levels in one partition of the scores (row k: QUANTILES[k])
    quantiles = np.quantile(setting, QUANTILES, axis=0) - margin
    losses = [float((above < levels).any(axis=1).mean()) for levels in quantiles]
    for budget in (0.0, 0.003, 0.01, 0.02, 0.05, 0.5):
        first = next(k for k, loss in enumerate(losses) if loss <= budget)
        levels, quantile, loss = soft_rejection_thresholds(model, faces, threshold, budget)
        assert quantile == QUANTILES[first] and loss == pytest.approx(losses[first])
        np.testing.assert_allclose(levels, quantiles[first], rtol=0, atol=1e-9)
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
