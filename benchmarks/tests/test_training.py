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


def test_the_verifier_section_is_compared_and_none_without_one(tmp_path):
    # _same_stumps reads the run's file and the shipped default's, whole or one section.
    from benchmarks.training import _same_stumps
    shipped = json.loads(shipped_model_path("default").read_text())
    stumps = shipped["verifier"]["model"]["stumps"]
    moved = [dict(s, alpha=s["alpha"] * (1 + 1e-14)) for s in stumps]
    changed = [dict(stumps[0], polarity=-stumps[0]["polarity"])] + stumps[1:]
    for name, verifier_stumps, same in (("moved", moved, True), ("changed", changed, False)):
        document = dict(shipped, verifier=dict(
            shipped["verifier"], model=dict(shipped["verifier"]["model"],
                                            stumps=verifier_stumps)))
        (tmp_path / f"{name}.json").write_text(json.dumps(document))
        assert _same_stumps(tmp_path / f"{name}.json", "verifier") is same
        assert _same_stumps(tmp_path / f"{name}.json") is True
    one_stage = {k: v for k, v in shipped.items() if k != "verifier"}
    (tmp_path / "one_stage.json").write_text(json.dumps(one_stage))
    assert _same_stumps(tmp_path / "one_stage.json", "verifier") is None
