"""benchmarks.trainer_stages: a cut cascade is the cascade OpenCV had after k stages, and
the bisection finds the first k under a rate as a walk over every k does."""

import xml.etree.ElementTree as ElementTree
from pathlib import Path

import cv2
import numpy as np
import pytest
from skimage import data

from benchmarks.trainer_stages import (false_alarms_per_mpx, first_stage_at, prefix_cascade,
                                       reach_opencv, reach_table, seconds_to)

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


def test_a_prefix_keeps_the_first_stages_and_says_how_many(tmp_path):
    whole = ElementTree.parse(FRONTAL).getroot().find("cascade")
    cut = ElementTree.parse(prefix_cascade(FRONTAL, 3, tmp_path / "p3.xml")).getroot()
    assert cut.find("cascade/stageNum").text == "3"
    assert ([ElementTree.tostring(s) for s in cut.find("cascade/stages")]
            == [ElementTree.tostring(s) for s in list(whole.find("stages"))[:3]])


@pytest.mark.skipif(not FRONTAL.exists(), reason="OpenCV's cascades are not installed")
def test_the_rate_counts_detect_multi_scale_boxes_per_megapixel():
    pictures = [data.astronaut()[..., 1], data.camera()[:300, :400]]
    cascade = cv2.CascadeClassifier(str(FRONTAL))
    found = [len(cascade.detectMultiScale(p, 1.1, 3, minSize=(19, 19))) for p in pictures]
    assert found[0] != found[1] * pictures[0].size / pictures[1].size   # not a mean of rates
    assert false_alarms_per_mpx(FRONTAL, pictures) == pytest.approx(
        sum(found) / (sum(p.size for p in pictures) / 1e6))


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


def test_a_run_that_records_when_each_stage_was_done_counts_to_that_moment():
    """Not the stage after it, whose mining ran out of negatives (the run stops there):
    its start and its writing outside training count, nothing after stage k."""
    stats = {"wall_s": 50.0, "stage_seconds": [5, 10, 20], "training_seconds": 47.0,
             "stage_elapsed": [6.0, 16.0, 36.0]}
    assert [seconds_to(stats, k) for k in (1, 2, 3)] == [9.0, 19.0, 39.0]


def test_the_table_gives_each_trainer_its_time_to_opencvs_rate(tmp_path):
    path = tmp_path / "picture.png"
    cv2.imwrite(str(path), data.astronaut()[..., 1])
    n_stages = len(ElementTree.parse(FRONTAL).getroot().find("cascade/stages"))
    seconds = [1.0] * n_stages
    run = {"size": "9", "false_alarms_per_mpx": {"9: opencv_traincascade": 4.0},
           "trainers": {"opencv_traincascade": {"xml": str(FRONTAL), "wall_s": 50.0,
                                                "stage_seconds": seconds, "code": "capped"},
                        "ours": {"xml": str(FRONTAL), "wall_s": 50.0,
                                 "stage_seconds": seconds},
                        "dlib": {"model": "dlib.svm"}}}
    def stages_in(xml):   # a stand-in recall: which cascade file it was asked of
        return len(ElementTree.parse(xml).getroot().find("cascade/stages")) / 100
    run["reach"] = reach_opencv(run, [path], tmp_path, recall_of=stages_in)
    assert set(run["reach"]) == {"opencv_traincascade", "ours"}   # dlib has no stages
    rates = {int(k): r for k, r in run["reach"]["ours"]["rates"].items()}
    k = run["reach"]["ours"]["stages"]
    assert rates[k] <= 4.0 < rates[k - 1]
    assert run["reach"]["ours"]["seconds"] == 50.0 - (n_stages - k)
    assert run["reach"]["opencv_traincascade"]["seconds"] == k   # its log's clock alone
    # the whole cascade's rate is the table's, not measured again
    assert run["reach"]["opencv_traincascade"]["rates"][str(n_stages)] == 4.0
    assert rates[n_stages] != 4.0
    rows = [line for line in reach_table({"runs": [run]}) if line.startswith("| 9 |")]
    assert [row.split(" | ")[5] for row in rows] == ["1.00x", f"{(50.0 - n_stages + k) / k:.2f}x"]
    # the recall of the stages that reached the rate, asked of their own cut file
    assert run["reach"]["ours"]["recall"] == k / 100
    assert [row.split(" | ")[6] for row in rows] == [f"{k / 100:.3f}"] * 2
    run["reach"]["ours"]["stages"] = None
    assert "not reached" in reach_table({"runs": [run]})[-1]


