"""The propose-and-verify benchmark's calibration rules against brute force (the
verifier's patches and scores: tests/test_verifier.py)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.verifier import lowest_meeting, two_stage, two_stage_point


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


def test_where_every_group_meets_the_target_every_group_is_kept():
    pictures = [(None, np.zeros((3, 4)), np.array([1.0, 2.0, 3.0]), np.zeros(3))]
    sets = {"calibration_pictures": pictures, "calibration_mpx": 1.0}
    threshold = two_stage_point(sets, 1.0, 10.0)
    assert sum(len(k) for k in two_stage(pictures, 1.0, threshold)) == 3
