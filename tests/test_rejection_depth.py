"""benchmarks.rejection_depth stops a window where the scanner does (oracle: the scanner)."""

from __future__ import annotations

import cv2
import numpy as np
from skimage import data

import facedetect
from benchmarks import rejection_depth
from facedetect.detector._multiscale import params_for, scanner_for
from facedetect.detector._scan import LevelScanner


def test_windows_the_depth_count_never_stops_are_the_ones_the_scanner_keeps(monkeypatch):
    monkeypatch.setattr(rejection_depth, "WINDOWS_PER_LEVEL", 3)
    model = facedetect.load_model("default")
    params = params_for(model)
    scanner = scanner_for(model, params)
    windows = rejection_depth.sample_windows(scanner.window, params)
    # and windows on the astronaut's face, which the scan keeps
    grey = cv2.cvtColor(data.astronaut(), cv2.COLOR_RGB2GRAY)
    x, y, w, h = facedetect.detect(grey).windows[0]
    faces = [cv2.resize(grey[y + d:y + d + h, x + e:x + e + w], scanner.window,
                        interpolation=cv2.INTER_AREA) for d in (-2, 0, 2) for e in (-2, 0, 2)]
    windows = np.concatenate([windows, np.stack(faces)])
    scores = model.running_scores(windows)
    stopped = rejection_depth.stopping_stumps(scores, scanner.coarse_reject_at)
    # a scanner whose threshold is the coarse pass's has the coarse pass's levels
    coarse = LevelScanner(model, scanner.coarse_threshold)
    np.testing.assert_array_equal(coarse.reject_at, scanner.coarse_reject_at)
    kept = np.array([len(coarse.scan(window)[2]) == 1 for window in windows])
    np.testing.assert_array_equal(
        kept, (stopped == model.n_stumps) & (scores[:, -1] > scanner.coarse_threshold))
    assert 0 < kept.sum() < len(windows) and 1 < stopped.mean() < model.n_stumps
