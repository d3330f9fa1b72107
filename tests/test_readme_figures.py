"""The README's figures about the shipped models agree with the model files' own records
and with the benchmark run that produced the results table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import facedetect
from .conftest import shipped_default_digests, shipped_digests

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
BENCHMARK = REPO / "benchmarks" / "results" / "peers_default_ctx2.json"


@pytest.fixture(scope="module")
def default():
    return facedetect.load_model("default").document


def _one(pattern: str) -> re.Match:
    found = re.findall(pattern, README)
    assert len(found) == 1, (pattern, found)
    return re.search(pattern, README)


def test_the_train_output_is_the_shipped_models_record(default):
    saved = _one(r"saved my_detector\.json: (\d+) stumps, cost ([\d.]+),"
                 r"([\d.]+), db/root, trained on (\d+) faces \+ (\d+) non-faces in ([\d.]+) s")
    stumps, cp, cn, _, _, seconds = saved.groups()
    assert int(stumps) == len(default["stumps"])
    assert [float(cp), float(cn)] == default["cost"]
    assert float(seconds) == pytest.approx(default["training"]["seconds"], abs=0.05)
    # the one command's time and memory: the training benchmark's run, its CPU named
    minutes = _one(r"(\d+(?:\.\d)?) minutes and ([\d.]+) GiB on 2 cores \(([^,;]+),\s+idle; "
                   r"\[benchmarks/results/(\w+)\.md\]")
    timed = json.loads((REPO / "benchmarks" / "results" / f"{minutes.group(4)}.json")
                       .read_text())
    idle = timed["runs"]["idle"]
    assert float(minutes.group(1)) == round(idle["wall_s"] / 60, 1)
    assert float(minutes.group(2)) == idle["peak_rss_gib"]
    assert minutes.group(3) in timed["machine"]
    detection = default["detection"]
    point = _one(r"image operating point \(what detect uses\): threshold ([\d.]+), "
                 r"min_neighbors (\d+), ([\d.]+) false alarms per megapixel")
    assert float(point.group(1)) == pytest.approx(detection["threshold"], abs=0.005)
    assert int(point.group(2)) == detection["min_neighbors"]
    assert float(point.group(3)) == round(
        default["calibration"]["image"]["false_alarms_per_megapixel"], 3)
    # the train and evaluate outputs both print the window operating point
    windows = re.findall(r"operating point: threshold \+([\d.]+) \(sigmoid", README)
    assert windows and all(float(w) == pytest.approx(default["operating_point"]["threshold"],
                                                     abs=5e-5) for w in windows)
    assert f"then {default['training']['config']['rounds']};" in README
    # the recipe's verifier, as the shipped model holds it
    verifier = _one(r"verifier: ([\d,]+) positives and ([\d,]+) negatives; kept when the "
                    r"score plus ([\d.]+) x the verifier's passes ([\d.]+)")
    record = default["verifier"]["training"]
    assert [int(v.replace(",", "")) for v in verifier.groups()[:2]] == [
        record["positives"], record["negatives"]]
    assert float(verifier.group(3)) == default["verifier"]["weight"]
    assert float(verifier.group(4)) == pytest.approx(default["verifier"]["threshold"],
                                                     abs=5e-5)


def _pooled(by_source: dict, sources) -> str:
    """A pooled recall as the benchmark's table prints it (rounded to 4, shown to 3)."""
    sources = [s for s in sources if s in by_source]
    found = sum(by_source[s]["recall"] * by_source[s]["faces"] for s in sources)
    return f"{round(found / sum(by_source[s]['faces'] for s in sources), 4):.3f}"


def test_the_results_table_is_the_benchmark_run_of_the_shipped_models(default):
    run = json.loads(BENCHMARK.read_text())
    # it measured the model that ships (maybe before the file moved to version 2 or 3)
    assert run["sha256"]["default"] in shipped_default_digests()
    compared = ("mtfl", "mtfl-sun2013", "caltech-webfaces")
    assert run["sha256"]["haar"] in shipped_digests("haar")
    one_stage = "data/models/default_one_stage.json"   # the default with --no-verifier
    assert run["sha256"][one_stage] == facedetect.load_model("default").one_stage().document[
        "sha256"]
    rows = {"default": r"\| `default\.json` \(", one_stage: r"\| `default\.json --no-verifier` ",
            "haar": r"\| `haar\.json` ",
            "MTCNN": r"\| MTCNN ", "OpenCV alt2": r"\| OpenCV alt2 ",
            "dlib HOG up2": r"\| dlib HOG up2 ", "OpenCV default": r"\| OpenCV default ",
            "YuNet (score 0.6)": r"\| YuNet, score 0\.6 ",
            "YuNet x2 (score 0.6)": r"\| YuNet, picture doubled ",
            "libfacedetection": r"\| libfacedetection "}
    for name, start in rows.items():
        cells = [c.strip() for c in _one(start + r"[^\n]*").group(0).split("|")[2:-1]]
        dev = run["dev"][name].get("mapped", run["dev"][name]["raw"])["tpr_at_fp"]
        assert cells[0] == " / ".join(f"{dev[b]:.3f}" for b in ("2", "10", "50"))
        crops = run["crops"][name]
        assert cells[1] == _pooled(crops["clean"]["by_source"], compared)
        assert cells[2] == _pooled(crops["grainy"]["by_source"], compared)
        assert cells[3] == _pooled(crops["posterised"]["by_source"], compared)
        assert cells[4] == f"{run['false_alarms_per_mpx'][name]['clean']:.3f}"
        speed = run["seconds_per_mpx"]
        assert cells[5] == f"{speed[name] / speed['OpenCV default']:.2f}x"
        busy = run["seconds_per_mpx_one_core_busy"]
        assert cells[6] == f"{busy[name] / busy['OpenCV default']:.2f}x"
