"""A cascade for another object than faces, end to end on scikit-image's coins picture:
train from a folder of crops, detect, export, and OpenCV detecting with the export."""

from __future__ import annotations

import pytest

from benchmarks.coins_cascade import coin_boxes, main


def test_coin_boxes_are_the_coins():
    boxes = coin_boxes()
    assert 18 <= len(boxes) <= 24          # the picture shows 24, a few touch or are faint
    assert (boxes[:, 2] == boxes[:, 3]).all() and (boxes[:, 2] >= 25).all()


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_coin_cascade_trains_detects_and_exports(tmp_path):
    results = main(["--stages", "6", "--work", str(tmp_path), "--no-write"])
    coins = results["coins"]
    for detector in ("facedetect", "opencv_with_our_cascade"):
        assert results[detector]["found"] >= 0.8 * coins, results
        assert results[detector]["false_positives"] <= 5, results
    assert len(results["stages"]) >= 2
