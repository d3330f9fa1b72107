"""A fixed input gives the identical model, operating point and detections on 1 and 2
threads."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from facedetect.training import AdaBoostDB, CostSensitiveAdaBoost
from facedetect.training._threshold import CostSensitiveThreshold


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="numba has one thread here")
@pytest.mark.parametrize("make", [lambda: AdaBoostDB(15, (1, 5)),
                                  lambda: AdaBoostDB(15, (1, 5), max_features=0.3,
                                                     random_state=4),
                                  lambda: CostSensitiveAdaBoost(5, (3, 1)),
                                  lambda: CostSensitiveThreshold(AdaBoostDB(15, (1, 5)), (1, 5))])
def test_models_are_identical_across_thread_counts(make):
    rng = np.random.default_rng(8)
    X = rng.normal(size=(600, 300)).astype(np.float32)
    y = (X[:, :4].sum(axis=1) + rng.normal(size=600) > 0.5).astype(int)
    before = numba.get_num_threads()
    try:
        fitted = []
        for threads in (1, 2):
            numba.set_num_threads(threads)
            fitted.append(make().fit(X, y))
    finally:
        numba.set_num_threads(before)
    one, two = fitted
    one = getattr(one, "estimator_", one)
    two_estimator = getattr(two, "estimator_", two)
    assert one.features_.tolist() == two_estimator.features_.tolist()
    assert one.thresholds_.tobytes() == two_estimator.thresholds_.tobytes()
    assert one.alphas_.tobytes() == two_estimator.alphas_.tobytes()
    if hasattr(two, "threshold_"):
        assert fitted[0].threshold_ == two.threshold_


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="numba has one thread here")
def test_detections_are_identical_across_thread_counts():
    import importlib.resources

    from PIL import Image
    from skimage import data

    from facedetect.detector._multiscale import detect_faces, params_for, scanner_for
    from facedetect.detector._model import HaarDetectorModel
    from facedetect.images import to_grey

    model = HaarDetectorModel.load(
        importlib.resources.files("facedetect") / "models" / "default.json")
    grey = to_grey(Image.fromarray(data.astronaut()))
    params = params_for(model)
    before = numba.get_num_threads()
    found = []
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            # Every scan call through the parallel build.
            scanner = scanner_for(model, params, parallel_min_windows=0)
            found.append(detect_faces(grey, model, params, scanner=scanner))
    finally:
        numba.set_num_threads(before)
    one, two = found
    assert len(one.boxes) >= 1
    assert one.windows.tolist() == two.windows.tolist()
    assert one.scores.tobytes() == two.scores.tobytes()
    assert (one.raw_count, one.scanned) == (two.raw_count, two.scanned)
