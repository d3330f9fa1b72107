"""The lever comparison's reading: recall at equal false alarms, hand-computed, its tables,
and the command's lists of numbers refused in one line when they are not finite."""

from __future__ import annotations

import argparse

import pytest

from benchmarks.levers import _curve_table, _levels, _numbers, main, recall_at

ROWS = {"alarms": [0.3, 0.1], "recall": [0.95, 0.9], "posterised_recall": [0.84, 0.8]}


def test_recall_is_read_off_the_curve_at_equal_false_alarms():
    # halfway between 0.1 and 0.3 false alarms: halfway between the recalls
    assert recall_at(ROWS, 0.2) == pytest.approx(0.925)
    assert recall_at(ROWS, 0.2, "posterised_recall") == pytest.approx(0.82)
    assert recall_at(ROWS, 0.05) is None and recall_at(ROWS, 0.35) is None
    assert _curve_table({"m": ROWS}, (0.2, 0.5), "posterised_recall")[2] == "| m | 0.820 | - |"


def test_offsets_and_levels_are_finite_sorted_numbers():
    assert _numbers("1,-2,0.5") == (-2.0, 0.5, 1.0)
    for bad in ("1,nan", "inf", "a,1", ""):
        with pytest.raises(argparse.ArgumentTypeError):
            _numbers(bad)
    assert _levels("0.2,0.1") == (0.1, 0.2)
    with pytest.raises(argparse.ArgumentTypeError, match="from 0"):
        _levels("-0.1,0.2")


def test_the_curve_flags_need_curves(capsys):
    with pytest.raises(SystemExit):
        main(["a.json", "--posterised", "--offsets", "0,1"])
    assert "--offsets, --posterised needs --curves" in capsys.readouterr().err
