"""``facedetect calibrate`` and the function training shares with it: the image operating
point and the OpenCV export's, each held to the real scan that runs it (``Detector.detect``
and ``cv2.CascadeClassifier``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image
from skimage import data

import facedetect
from facedetect.data._negatives import split_negatives, split_training_negatives
from facedetect.detector._calibrate import FACE_QUANTILE, calibrate, image_operating_point
from facedetect.images import to_grey

SCENES = ("camera", "coins", "coffee", "chelsea", "rocket", "text", "moon", "page")


def _calibration_names(count: int) -> list[str]:
    """File names that fall in the calibration part, as the negatives' split reads them."""
    names = [Path(f"scene-{k:04d}.png") for k in range(2000)]
    return [p.name for p in split_training_negatives(split_negatives(names)[0])[1][:count]]


@pytest.fixture(scope="module")
def scenes() -> list[np.ndarray]:
    return [to_grey(Image.fromarray(getattr(data, name)())) for name in SCENES]


@pytest.fixture(scope="module")
def negatives(tmp_path_factory, scenes) -> Path:
    """A folder whose calibration part holds the scenes, beside two held-out pictures of
    noise that calibrate must not read (the source line counts the pictures read)."""
    folder = tmp_path_factory.mktemp("negatives")
    for name, grey in zip(_calibration_names(len(scenes)), scenes):
        Image.fromarray(grey).save(folder / name)
    held = split_negatives([Path(f"scene-{k:04d}.png") for k in range(100)])[1]
    for seed, path in enumerate(held[:2]):
        noise = np.random.default_rng(seed).integers(0, 256, (300, 300), np.uint8)
        Image.fromarray(noise).save(folder / path.name)
    return folder


@pytest.fixture(scope="module")
def weak_model(tmp_path_factory, small_cbcl) -> Path:
    """A 19x19 model of 8 rounds (Haar features only, so OpenCV runs it): weak enough that
    the scenes raise false alarms at its window threshold, so that the target binds."""
    from facedetect.data._cbcl import load_cbcl
    from facedetect.pipeline._train import train_detector
    from .conftest import plain_config
    path = tmp_path_factory.mktemp("weak") / "weak.json"
    train_detector(plain_config((1, 1), 8), load_cbcl(small_cbcl), progress=False,
                   out=path)
    return path


def _run(*args):
    return subprocess.run([sys.executable, "-m", "facedetect", "calibrate", *args],
                          capture_output=True, text=True, timeout=600)


def test_calibrate_records_the_rates_detect_and_opencv_give(negatives, scenes, weak_model,
                                                            tmp_path):
    out = tmp_path / "calibrated.json"
    result = _run(str(weak_model), "--negatives", str(negatives), "--false-alarms", "3",
                  "--out", str(out), "--json", "--quiet")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    model = facedetect.load_model(out)
    megapixels = sum(grey.size for grey in scenes) / 1e6
    # oracle 1: detect itself, with the written model, on the calibration pictures only
    found = sum(len(facedetect.Detector(model).detect(grey)) for grey in scenes)
    assert report["image"]["false_alarms_per_megapixel"] == pytest.approx(
        found / megapixels, abs=1e-4)
    assert 0 < found / megapixels <= 3.0   # some alarms: the target binds
    assert f"{len(scenes)} calibration negative pictures" in report["image"]["source"]
    # oracle 2: OpenCV running what export-opencv writes from the written model
    xml = tmp_path / "cascade.xml"
    exported = subprocess.run([sys.executable, "-m", "facedetect", "export-opencv", str(out),
                               str(xml)], capture_output=True, text=True, timeout=300)
    assert exported.returncode == 0, exported.stderr
    opencv = cv2.CascadeClassifier(str(xml))
    theirs = sum(len(opencv.detectMultiScale(grey, 1.1, 3)) for grey in scenes)
    assert report["opencv"]["false_alarms_per_megapixel"] == pytest.approx(
        theirs / megapixels, abs=1e-4)
    assert theirs / megapixels <= 3.0
    # the stumps are the model's: only the operating points changed
    assert model.document["stumps"] == facedetect.load_model(weak_model).document["stumps"]


def test_without_faces_the_search_starts_at_the_window_threshold(scenes):
    model = facedetect.load_model("haar")
    point = image_operating_point(model, scenes, None, 3.0)
    assert point["curve"]["thresholds"][0] == pytest.approx(model.window_threshold, abs=1e-4)
    assert "heldout_face_window_recall" not in point and "rejection" not in point


