"""The detector recipe: negatives found and split, mining, resumable stages, and the image
operating point that detect uses."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from facedetect.data import load_cbcl
from facedetect.data._negatives import (find_negatives, fingerprint, is_held_out,
                                       negative_files, split_negatives,
                                       split_training_negatives)
from facedetect.detector._multiscale import DetectionParams, detect_faces, params_for
from facedetect.errors import DataNotFoundError, FacedetectError
from facedetect.pipeline._bootstrap import (MiningState, NegativeSet, hard_negatives,
                                           mining_steps)
from facedetect.detector._calibrate_scan import (choose_image_threshold, false_alarm_rates,
                                                scan_pictures)
from facedetect.pipeline._train import TrainConfig, train_detector
from .conftest import plain_config


def _write_pictures(folder, count, seed=0, size=(90, 120)):
    from PIL import Image
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for i in range(count):
        texture = rng.integers(0, 256, size, dtype=np.uint8)
        Image.fromarray(texture).save(folder / f"neg-{i:04d}.png")
    return folder


def test_negatives_are_found_in_order_and_a_named_place_must_exist(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FACEDETECT_NEGATIVES", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert find_negatives() is None
    cached = _write_pictures(tmp_path / "cache" / "facedetect" / "negatives" / "images", 1)
    assert find_negatives() == cached                      # a folder holding images/
    local = _write_pictures(tmp_path / "data" / "negatives", 1)
    assert find_negatives() == local.relative_to(tmp_path) or find_negatives() == local
    env = _write_pictures(tmp_path / "env", 1)
    monkeypatch.setenv("FACEDETECT_NEGATIVES", str(env))
    assert find_negatives() == env
    flag = _write_pictures(tmp_path / "flag", 1)
    assert find_negatives(flag) == flag
    with pytest.raises(DataNotFoundError, match="--negatives"):
        find_negatives(tmp_path / "typo")                  # never falls through
    monkeypatch.setenv("FACEDETECT_NEGATIVES", str(tmp_path / "typo"))
    with pytest.raises(DataNotFoundError, match="FACEDETECT_NEGATIVES"):
        find_negatives()


def test_the_held_out_fifth_depends_on_the_name_only(tmp_path):
    folder = _write_pictures(tmp_path / "n", 200)
    files = negative_files(folder)
    mining, held = split_negatives(files)
    assert len(mining) + len(held) == 200 and 25 <= len(held) <= 55
    assert not set(mining) & set(held)
    # Adding pictures moves none between the parts; the fingerprint sees the change.
    before = fingerprint(files)
    _write_pictures(tmp_path / "n", 250)
    mining2, held2 = split_negatives(negative_files(folder))
    assert set(held) <= set(held2) and set(mining) <= set(mining2)
    assert fingerprint(negative_files(folder)) != before
    assert is_held_out(files[0]) == is_held_out(tmp_path / "elsewhere" / files[0].name)


def test_shared_negatives_hold_out_a_fifth(negatives_dir):
    mining, held = split_negatives(negative_files(negatives_dir))
    assert len(mining) + len(held) == 2516
    assert abs(len(held) / 2516 - 0.2) < 0.02
    # Training mines three fifths and calibrates on one: never on the held-out fifth.
    found = NegativeSet.find(negatives_dir)
    assert not set(found.mining) & set(found.calibration)
    assert not (set(found.mining) | set(found.calibration)) & set(held)
    assert len(found.mining) + len(found.calibration) == len(mining)
    assert abs(len(found.calibration) / 2516 - 0.2) < 0.03


def test_without_a_folder_training_warns_once_and_uses_skimage(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FACEDETECT_NEGATIVES", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    lines = []
    found = NegativeSet.find(warn=lines.append)
    assert len(lines) == 1 and "./data/negatives" in lines[0] and "--negatives" in lines[0]
    assert len(found.mining) == 16 and found.calibration == []


@pytest.fixture(scope="module")
def plain_model(small_cbcl):
    return train_detector(plain_config((1, 1), 4), load_cbcl(small_cbcl), progress=False).model


def test_mining_skips_bad_files_with_one_line_each(tmp_path, plain_model):
    folder = _write_pictures(tmp_path / "n", 3)
    (folder / "broken.png").write_bytes(b"not a picture")
    (folder / "empty.jpg").write_bytes(b"")
    lines = []
    files = negative_files(folder)
    found = hard_negatives(plain_model, files, limit=10**6, seed=0, warn=lines.append)
    assert len(lines) == 2 and all(line.startswith("skipping") for line in lines)
    assert len(found) > 0 and (plain_model.decision_function(found) > 0).all()
    with pytest.raises(FacedetectError, match="none of the 2 negative pictures"):
        hard_negatives(plain_model, files[:2], limit=10, seed=0, warn=lines.append)


@pytest.mark.slow
def test_mining_stops_at_the_limit_and_resumes_to_the_same_windows(tmp_path, plain_model):
    files = negative_files(_write_pictures(tmp_path / "n", 70, size=(60, 60)))
    whole = hard_negatives(plain_model, files, limit=100, seed=5)
    assert len(whole) == 100
    state = MiningState()

    for mining in mining_steps(plain_model, files, limit=100, seed=5, state=state):
        if mining.position == 10:
            break  # as an interruption would
    assert state.position == 10
    resumed = hard_negatives(plain_model, files, limit=100, seed=5, state=state)
    np.testing.assert_array_equal(resumed, whole)
    # no picture gives more than limit / 50 = 2 windows (70 pictures: the cap applies)
    assert state.count == 100


@pytest.mark.slow
def test_an_interrupted_bootstrap_resumes_to_the_identical_model(small_cbcl, tmp_path,
                                                                monkeypatch):
    data = load_cbcl(small_cbcl)
    negatives = NegativeSet.find(_write_pictures(tmp_path / "neg", 80, size=(70, 70)))
    config = plain_config((1, 5), 5, bootstrap_rounds=2, bootstrap_limit=120)
    import facedetect.pipeline._bootstrap as bootstrap
    original = bootstrap.positive_windows
    calls = {"n": 0, "stop": None}

    def counted(*args, **kwargs):   # pictures scanned by mining, counted; one interrupted
        calls["n"] += 1
        if calls["n"] == calls["stop"]:
            raise KeyboardInterrupt
        return original(*args, **kwargs)
    monkeypatch.setattr(bootstrap, "positive_windows", counted)
    whole = train_detector(config, data, out=tmp_path / "whole.json", progress=False,
                           negatives=negatives).model
    assert len(whole.document["training"]["bootstrap"]["stages"]) == 2
    # The second stage's mining, a few pictures before its end.
    calls["n"], calls["stop"] = 0, calls["n"] - 3
    out = tmp_path / "resumed.json"
    with pytest.raises(FacedetectError, match="interrupted while mining"):
        train_detector(config, data, out=out, progress=False, negatives=negatives)
    monkeypatch.setattr(bootstrap, "positive_windows", original)
    saved = json.loads((tmp_path / "resumed.json.checkpoint.json").read_text())
    assert saved["mining"]["position"] > 0
    # A changed folder is refused with the reason.
    _write_pictures(tmp_path / "neg", 81, size=(70, 70))
    changed = NegativeSet.find(tmp_path / "neg")
    with pytest.raises(FacedetectError, match="negatives folder changed"):
        train_detector(config, data, out=out, resume=True, progress=False, negatives=changed)
    os.remove(tmp_path / "neg" / "neg-0080.png")
    resumed = train_detector(config, data, out=out, resume=True, progress=False,
                             negatives=negatives).model
    for key in ("thresholds", "polarities", "alphas"):
        assert getattr(resumed, key).tobytes() == getattr(whole, key).tobytes()
    timing = ("seconds",)
    assert {k: v for k, v in resumed.detection.items() if k not in timing} == \
        {k: v for k, v in whole.detection.items() if k not in timing}
    assert not (tmp_path / "resumed.json.checkpoint.json").exists()
    assert not list(tmp_path.glob("resumed.json.checkpoint.json*"))


def test_choose_image_threshold_takes_the_lowest_safe_one():
    thresholds = np.arange(6.0)
    assert choose_image_threshold(thresholds, [3, 2, 0.4, 0.6, 0.2, 0.0], 0.5) == 4
    assert choose_image_threshold(thresholds, [3, 0.5, 0.4, 0.3, 0.2, 0.0], 0.5) == 1
    assert choose_image_threshold(thresholds, [3, 2, 2, 2, 2, 1], 0.5) == 5


def test_false_alarm_rates_equal_detect_on_each_picture(tmp_path, plain_model):
    pictures = [np.random.default_rng(i).integers(0, 256, (80, 100), dtype=np.uint8)
                for i in range(4)]
    base = DetectionParams(threshold=-2.0, scale_factor=1.2, step=1)
    raw, megapixels, floor = scan_pictures(plain_model, pictures, base)
    assert floor == -np.inf   # every window above the threshold is counted
    assert megapixels == pytest.approx(4 * 8000 / 1e6)
    thresholds = [-2.0, 0.0, 1.0]
    rates = false_alarm_rates(raw, megapixels, thresholds, 3, 0.0)
    for threshold, rate in zip(thresholds, rates):
        params = DetectionParams(threshold=threshold, scale_factor=1.2, step=1)
        count = sum(len(detect_faces(p, plain_model, params).boxes) for p in pictures)
        assert rate * megapixels == pytest.approx(count)
    # From the top down to the first rate above the target: the same choice as the whole
    # curve gives, for every target.
    from facedetect.detector._calibrate_scan import rates_down_to_target
    thresholds = np.linspace(-2.0, 3.0, 11)
    whole = false_alarm_rates(raw, megapixels, thresholds, 3, 0.0)
    for target in sorted(set(whole.tolist())) + [-1.0, 1e9]:
        top_down = rates_down_to_target(raw, megapixels, thresholds, target, 3, 0.0)
        assert choose_image_threshold(thresholds, top_down, target) == \
            choose_image_threshold(thresholds, whole, target), target


@pytest.mark.parametrize("rates", [
    [9, 5, 3, 0.5, 0.4, 0.3, 0.2, 0.1, 0.1],     # crosses low
    [9, 8, 7, 6, 5, 4, 3, 0.5, 0.1],              # crosses at the top
    [0.5, 0.4, 0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1],  # every candidate meets it
    [0.2] * 200,                                  # a long flat run: the lowest
    [9.0] * 57 + [0.25] * 143,                    # exactly the target counts
    [9, 9, 9, 9, 9, 9, 9, 9, 9],                  # none: the last, as chosen
])
def test_the_search_down_finds_what_every_candidate_scanned_finds(rates):
    from facedetect.detector._calibrate_scan import search_down
    scanned = []

    def measure(index):
        scanned.append(index)
        return f"levels at {index}", float(rates[index])

    index, rate, model = search_down(measure, len(rates), 0.25)
    # brute force: the lowest candidate meeting the target, on a falling curve
    meets = [i for i, r in enumerate(rates) if r <= 0.25]
    assert index == (meets[0] if meets else len(rates) - 1)
    assert (rate, model) == (rates[index], f"levels at {index}")   # its own scan's
    assert len(scanned) <= 2 * np.log2(len(rates)) + 2   # galloping, not every one


def test_detect_scan_over_the_target_keeps_the_choice_says_so_and_the_models_levels(
        monkeypatch):
    from facedetect.detector import _calibrate

    def over(model, pictures, params, warn=None):
        return 9.0

    # no training face above: the model's own levels, unchanged
    monkeypatch.setattr(_calibrate, "soft_levels_at", lambda model, faces, at: model)
    monkeypatch.setattr(_calibrate, "detect_rate", over)
    lines = []
    chosen, fields = _calibrate._on_detect_scan(
        "model", np.zeros((1, 2, 2)), [], DetectionParams(), np.arange(3.0), 0.25,
        warn=lines.append)
    assert chosen == 2 and fields == {"false_alarms_per_megapixel": 9.0}
    assert len(lines) == 1 and "9 false alarms per megapixel" in lines[0]
    assert "over the target 0.25" in lines[0]


def test_the_image_point_records_the_rate_detect_gives_there(plain_model, small_cbcl):
    from facedetect.detector._calibrate import SOFT_REJECTION_LOSS, image_operating_point
    rng = np.random.default_rng(0)
    pictures = [rng.integers(0, 256, (90, 120), dtype=np.uint8) for _ in range(6)]
    cbcl = load_cbcl(small_cbcl)
    faces = cbcl.images[cbcl.labels == 1]
    point = image_operating_point(plain_model, pictures, faces[::2], 50.0,
                                  train_faces=faces[1::2])
    model = plain_model.with_detection(point)
    assert point["rejection"]["at_threshold"] == point["threshold"]   # detect's own levels
    assert point["rejection"]["max_loss"] == SOFT_REJECTION_LOSS
    # the search scan chose higher (its levels, learnt lower, let more windows through)
    assert point["search_scan"]["threshold"] > point["threshold"]
    found = sum(len(detect_faces(p, model, params_for(model)).boxes) for p in pictures)
    megapixels = sum(p.size for p in pictures) / 1e6
    assert point["false_alarms_per_megapixel"] == pytest.approx(found / megapixels, abs=1e-4)
    assert point["false_alarms_per_megapixel"] <= 50.0


def test_detect_uses_the_model_image_operating_point_unless_overridden(plain_model):
    detection = {"threshold": 2.5, "min_neighbors": 4, "neighbor_margin": 1.0,
                 "scale_factor": 1.2, "step": 2, "min_size": 24, "applies_to": "images"}
    model = plain_model.with_detection(detection)
    params = params_for(model)
    assert (params.threshold, params.min_neighbors, params.neighbor_margin,
            params.scale_factor, params.step, params.min_size) == (2.5, 4, 1.0, 1.2, 2, 24)
    assert params_for(model, threshold=0.5, step=None).threshold == 0.5
    assert params_for(plain_model).threshold == plain_model.window_threshold
    # area levels, as training faces are made, unless the section says bilinear ones
    # (version 1 sections without the field: tests/test_model_detection.py)
    assert params.pyramid == params_for(plain_model).pyramid == "area"
    assert params_for(model.with_detection({"pyramid": "linear"})).pyramid == "linear"


def test_a_bad_detection_section_is_refused(plain_model, tmp_path):
    from facedetect.modelfile._io import load_document, reseal, save_document
    for bad in ({"threshold": "x"}, {"min_neighbors": -1}, {"scale_factor": 1.0},
                {"applies_to": "pictures"}, {"step": "fast"}, {"pyramid": "cubic"}):
        detection = {"threshold": 2.5, "min_neighbors": 4, "neighbor_margin": 1.0,
                     "scale_factor": 1.2, "step": 2, "min_size": 24, "applies_to": "images"}
        document = dict(plain_model.document,
                        detection={**plain_model.detection, **detection, **bad})
        save_document(tmp_path / "m.json", reseal(document))
        with pytest.raises(FacedetectError, match="detection needs|detection.pyramid"):
            load_document(tmp_path / "m.json")


@pytest.mark.slow
def test_train_detector_cli_bootstraps_by_default(small_cbcl, tmp_path):
    negatives = _write_pictures(tmp_path / "neg", 30, size=(60, 80))
    env = dict(os.environ, FACEDETECT_NEGATIVES=str(negatives))
    out = tmp_path / "m.json"
    result = subprocess.run([sys.executable, "-m", "facedetect", "train", "--recipe", "cbcl",
                             "--rounds", "3",
                             "--data", str(small_cbcl), "--bootstrap-limit", "50", "--out",
                             str(out), "--json"], capture_output=True, text=True, env=env,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["detection"]["applies_to"] == "images"
    document = json.loads(out.read_text())
    config = document["training"]["config"]
    recipe = TrainConfig()
    assert config["mirror"] and config["jitter"] == 3
    assert (config["bootstrap_rounds"], config["max_features"]) == (
        recipe.bootstrap_rounds, recipe.max_features) == (4, 16_234)
    # no faces from the wild here: CBCL's window, framing and face box (the defaults)
    assert (config["window"], config["framing"]) == ([19, 19], 1.75)
    assert (document["detection"]["box_scale"], document["detection"]["box_shift"]) == (2.0, 0.1)
    assert document["training"]["storage"] == "compact"
    assert document["training"]["bootstrap"]["negatives"] == str(negatives)
    # soft rejection at the image threshold, and the false alarms measured with it
    detection = document["detection"]
    rejection = detection["rejection"]
    assert rejection["at_threshold"] == detection["threshold"] and rejection["max_loss"] > 0
    assert document["calibration"]["image"]["search_scan"]["threshold"] >= \
        detection["threshold"]
    assert "search_scan" not in detection   # how it was chosen is the calibration record
    # the OpenCV export's own levels, learnt at its threshold; the summary leaves the
    # per-stump lists out
    opencv = detection["opencv"]
    assert opencv["rejection"]["at_threshold"] == pytest.approx(opencv["threshold"], abs=1e-6)
    assert len(opencv["rejection"]["thresholds"]) == 3
    assert "rejection" not in summary["detection"]["opencv"]
    # scanned, and to be scanned, on area-averaged levels, as its faces were made
    assert detection["pyramid"] == "area"


@pytest.mark.slow
@pytest.mark.parametrize("setup, message", [
    (lambda folder: None, "no pictures in the negatives folder"),
    (lambda folder: [(folder / f"x{i}.jpg").write_bytes(b"junk") for i in range(10)],
     "could be read"),
])
def test_a_useless_negatives_folder_is_one_clear_error(small_cbcl, tmp_path, setup, message):
    folder = tmp_path / "neg"
    folder.mkdir()
    setup(folder)
    result = subprocess.run([sys.executable, "-m", "facedetect", "train", "--recipe", "cbcl",
                             "--rounds", "2",
                             "--data", str(small_cbcl), "--negatives", str(folder), "--quiet",
                             "--out", str(tmp_path / "m.json")], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 1 and message in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if ": error:" in line]
    assert len(errors) == 1 and "Traceback" not in result.stderr
    skipped = [line for line in result.stderr.splitlines() if "skipping" in line]
    assert len(skipped) == (0 if "no pictures" in message else
                            len(split_training_negatives(
                                split_negatives(negative_files(folder))[0])[0]))


def test_an_unreadable_negatives_folder_is_one_error(tmp_path, monkeypatch):
    from pathlib import Path

    def refuse(self):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(Path, "iterdir", refuse)
    with pytest.raises(FacedetectError, match="cannot list the negatives folder "
                                              "\\(Permission denied\\)"):
        negative_files(tmp_path)
