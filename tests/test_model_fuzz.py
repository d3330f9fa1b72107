"""Property: a mutated model file loads as a working model or is refused with one clean
error, never a traceback. With the old checksum, any real change is refused."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from facedetect.detector._multiscale import DetectionParams, detect_faces, params_for
from facedetect.detector._model import HaarDetectorModel
from facedetect.errors import FacedetectError
from facedetect.modelfile._io import reseal
from facedetect.modelfile._schema import check_document

SHIPPED = Path(__file__).resolve().parents[1] / "facedetect" / "models" / "default.json"

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=6)


@pytest.fixture(scope="module")
def shipped_document():
    document = json.loads(SHIPPED.read_text())
    # A short model (and verifier) keeps each example fast; every field keeps its shape.
    _shorten(document)
    verifier_model = document.get("verifier", {}).get("model")
    if verifier_model is not None:
        _shorten(verifier_model)
        reseal(verifier_model)
    for rejection in (document["detection"]["rejection"],
                      document.get("verifier", {}).get("proposer", {}).get("rejection")):
        if rejection is not None:
            rejection["thresholds"] = rejection["thresholds"][:12]
    document = reseal(document)
    check_document(document, "shipped")   # the base of every example is a sound file
    return document


def _shorten(document: dict, stumps: int = 12) -> None:
    document["stumps"] = document["stumps"][:stumps]
    for name in ("rects", "pool_index", "tilted", "channels"):
        if name in document["features"]:
            document["features"][name] = document["features"][name][:stumps]


def _mutate(document, data):
    """Replace, delete or insert at one random place of the document."""
    node, parent, key = document, None, None
    while isinstance(node, (dict, list)) and node and data.draw(st.booleans()):
        keys = sorted(node) if isinstance(node, dict) else list(range(len(node)))
        parent, key = node, data.draw(st.sampled_from(keys))
        node = node[key]
    action = data.draw(st.sampled_from(["replace", "delete", "insert"]))
    if parent is None or action == "insert":
        target = parent if parent is not None else document
        if isinstance(target, dict):
            target[data.draw(st.text(max_size=6))] = data.draw(json_values)
        else:
            target.append(data.draw(json_values))
    elif action == "delete":
        del parent[key]
    else:
        parent[key] = data.draw(json_values)


GREY = np.random.default_rng(0).integers(0, 256, (48, 64), dtype=np.uint8)


# Derandomized: the same 600 mutations on every run, so that CI cannot fail by chance
# (run with --hypothesis-seed=N to explore others).
@pytest.mark.slow
@settings(max_examples=600, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), resealed=st.booleans())
def test_mutated_model_loads_and_works_or_is_refused_cleanly(tmp_path_factory,
                                                              shipped_document, data,
                                                              resealed):
    document = copy.deepcopy(shipped_document)
    _mutate(document, data)
    if resealed:
        document.pop("sha256", None)
        reseal(document)
    path = _scratch(tmp_path_factory) / "m.json"   # one file, rewritten: no 600 folders
    path.write_text(json.dumps(document))
    try:
        model = HaarDetectorModel.load(path)
    except FacedetectError as error:
        assert "\n" not in str(error)
        return
    assert resealed or document == shipped_document, "a changed file passed the checksum"
    try:
        params = params_for(model)
    except FacedetectError:
        return
    params = DetectionParams(**{**params.__dict__, "min_size": max(params.min_size, 19)})
    found = detect_faces(GREY, model, params)
    assert np.isfinite(found.scores).all()


_SCRATCH = {}


def _scratch(tmp_path_factory) -> Path:
    if "path" not in _SCRATCH:
        _SCRATCH["path"] = tmp_path_factory.mktemp("fuzz")
    return _SCRATCH["path"]


CASCADE = Path(__file__).resolve().parent / "models" / "cascade.json"


@pytest.fixture(scope="module")
def cascade_checkpoint():
    """The shipped cascade cut to its first three stages: a cascade checkpoint as
    ``train-detector --stages`` writes it (the model file of the finished stages)."""
    document = json.loads(CASCADE.read_text())
    stages = document["stages"][:3]
    count = sum(stage["stumps"] for stage in stages)
    document["stages"] = stages
    document["stumps"] = document["stumps"][:count]
    for name in ("rects", "pool_index"):
        if name in document["features"]:
            document["features"][name] = document["features"][name][:count]
    document["features"].pop("rejection", None)
    document["training"]["cascade_stages"] = document["training"]["cascade_stages"][:3]
    document.pop("operating_point", None)
    return reseal(document)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), resealed=st.booleans())
def test_mutated_cascade_checkpoint_resumes_or_is_refused_cleanly(tmp_path_factory,
                                                                  cascade_checkpoint, data,
                                                                  resealed):
    """A cascade checkpoint edited anywhere (with its checksum recomputed or not) gives
    stages and records that resuming can use, or one clean error; never a KeyError,
    IndexError or TypeError."""
    from facedetect.pipeline._settings import CascadeConfig
    from facedetect.pipeline._cascade_checkpoint import load_cascade_checkpoint
    from facedetect.pipeline._cascade_train import _stop_reason
    original = cascade_checkpoint
    document = copy.deepcopy(original)
    _mutate(document, data)
    if resealed:
        document.pop("sha256", None)
        reseal(document)
    path = _scratch(tmp_path_factory) / "c.json.checkpoint.json"
    path.write_text(json.dumps(document))
    run_config = original["training"]["config"]
    try:
        stages, records = load_cascade_checkpoint(path, run_config, original["n_features"])
    except FacedetectError as error:
        assert "\n" not in str(error)
        return
    assert resealed or document == original, "a changed checkpoint passed the checksum"
    assert len(stages) == len(records) >= 1
    assert sum(len(stumps) for stumps, _ in stages) == len(document["stumps"])
    _stop_reason(CascadeConfig(stages=20), records)      # what resuming reads first
    for record in records:                               # and what the report prints
        f"{record['stage']:2d} {record['stumps']:4d} {record['cost'][0]:g} " \
            f"{record['held_out_hit_rate']:.4f} {record['false_alarm_rate']:.3f} " \
            f"{record['seconds']:.0f} {record['mining_seconds']:.0f} " \
            f"{record['peak_rss_gib']:.2f}"


def test_a_missing_cascade_checkpoint_is_refused(tmp_path, cascade_checkpoint):
    from facedetect.pipeline._cascade_checkpoint import load_cascade_checkpoint
    with pytest.raises(FacedetectError, match="no checkpoint to resume from"):
        load_cascade_checkpoint(tmp_path / "none.json", {}, 1)


def test_an_untouched_cascade_checkpoint_resumes(tmp_path, cascade_checkpoint):
    """The fuzz test's starting point loads: it is not refused whatever it holds."""
    from facedetect.pipeline._cascade_checkpoint import load_cascade_checkpoint
    path = tmp_path / "c.json.checkpoint.json"
    path.write_text(json.dumps(cascade_checkpoint))
    stages, records = load_cascade_checkpoint(path, cascade_checkpoint["training"]["config"],
                                              cascade_checkpoint["n_features"])
    assert [len(stumps) for stumps, _ in stages] == [r["stumps"] for r in records]
    assert len(stages) == 3
