"""benchmarks.trainer_stages: a cut cascade is the cascade OpenCV had after k stages, and
the bisection finds the first k under a rate as a walk over every k does."""

import xml.etree.ElementTree as ElementTree
from pathlib import Path

import cv2
import numpy as np
import pytest
from skimage import data

from benchmarks.trainer_stages import (false_alarms_per_mpx, first_stage_at, prefix_cascade,
                                       seconds_to)

FRONTAL = Path(cv2.data.haarcascades) / "haarcascade_frontalface_default.xml"


def _raw(xml, grey):
    """Every window the cascade accepts, ungrouped."""
    found = cv2.CascadeClassifier(str(xml)).detectMultiScale(grey, 1.1, 0, minSize=(24, 24))
    return {tuple(box) for box in np.asarray(found).reshape(-1, 4).tolist()}


@pytest.mark.skipif(not FRONTAL.exists(), reason="OpenCV's cascades are not installed")
def test_a_prefix_accepts_what_the_whole_accepts_and_more(tmp_path):
    grey = data.astronaut()[..., 0]
    whole = _raw(FRONTAL, grey)
    fewer = _raw(prefix_cascade(FRONTAL, 12, tmp_path / "p12.xml"), grey)
    fewest = _raw(prefix_cascade(FRONTAL, 6, tmp_path / "p6.xml"), grey)
    assert whole < fewer < fewest   # each stage only rejects
    n_stages = len(ElementTree.parse(FRONTAL).getroot().find("cascade/stages"))
    assert _raw(prefix_cascade(FRONTAL, n_stages, tmp_path / "all.xml"), grey) == whole
    with pytest.raises(ValueError):
        prefix_cascade(FRONTAL, n_stages + 1, tmp_path / "more.xml")


@pytest.mark.skipif(not FRONTAL.exists(), reason="OpenCV's cascades are not installed")
def test_the_rate_counts_detect_multi_scale_boxes_per_megapixel():
    grey = data.camera()
    boxes = cv2.CascadeClassifier(str(FRONTAL)).detectMultiScale(grey, 1.1, 3,
                                                                 minSize=(19, 19))
    assert false_alarms_per_mpx(FRONTAL, [grey, grey]) == pytest.approx(
        2 * len(boxes) / (2 * grey.size / 1e6))


@pytest.mark.parametrize("seed", range(20))
def test_the_bisection_finds_the_walks_first_stage(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    rates = np.sort(rng.choice(8, n))[::-1] / 2.0   # falling, with plateaus
    target = float(rng.choice(8)) / 2.0
    walk = next((k for k in range(1, n + 1) if rates[k - 1] <= target), None)
    found, measured = first_stage_at(lambda k: float(rates[k - 1]), n, target)
    assert found == walk
    assert all(measured[k] == rates[k - 1] for k in measured)


def test_a_capped_run_counts_its_finished_stages_alone():
    stats = {"wall_s": 50.0, "stage_seconds": [5, 10, 20]}
    assert [seconds_to(stats, k) for k in (1, 2, 3)] == [20.0, 30.0, 50.0]
    assert seconds_to(dict(stats, code="capped"), 2) == 15.0
