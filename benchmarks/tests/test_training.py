"""The one-command benchmark's model comparison: a spilled run's weights differ from the
shipped ones in their last digit, and that is still the shipped model."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks.training import ALPHA_RTOL, same_stumps
from facedetect.detector import shipped_model_path


@pytest.fixture(scope="module")
def shipped_stumps() -> list[dict]:
    return json.loads(shipped_model_path("default").read_text())["stumps"]


def test_a_model_is_the_same_as_itself(shipped_stumps):
    assert same_stumps(shipped_stumps, [dict(s) for s in shipped_stumps])


def test_weights_moved_in_their_last_digits_are_the_same_model(shipped_stumps):
    # The spilled --memory 3 run's largest move, 1.4e-14 relative, on every stump.
    moved = [dict(s, alpha=s["alpha"] * (1 + 1.4e-14)) for s in shipped_stumps]
    assert moved != shipped_stumps
    assert same_stumps(moved, shipped_stumps)


@pytest.mark.parametrize("change", [
    lambda s: dict(s, alpha=s["alpha"] * (1 + 10 * ALPHA_RTOL)),
    lambda s: dict(s, threshold=float(np.nextafter(s["threshold"], np.inf))),
    lambda s: dict(s, polarity=-s["polarity"]),
    lambda s: dict(s, feature=s["feature"] + 1),
])
def test_one_changed_stump_is_another_model(shipped_stumps, change):
    changed = list(shipped_stumps)
    changed[700] = change(changed[700])
    assert not same_stumps(changed, shipped_stumps)


def test_a_stump_more_or_fewer_is_another_model(shipped_stumps):
    assert not same_stumps(shipped_stumps[:-1], shipped_stumps)
    assert not same_stumps(shipped_stumps + shipped_stumps[:1], shipped_stumps)
