import csv
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from facedetect.metrics import (
    binary_rates,
    envelope_area_between,
    lower_envelope,
    normalized_expected_cost,
    probability_cost,
    roc_points,
)

from .conftest import plain_config



def test_rates_hand_computed():
    labels = [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
    predicted = [1, 1, 1, 0, 0, 0, 0, 0, 1, 1]
    rates = binary_rates(labels, predicted)
    assert (rates.false_negatives, rates.false_positives) == (1, 2)
    assert rates.false_negative_rate == 0.25 and rates.false_positive_rate == pytest.approx(1 / 3)
    assert rates.classification_error == 0.3
    # PCF at cost (1, 10) with p(+) = 0.4: 0.4 / (0.4 + 6) = 1/16.
    assert probability_cost(0.4, (1, 10)) == pytest.approx(1 / 16)
    assert rates.nec((1, 10)) == pytest.approx(0.25 / 16 + (1 / 3) * 15 / 16)
    # Equal costs: NEC equals the classification error.
    assert rates.nec() == pytest.approx(rates.classification_error)


def test_nec_end_points_are_fp_and_fn():
    assert normalized_expected_cost(0.3, 0.1, 0.0) == pytest.approx(0.1)
    assert normalized_expected_cost(0.3, 0.1, 1.0) == pytest.approx(0.3)


def test_lower_envelope_and_area():
    grid, envelope = lower_envelope([0.5, 0.0], [0.0, 0.5], pcf=[0.0, 0.5, 1.0])
    np.testing.assert_allclose(envelope, [0.0, 0.25, 0.0])
    assert envelope_area_between(([0.2], [0.2]), ([0.1], [0.1])) == pytest.approx(0.1, rel=1e-6)


def test_roc_points_cover_both_ends():
    points = roc_points([1, 1, 0, 0], [2.0, 0.5, -0.3, 1.0], n_points=5)
    assert points[0]["false_negative_rate"] == 0 and points[0]["false_positive_rate"] == 1
    assert points[-1]["false_negative_rate"] == 1 and points[-1]["false_positive_rate"] == 0


def test_small_sweep_writes_tables_and_picture(small_cbcl, tmp_path):  # noqa: F811
    result = subprocess.run(
        [sys.executable, "-m", "facedetect", "sweep", "--data", str(small_cbcl), "--rounds",
         "2,6", "--costs", "1,10;1,1;10,1", "--folds", "2", "--out-dir", str(tmp_path),
         "--quiet"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(open(tmp_path / "cbcl_sweep.csv")))
    assert len(rows) == 2 * 3 * 4   # round counts x costs x methods
    assert {r["method"] for r in rows} == {"db-raw", "db-op", "db-emp", "adamec"}
    op = [r for r in rows if r["method"] == "db-op" and r["rounds"] == "6"]
    assert [(r["cp"], r["cn"]) for r in op] == [("1.0", "10.0"), ("1.0", "1.0"), ("10.0", "1.0")]
    # The paper's CBCL figures stand beside ours.
    assert float(op[0]["paper_fn"]) == 0.278
    fn, fp = [float(r["fn"]) for r in op], [float(r["fp"]) for r in op]
    assert fn[0] >= fn[2] and fp[0] <= fp[2]  # costlier misses, fewer misses
    text = (tmp_path / "cbcl_sweep.md").read_text()
    assert "| [1,10] |" in text and "rho(FN" in text
    for rounds in (2, 6):
        with Image.open(tmp_path / f"cbcl_cost_space_{rounds}.png") as image:
            assert image.size[0] > 300


def test_sweep_summary_hand_computed():
    from facedetect.reproduce._cbcl_sweep_report import cost_response, mean_table, nec_difference
    costs = [(1, 10), (1, 1), (10, 1)]
    rows = []
    for fold in range(2):
        for i, cost in enumerate(costs):
            rows.append({"rounds": 5, "cost": cost, "method": "db-op", "fold": fold,
                         "fn": 0.3 - 0.1 * i, "fp": 0.1 * i, "nec": 0.1 + 0.01 * fold,
                         "seconds": 1.0})
            rows.append({"rounds": 5, "cost": cost, "method": "db-raw", "fold": fold,
                         "fn": 0.1, "fp": 0.1, "nec": 0.2 - 0.1 * i, "seconds": 1.0})
    table = mean_table(rows)
    assert cost_response(table, costs, 5, "db-op") == {"rho_fn": -1.0, "rho_fp": 1.0}
    diff = nec_difference(table, costs, 5, "db-op", "db-raw")
    # per cost: 0.105 - 0.2, 0.105 - 0.1, 0.105 - 0.0; the fold differences are 0.01 apart
    assert diff["mean"] == pytest.approx(np.mean([-0.095, 0.005, 0.105]))
    assert diff["worst"] == pytest.approx(0.105)
    assert diff["worse_beyond_noise"] == 1    # 0.005 is within 2 SE (0.01), 0.105 is not


def test_show_draws_features(small_cbcl, tmp_path):  # noqa: F811
    from facedetect.data import load_cbcl
    from facedetect.pipeline._train import train_detector
    train_detector(plain_config((1, 1), 4), load_cbcl(small_cbcl), out=tmp_path / "m.json",
                   progress=False)
    result = subprocess.run([sys.executable, "-m", "facedetect", "show", str(tmp_path / "m.json"),
                             "--out", str(tmp_path / "f.png"), "--data", str(small_cbcl)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    with Image.open(tmp_path / "f.png") as image:
        assert image.mode == "RGB" and image.size[0] >= 4 * 19 * 12