def test_a_cascade_too_permissive_to_evaluate_is_reached_by_acceptance(tmp_path):
    """OpenCV capped after 4 stages whose rates multiply past the evaluation bound: no
    detector is made of it, and each trainer's time to it is the time its own stages
    took to accept no more of their mined windows than OpenCV's 4 accepted (its log's
    line as its fifth stage began), by hand here."""
    from benchmarks.trainers import detectors_of, opencv_stages
    log = tmp_path / "opencv.log"
    blocks = [f"===== TRAINING {k}-stage =====\nNEG count : acceptanceRatio    100 : {ratio}\n"
              f"|   2|        1|     {rate}|\nEND>\nTraining until now has taken 0 days 0 "
              f"hours {k + 1} minutes 0 seconds.\n"
              for k, (ratio, rate) in enumerate([(1, 0.45), (0.4, 0.48), (0.2, 0.5),
                                                 (0.09, 0.5)])]
    log.write_text("".join(blocks) + "===== TRAINING 4-stage =====\n"
                   "NEG count : acceptanceRatio    100 : 0.043\n")
    rates, seconds, accepted = opencv_stages(log)
    assert rates == [0.45, 0.48, 0.5, 0.5] and seconds == [60.0] * 4
    assert accepted == [1.0, 0.4, 0.2, 0.09, 0.043]
    opencv = {"xml": str(FRONTAL), "code": "capped", "wall_s": 900.0, "stage_seconds": seconds,
              "stage_false_alarms": rates, "stage_acceptance": accepted}
    ours = {"xml": str(FRONTAL), "wall_s": 100.0, "stage_seconds": [10.0] * 8,
            "stage_false_alarms": [0.5] * 8,
            "stage_acceptance": [None, 0.5, 0.3, 0.12, 0.05, 0.041, 0.02, 0.01]}
    run = {"size": "9", "trainers": {"opencv_traincascade": opencv, "ours": ours},
           "false_alarms_per_mpx": {}}
    assert [d.name for d in detectors_of(run)] == []   # "ours" is not a trainer it knows
    run["trainers"]["facedetect traincascade"] = run["trainers"].pop("ours")
    assert [d.name for d in detectors_of(run)] == ["9: facedetect traincascade"]
    run["trainers"]["dlib"] = {"model": "dlib.svm", "wall_s": 9.0}
    reached = reach_opencv(run, [], tmp_path)
    assert set(reached) == {"opencv_traincascade", "facedetect traincascade"}   # no dlib
    assert reached["opencv_traincascade"]["stages"] == 4
    assert reached["opencv_traincascade"]["seconds"] == 240.0   # its log's clock
    assert reached["facedetect traincascade"]["stages"] == 5    # 0.041 <= 0.043 < 0.05
    assert reached["facedetect traincascade"]["seconds"] == 100.0 - 3 * 10.0
    assert all(row["target"] == "acceptance 0.043" for row in reached.values())


def test_a_capped_run_of_ours_is_the_cascade_of_its_checkpoint(tmp_path, monkeypatch):
    """Stopped at the cap, `facedetect traincascade` leaves its finished stages in its
    checkpoint (no cascade.xml): the table runs them, exported, and counts each stage's
    time to the moment its training record says it was done."""
    import shutil
    from benchmarks import trainers
    from facedetect.detector._api import load_model
    source = Path(__file__).resolve().parents[2] / "tests" / "models" / "cascade.json"
    out = tmp_path / "ours"
    out.mkdir()
    (out / "cascade.json").write_text("an earlier run's")   # cleared before the run

    def capped_run(*args):   # the trainer, stopped at the cap, leaves its checkpoint
        assert not out.exists()
        out.mkdir()
        shutil.copy(source, out / "cascade.json.checkpoint.json")
        return {"code": "capped", "wall_s": 900.0}
    monkeypatch.setattr(trainers, "timed_run", capped_run)
    stats = trainers.train_ours(tmp_path, {"n": 10, "w": 24, "h": 24}, 900.0)
    model = load_model(str(source))
    records = model.document["training"]["cascade_stages"]
    assert cv2.CascadeClassifier(stats["xml"]).empty() is False
    stages = ElementTree.parse(stats["xml"]).getroot().find("cascade/stages")
    assert len(stages) == len(records) == len(stats["stage_seconds"])
    assert seconds_to(stats, 2) == round(sum(stats["stage_seconds"][:2]), 1)   # no moments
    elapsed = [10.0 * k for k in range(1, len(records) + 1)]
    assert seconds_to(dict(stats, stage_elapsed=elapsed), 2) == 20.0  # the moment it had 2
