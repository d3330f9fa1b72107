"""Attentional cascades: the scanner, the window scores and OpenCV agree stage by stage."""

from __future__ import annotations

import copy

import cv2
import numpy as np
import pytest
from PIL import Image

from facedetect.cli.detect_cmd import default_model_path
from facedetect.detector.export import cascade_xml
from facedetect.detector.model import HaarDetectorModel
from facedetect.detector.scan import LevelScanner
from facedetect.images import to_grey
from facedetect.model_file import reseal
from facedetect.model_schema import check_document


def cascade_of(model: HaarDetectorModel, counts, thresholds) -> HaarDetectorModel:
    """The model's stumps cut into stages with the given thresholds."""
    document = copy.deepcopy(model.document)
    document.pop("operating_point", None)
    document.pop("detection", None)
    document["features"].pop("rejection", None)
    document["stages"] = [{"stumps": int(n), "threshold": float(t)}
                          for n, t in zip(counts, thresholds)]
    return HaarDetectorModel.from_document(reseal(document))


@pytest.fixture(scope="module")
def photo():
    from skimage import data
    return to_grey(Image.fromarray(data.astronaut()))


def photo_windows(photo, step=3):
    views = np.lib.stride_tricks.sliding_window_view(photo, (19, 19))[::step, ::step]
    return views.reshape(-1, 19, 19)


@pytest.fixture(scope="module")
def cascade(photo):
    # Stage thresholds at the median stage sums of the photo's windows: every stage rejects.
    plain = HaarDetectorModel.load(default_model_path())
    scores = plain.running_scores(photo_windows(photo))
    first = np.median(scores[:, 9])
    second = np.median((scores[:, 49] - scores[:, 9])[scores[:, 9] > first])
    return cascade_of(plain, [10, 40, 250], [first, second, 0.5])


def test_stage_sums_restart_and_earlier_stages_reject(cascade, photo):
    windows = photo_windows(photo, step=5)
    scores = cascade.running_scores(windows)
    plain = HaarDetectorModel.load(default_model_path()).running_scores(windows)
    # Stage 2's running sums are the plain sums less the plain sum after stage 1.
    np.testing.assert_allclose(scores[:, 10:50], plain[:, 10:50] - plain[:, [9]], atol=1e-9)
    decision = cascade.decision_function(windows)
    (_, first), (_, second), _ = cascade.stages
    rejected = (scores[:, 9] <= first) | (scores[:, 49] <= second)
    assert rejected.any() and (~rejected).any()
    assert np.isneginf(decision[rejected]).all()
    np.testing.assert_array_equal(decision[~rejected], scores[~rejected, -1])
    assert cascade.threshold == 0.5


def test_scanner_keeps_exactly_the_windows_the_cascade_accepts(cascade, photo):
    level = np.ascontiguousarray(photo[100:260, 120:330])
    for early in (True, False):
        scanner = LevelScanner(cascade, cascade.threshold, early_rejection=early)
        xs, ys, scores = scanner.scan(level, step=1)
        rows, cols = level.shape[0] - 18, level.shape[1] - 18
        windows = np.lib.stride_tricks.sliding_window_view(level, (19, 19))[:rows, :cols]
        decision = cascade.decision_function(windows.reshape(-1, 19, 19)).reshape(rows, cols)
        expected = np.argwhere(decision > cascade.threshold)
        assert len(expected) > 0
        assert sorted(zip(ys.tolist(), xs.tolist())) == sorted(map(tuple, expected.tolist()))
        np.testing.assert_array_equal(scores, decision[ys, xs])


def test_exported_cascade_agrees_with_us_per_window(cascade, cbcl, tmp_path):
    path = tmp_path / "cascade.xml"
    path.write_text(cascade_xml(cascade, cascade.threshold))
    opencv = cv2.CascadeClassifier(str(path))
    assert not opencv.empty()
    rng = np.random.default_rng(1)
    windows = cbcl.images[rng.choice(len(cbcl.images), 4000, replace=False)]
    ours = cascade.decision_function(windows) > cascade.threshold
    theirs = np.array([len(opencv.detectMultiScale(w, 1.5, 0, minSize=(19, 19),
                                                   maxSize=(19, 19))) > 0 for w in windows])
    assert ours.sum() > 300 and (~ours).sum() > 300
    assert np.mean(ours == theirs) >= 0.999


def test_stages_are_checked_when_a_model_loads(cascade):
    from facedetect.errors import FacedetectError
    document = copy.deepcopy(cascade.document)
    document["stages"][0]["stumps"] = 11      # no longer adds up to 300
    with pytest.raises(FacedetectError, match="add up"):
        check_document(reseal(document), "m.json")
    document["stages"] = [{"stumps": 300, "threshold": "high"}]
    with pytest.raises(FacedetectError, match="stages"):
        check_document(reseal(document), "m.json")
