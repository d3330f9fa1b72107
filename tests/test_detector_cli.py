"""The detect and evaluate-images commands, run as a user runs them."""

import json
import subprocess
import sys

import numpy as np
from PIL import Image

from facedetect.detector import _multiscale as detect_module
from facedetect.detector._multiscale import detect_faces
from facedetect.detector._image_evaluation import match, read_annotations
from facedetect.images import read_grey
from facedetect.detector._model import HaarDetectorModel
from facedetect.detector._api import shipped_model_path

from . import test_detector_scan
from .conftest import needs_data

# The astronaut: a fixture of test_detector_scan.py.
astronaut = test_detector_scan.astronaut


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "facedetect", *args], capture_output=True,
                          text=True, timeout=600)


def test_detect_command_on_the_astronaut(tmp_path, astronaut):
    Image.fromarray(astronaut).save(tmp_path / "astronaut.jpg")
    result = run_cli("detect", str(tmp_path / "astronaut.jpg"), "--json", "--output",
                     str(tmp_path / "out.png"))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert len(report) == 1 and len(report[0]["faces"]) >= 1
    with Image.open(tmp_path / "out.png") as annotated:
        assert annotated.size == (512, 512) and annotated.mode == "RGB"


def test_detect_carries_on_past_bad_files(tmp_path, astronaut):
    Image.fromarray(astronaut[:200, :200]).save(tmp_path / "good.png")
    (tmp_path / "corrupt.jpg").write_bytes(b"\xff\xd8\xff\xe0 truncated")
    (tmp_path / "notes.png").write_text("not an image")
    Image.fromarray(np.zeros((10, 10), np.uint8)).save(tmp_path / "tiny.png")
    result = run_cli("detect", str(tmp_path), str(tmp_path / "missing.png"))
    assert result.returncode == 1
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 4
    assert any("tiny.png" in e and "smaller than" in e for e in errors)
    assert any("missing.png" in e for e in errors)
    assert "good.png" in result.stdout


def test_detect_missing_model_is_one_line(tmp_path, astronaut):
    Image.fromarray(astronaut).save(tmp_path / "a.png")
    result = run_cli("detect", str(tmp_path / "a.png"), "--model", str(tmp_path / "none.json"))
    assert result.returncode == 1 and len(result.stderr.strip().splitlines()) == 1


def test_bad_scan_options_are_one_line(tmp_path, astronaut):
    Image.fromarray(astronaut).save(tmp_path / "a.png")
    for flags in (["--neighbor-margin", "-1"], ["--neighbor-margin", "inf"],
                  ["--min-neighbors", "-1"], ["--scale-factor", "1"]):
        result = run_cli("detect", str(tmp_path / "a.png"), *flags)
        assert result.returncode != 0
        assert len(result.stderr.strip().splitlines()) == 1 and flags[0] in result.stderr


def test_evaluate_images_with_opencv_baseline(tmp_path):
    dev = needs_data("mit-cmu-dev", "bboxes.txt")
    names = ("cnn1160.gif", "cnn2600.gif")
    lines = [line for line in (dev / "bboxes.txt").read_text().splitlines()
             if line.split()[0] in names]
    (tmp_path / "b.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "images").mkdir()
    for name in names:
        (tmp_path / "images" / name).write_bytes((dev / "images" / name).read_bytes())
    result = run_cli("evaluate-images", str(tmp_path / "images"), "--annotations",
                     str(tmp_path / "b.txt"), "--baseline", "opencv", "--json", "--quiet",
                     "--curve", str(tmp_path / "curve"))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    # The same count, found another way: detect each image and match its boxes here.
    model = HaarDetectorModel.load(shipped_model_path())
    truth = read_annotations(tmp_path / "b.txt")
    found = 0
    for name in names:
        detections = detect_faces(read_grey(tmp_path / "images" / name), model,
                                  detect_module.params_for(model))
        found += match(detections.boxes, detections.scores, truth[name])
    assert report["faces"] == 3 and report["found"] == found >= 1
    assert [b["cascade"] for b in report["opencv"]] == [
        "haarcascade_frontalface_default.xml", "haarcascade_frontalface_alt2.xml"]
    assert (tmp_path / "curve.csv").exists() and (tmp_path / "curve.png").exists()
