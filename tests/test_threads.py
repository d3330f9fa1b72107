"""A fixed input gives the identical model and operating point on 1 and 2 threads."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from facedetect.training import AdaBoostDB, CostSensitiveAdaBoost
from facedetect.training.threshold import CostSensitiveThreshold


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="numba has one thread here")
@pytest.mark.parametrize("make", [lambda: AdaBoostDB(15, (1, 5)),
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
