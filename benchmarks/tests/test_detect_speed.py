"""The one timing helper: each detector warmed once a photograph, then the detectors
taking turns within each round; and the command's modes refused in one line."""

from __future__ import annotations

import pytest

from benchmarks.detect_speed import (PICTURES, geometric_ratio, main, picture_rows,
                                     seconds_per_mpx, seconds_per_picture)


def test_detectors_take_turns_within_each_round():
    calls = []
    detectors = {name: (lambda grey, name=name: calls.append((name, grey.shape)))
                 for name in ("a", "b")}
    times = seconds_per_picture(detectors, repeat=2)
    assert set(times) == {"a", "b"} and all(list(t) == list(PICTURES) for t in times.values())
    assert len(calls) == 6 * len(PICTURES)
    # a photograph at a time: the warm-up, then two rounds of turns
    assert [name for name, _ in calls[:6]] == ["a", "b"] * 3
    assert len({shape for _, shape in calls[:6]}) == 1
    rows = picture_rows(times)
    assert [r["image"] for r in rows] == list(PICTURES) and rows[0]["size"] == "512x512"
    assert geometric_ratio([{"x": 2.0, "y": 1.0}, {"x": 8.0, "y": 1.0}], "x", "y") == \
        pytest.approx(4.0)
    assert set(seconds_per_mpx(detectors, repeat=1)) == {"a", "b"}


def test_one_model_a_scan_or_policy_run(capsys):
    with pytest.raises(SystemExit):
        main(["a.json", "b.json", "--scans"])
    assert "take one model" in capsys.readouterr().err