def test_faces_bound_the_search_from_below(scenes):
    model = facedetect.load_model("haar")
    faces = np.random.default_rng(1).integers(0, 256, (40, 24, 24), np.uint8)
    point = image_operating_point(model, scenes, faces, 3.0)
    low = np.quantile(model.decision_function(faces), FACE_QUANTILE)
    assert point["curve"]["thresholds"][0] >= round(float(low), 4) - 1e-4
    assert point["heldout_face_window_recall"] == pytest.approx(
        np.mean(model.decision_function(faces) > point["threshold"]), abs=1e-4)


def test_a_model_of_channel_features_gets_no_export_point(scenes):
    model = calibrate(facedetect.load_model("default"), scenes[:2], 3.0)
    assert "opencv" not in model.detection
    assert model.calibration["image"]["target_false_alarms_per_megapixel"] == 3.0
    # the scan's fields apart from how they were chosen
    assert "target_false_alarms_per_megapixel" not in model.detection
    assert {"source", "curve", "seconds"} <= set(model.calibration["image"])


def test_a_verified_model_gets_its_proposers_point_and_keeps_its_verifier(scenes):
    verified = facedetect.load_model("default")
    h, w = verified.window
    faces = np.random.default_rng(2).integers(0, 256, (60, h, w), np.uint8)
    ours = calibrate(verified, scenes[:2], 3.0, train_faces=faces)
    oracle = calibrate(verified.one_stage(), scenes[:2], 3.0, train_faces=faces)
    assert ours.document["verifier"] == verified.document["verifier"]
    assert ours.detection == oracle.detection
    assert image_operating_point(verified, scenes[:2], faces, 3.0)["threshold"] == \
        image_operating_point(verified.one_stage(), scenes[:2], faces, 3.0)["threshold"]


@pytest.mark.parametrize("args, words", [
    (["--out", "/no/such/folder/m.json"], "--out: folder"),
    (["--data", "."], "--data rebuilds the training faces with --faces"),
    (["--false-alarms", "nan"], "--false-alarms: expected a finite number"),
    (["--false-alarms", "0"], "--false-alarms"),
])
def test_bad_input_is_one_line(negatives, args, words):
    result = _run("haar", "--negatives", str(negatives), *args)
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0 and len(lines) == 1, result.stderr
    assert words in lines[0] and "calibrate" in lines[0], lines[0]


def test_a_folder_without_calibration_pictures_is_refused(tmp_path):
    held = split_negatives([Path(f"scene-{k:04d}.png") for k in range(200)])[1][0]
    Image.fromarray(np.zeros((50, 50), np.uint8)).save(tmp_path / held.name)
    result = _run("haar", "--negatives", str(tmp_path))
    assert result.returncode != 0 and "no calibration picture" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_each_picture_is_decoded_once_and_an_unreadable_one_warned_once(tmp_path, scenes,
                                                                        monkeypatch):
    import facedetect.images as images
    paths = [tmp_path / "a.png", tmp_path / "b.png", tmp_path / "broken.png"]
    for path, grey in zip(paths, scenes[:2]):
        Image.fromarray(grey).save(path)
    paths[2].write_bytes(b"not a picture")
    reads, read_grey = [], images.read_grey

    def counting(path, *args, **kwargs):
        reads.append(Path(path).name)
        return read_grey(path, *args, **kwargs)
    monkeypatch.setattr(images, "read_grey", counting)
    lines = []
    model = calibrate(facedetect.load_model("haar"), paths, 5.0, warn=lines.append)
    assert sorted(reads) == ["a.png", "b.png", "broken.png"]   # the searches measure many times
    assert [line for line in lines if "skipping" in line] == [
        f"skipping {paths[2]}: not a readable image (cannot identify image file "
        f"'{paths[2]}')"]
    assert model.calibration["image"]["source"].startswith("2 calibration negative pictures")


def test_out_may_not_be_the_model_itself(negatives, tmp_path):
    model = tmp_path / "model.json"
    facedetect.load_model("haar").save(model)
    before = model.read_bytes()
    result = _run(str(model), "--negatives", str(negatives), "--out", str(model))
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0 and len(lines) == 1, result.stderr
    assert "is the model file itself" in lines[0] and "calibrate" in lines[0]
    assert model.read_bytes() == before
