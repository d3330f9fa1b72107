"""Export to OpenCV: thresholds, rectangles, the cascade XML against our scanner, export-opencv."""

import cv2
import numpy as np

from facedetect.detector import _multiscale as detect_module
from facedetect.detector._multiscale import DetectionParams
from facedetect.detector._image_evaluation import iou_matrix
from facedetect.detector._export import cascade_xml, opencv_rects, opencv_threshold

from . import test_detector_scan
from .test_detector_cli import run_cli

# Fixtures of test_detector_scan.py: the shipped Haar model, CBCL's windows as the shipped
# model sees them (so that model too) and the astronaut.
model, haar_model, seen, astronaut = (test_detector_scan.model, test_detector_scan.haar_model,
                                      test_detector_scan.seen, test_detector_scan.astronaut)


def test_threshold_nudge_makes_comparisons_agree():
    rng = np.random.default_rng(0)
    values = rng.normal(size=10_000).astype(np.float32)
    for threshold in rng.normal(size=50):
        t = opencv_threshold(threshold)
        assert np.array_equal(values > threshold, values >= t)
    assert opencv_threshold(float(values[3])) > values[3]


def test_checkerboard_becomes_three_rectangles():
    rects = [(2, 3, 4, 5, -1.0), (6, 3, 4, 5, 1.0), (6, 8, 4, 5, -1.0), (2, 8, 4, 5, 1.0)]
    assert opencv_rects(rects) == [(2, 3, 8, 10, 1.0), (2, 3, 4, 5, -2.0), (6, 8, 4, 5, -2.0)]


def test_exported_cascade_agrees_with_us_per_window(haar_model, seen, tmp_path):
    model = haar_model
    path = tmp_path / "cascade.xml"
    path.write_text(cascade_xml(model, 0.0))
    cascade = cv2.CascadeClassifier(str(path))
    assert not cascade.empty()
    rng = np.random.default_rng(1)
    windows = seen[rng.choice(len(seen), 5000, replace=False)]
    ours = model.decision_function(windows) > 0
    theirs = np.array([len(cascade.detectMultiScale(w, 1.5, 0, minSize=model.window,
                                                    maxSize=model.window)) > 0
                       for w in windows])
    assert ours.sum() > 500 and (~ours).sum() > 500
    assert np.mean(ours == theirs) >= 0.999


def test_exported_cascade_finds_the_astronaut(haar_model, astronaut, tmp_path):
    model = haar_model
    path = tmp_path / "cascade.xml"
    path.write_text(cascade_xml(model, DetectionParams().threshold))
    cascade = cv2.CascadeClassifier(str(path))
    boxes = cascade.detectMultiScale(astronaut, 1.1, 5, minSize=(19, 19))
    assert len(boxes) >= 1
    # the model's own box mapping, as export-opencv prints it for OpenCV users
    faces = detect_module.window_to_box(np.asarray(boxes), model.detection["box_scale"],
                                        model.detection["box_shift"])
    assert iou_matrix(faces, [[177, 66, 95, 95]]).max() > 0.4


def test_export_command_writes_a_loadable_cascade(tmp_path):
    result = run_cli("export-opencv", "default", str(tmp_path / "c.xml"))
    assert result.returncode == 0, result.stderr
    assert not cv2.CascadeClassifier(str(tmp_path / "c.xml")).empty()
