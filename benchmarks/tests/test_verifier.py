"""The propose-and-verify benchmark's pieces against independent references: the patch
cut against a plain slice and OpenCV's resize, the verifier's scores against the fitted
estimator's own decision function, and the calibration rule against brute force."""

from __future__ import annotations

import argparse

import cv2
import numpy as np
import pytest

from benchmarks.verifier import (context_patches, lowest_meeting, train_verifier,
                                 two_stage, two_stage_point, verifier_scores)


def test_a_patch_is_the_window_with_its_context_resized():
    grey = np.random.default_rng(0).integers(0, 256, (60, 80), np.uint8)
    window = np.array([[20, 10, 20, 20]])
    # 1.5x of a 20-pixel window about its centre: the 30-pixel square from (15, 5)
    expected = cv2.resize(grey[5:35, 15:45], (16, 16), interpolation=cv2.INTER_AREA)
    assert (context_patches(grey, window, 1.5, 16)[0] == expected).all()
    # past the picture's edge the border is reflected, as OpenCV's BORDER_REFLECT_101
    padded = cv2.copyMakeBorder(grey, 10, 10, 10, 10, cv2.BORDER_REFLECT_101)
    corner = context_patches(grey, np.array([[0, 0, 20, 20]]), 1.5, 30)[0]
    assert (corner == padded[5:35, 5:35]).all()


@pytest.mark.parametrize("seed", range(20))
def test_the_calibration_rule_is_the_lowest_knob_safe_from_there_up(seed):
    rates = np.random.default_rng(seed).uniform(0, 2, 12)
    target = 1.0
    safe = [i for i in range(len(rates)) if (rates[i:] <= target).all()]
    assert lowest_meeting(rates, target) == (safe[0] if safe else len(rates) - 1)


def test_the_two_stage_point_meets_the_target_on_the_calibration_groups():
    rng = np.random.default_rng(1)
    pictures = [(None, np.zeros((n, 4)), rng.normal(20, 3, n), rng.normal(0, 2, n))
                for n in (5, 0, 9, 3)]
    sets = {"calibration_pictures": pictures, "calibration_mpx": 2.0}
    threshold = two_stage_point(sets, 1.0, 2.0)
    kept = sum(len(k) for k in two_stage(pictures, 1.0, threshold))
    assert kept / 2.0 <= 2.0
    # brute force: no lower score keeps the rate at the target
    values = np.sort(np.concatenate([b + s for _, _, b, s in pictures]))
    lower = values[values < threshold]
    assert not len(lower) or (values > lower[-1]).sum() / 2.0 > 2.0


def test_the_verifier_scores_as_its_estimator_decides():
    from facedetect.haar import feature_matrix
    rng = np.random.default_rng(2)
    faces = rng.integers(100, 256, (60, 12, 12), np.uint8)
    faces[:, 3:6, :] //= 3   # a dark band: something for the stumps to find
    others = rng.integers(0, 256, (60, 12, 12), np.uint8)
    args = argparse.Namespace(size=12, features=400, seed=0, memory=2**28, rounds=6)
    verifier = train_verifier(faces, others, args, (1.0, 1.0))
    scores = verifier_scores(verifier, np.concatenate([faces, others]))
    assert (scores[:60] > 0).mean() > 0.9 and (scores[60:] < 0).mean() > 0.9
    # the oracle: the fitted estimator's own decision on the features it was trained on
    values = feature_matrix(np.concatenate([faces, others]), verifier["training_pool"],
                            progress=False)
    assert np.allclose(scores, verifier["estimator"].decision_function(values))


def test_where_every_group_meets_the_target_every_group_is_kept():
    pictures = [(None, np.zeros((3, 4)), np.array([1.0, 2.0, 3.0]), np.zeros(3))]
    sets = {"calibration_pictures": pictures, "calibration_mpx": 1.0}
    threshold = two_stage_point(sets, 1.0, 10.0)
    assert sum(len(k) for k in two_stage(pictures, 1.0, threshold)) == 3
