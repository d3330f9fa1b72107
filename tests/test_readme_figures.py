"""The README's figures about the shipped models agree with the model files' own records
and with the benchmark run that produced the results table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import facedetect

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
BENCHMARK = REPO / "benchmarks" / "results" / "wild_detectors_shipped.json"


@pytest.fixture(scope="module")
def default():
    return facedetect.load_model("default").document


def _one(pattern: str) -> re.Match:
    found = re.findall(pattern, README)
    assert len(found) == 1, (pattern, found)
    return re.search(pattern, README)


def test_the_train_output_is_the_shipped_models_record(default):
    saved = _one(r"saved facedetect/models/default\.json: (\d+) stumps, cost ([\d.]+),"
                 r"([\d.]+), db/root, trained on (\d+) faces \+ (\d+) non-faces in ([\d.]+) s")
    stumps, cp, cn, _, _, seconds = saved.groups()
    assert int(stumps) == len(default["stumps"])
    assert [float(cp), float(cn)] == default["cost"]
    assert float(seconds) == pytest.approx(default["training"]["seconds"], abs=0.05)
    minutes = _one(r"(\d+(?:\.\d)?) minutes and ([\d.]+) GiB on 2 cores")
    assert float(minutes.group(1)) == pytest.approx(default["training"]["seconds"] / 60,
                                                    abs=0.05)
    detection = default["detection"]
    point = _one(r"image operating point: threshold ([\d.]+), ([\d.]+) false alarms/Mpx")
    assert float(point.group(1)) == pytest.approx(detection["threshold"], abs=0.05)
    assert float(point.group(2)) == round(detection["false_alarms_per_megapixel"], 3)
    window = _one(r"operating point: threshold \+([\d.]+) \(sigmoid")
    assert float(window.group(1)) == pytest.approx(default["operating_point"]["threshold"],
                                                   abs=5e-5)
    assert f"then {default['training']['config']['rounds']};" in README


def test_the_results_table_is_the_benchmark_run_and_the_model_record(default):
    run = json.loads(BENCHMARK.read_text())
    for name in ("default", "cascade"):
        row = _one(rf"\| `{name}\.json`[^|]*\| ([\d.]+), (\d+) \| ([\d.]+), ([\d.]+) \| "
                   r"([\d.]+) \| ([\d.]+) \| ([\d.]+)x, ([\d.]+)x \|")
        measured = run["models"][name]
        tpr, fp, mtfl_caltech, utk, grainy, alarms = row.groups()[:6]
        assert float(tpr) == round(measured["dev"]["tpr"], 3)
        assert int(fp) == measured["dev"]["false_positives"]
        faces = measured["wild_faces"]["by_source"]
        pooled = [s for s in ("mtfl", "mtfl-sun2013", "caltech-webfaces") if s in faces]
        found = sum(faces[s]["recall"] * faces[s]["faces"] for s in pooled)
        # as the benchmark's table rounds it: to 4 places, then printed to 3
        share = round(found / sum(faces[s]["faces"] for s in pooled), 4)
        assert mtfl_caltech == f"{share:.3f}"
        assert float(utk) == round(faces["utkface"]["recall"], 3)
        grained = measured["grainy_faces"]["by_source"]
        found = sum(grained[s]["recall"] * grained[s]["faces"] for s in pooled)
        assert grainy == f"{round(found / sum(grained[s]['faces'] for s in pooled), 4):.3f}"
        assert float(alarms) == measured["negatives_fa_per_mpx"]
    # the benchmark measured the model that ships
    assert float(_one(r"\| `default\.json` [^\n]*").group(0).split("|")[5]) == \
        round(default["detection"]["false_alarms_per_megapixel"], 3)
