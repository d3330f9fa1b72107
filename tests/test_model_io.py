import json

import numpy as np
import pytest

from facedetect.errors import FacedetectError
from facedetect.modelfile._detection import detection_section
from facedetect.training import AdaBoost, AdaBoostDB, CostSensitiveAdaBoost
from facedetect.training._model_io import load_estimator, save_model


@pytest.fixture
def trained():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 8))
    y = (X[:, 0] - X[:, 3] + 0.5 * rng.normal(size=120) > 0).astype(int)
    return AdaBoostDB(n_rounds=8, cost=(1, 4), selection="loss").fit(X, y), X


HAAR = {"kind": "haar", "normalization": "opencv-variance"}
DETECTION = detection_section((19, 19), None, 0.0)


@pytest.mark.parametrize("cls", [AdaBoostDB, CostSensitiveAdaBoost, AdaBoost])
def test_round_trip_gives_identical_decisions(tmp_path, cls):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(100, 5))
    y = (X[:, 1] > 0.2).astype(int)
    model = cls(n_rounds=5).fit(X, y)
    path = save_model(tmp_path / "m.json", model, training={"seed": 3})
    loaded, document = load_estimator(path)
    assert type(loaded) is cls and document["training"] == {"seed": 3}
    assert np.array_equal(loaded.decision_function(X), model.decision_function(X))
    assert np.array_equal(loaded.predict(X), model.predict(X))


def test_haar_features_round_trip(tmp_path, trained):
    model, _ = trained
    rects = [[[0, 0, 2, 3, -1.0], [2, 0, 2, 3, 1.0]]] * model.n_rounds_
    loaded, document = load_estimator(save_model(tmp_path / "m.json", model,
                                                 dict(HAAR, rects=rects), detection=DETECTION))
    assert document["features"]["rects"] == rects
    assert loaded.selection == "loss" and loaded.cost == (1.0, 4.0)


def _tamper(path, change):
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


@pytest.mark.parametrize("change, message", [
    (lambda d: d["stumps"][0].update(alpha=9.0), "checksum mismatch"),
    (lambda d: d.update(version=99), "unsupported version"),
    (lambda d: d.pop("format"), "format field missing"),
])
def test_tampered_files_are_rejected(tmp_path, trained, change, message):
    path = save_model(tmp_path / "m.json", trained[0])
    _tamper(path, change)
    with pytest.raises(FacedetectError, match=message):
        load_estimator(path)


def _resigned(path, change):
    """Malformed content with a valid checksum: validation must still catch it."""
    from facedetect.modelfile._io import digest as _digest
    document = json.loads(path.read_text())
    change(document)
    document["sha256"] = _digest(document)
    path.write_text(json.dumps(document))


@pytest.mark.parametrize("change, message", [
    (lambda d: d["stumps"][0].update(polarity=2), "stump 0 is malformed"),
    (lambda d: d["stumps"][1].update(feature=10_000), "stump 1 is malformed"),
    (lambda d: d.update(cost=[0, 1]), "cost"),
    (lambda d: d.update(algorithm="evil"), "algorithm must be one of"),
    (lambda d: d.update(algorithm=["db"]), "algorithm must be one of"),
    (lambda d: d.update(search="sideways"), "search must be"),
    (lambda d: d.update(selection=None), "selection must be"),
    (lambda d: d.update(features=[1, 2]), "features must be an object"),
    (lambda d: d.update(features=dict(HAAR, pool_index=[7] * len(d["stumps"])),
                        detection=DETECTION), "pool_index"),
    (lambda d: d.update(features=dict(HAAR, rects=[[]] * len(d["stumps"]))),
     "needs its detection section"),
    (lambda d: d.update(detection=DETECTION), "has no detection section"),
    (lambda d: d.update(training=[]), "training must be an object"),
    (lambda d: d.update(training={"heldout_names": "a.pgm"}), "heldout_names"),
    (lambda d: d.update(classes=[1, 1]), "two different labels"),
    (lambda d: d["stumps"][0].update(polarity=True), "stump 0 is malformed"),
    (lambda d: d["stumps"][0].update(alpha=1e308), "stump 0 is malformed"),
    (lambda d: d["stumps"][1].update(threshold=-1e300), "stump 1 is malformed"),
    (lambda d: d.update(extra=1), "unknown field 'extra'"),
    (lambda d: d.update(features=dict(HAAR, rects=[[[15, 15, 9, 9, 1.0]]] * len(d["stumps"])),
                        detection=DETECTION), "outside the window"),
    (lambda d: d.update(stumps=[]), "stumps must be a list of 1"),
])
def test_malformed_content_is_rejected(tmp_path, trained, change, message):
    path = save_model(tmp_path / "m.json", trained[0])
    _resigned(path, change)
    with pytest.raises(FacedetectError, match=message):
        load_estimator(path)


def test_unreadable_files(tmp_path):
    with pytest.raises(FacedetectError, match="not found"):
        load_estimator(tmp_path / "missing.json")
    (tmp_path / "junk.json").write_bytes(b"\x89PNG\r\n")
    with pytest.raises(FacedetectError, match="cannot read|not a facedetect model"):
        load_estimator(tmp_path / "junk.json")
    (tmp_path / "nan.json").write_text('{"format": NaN}')
    with pytest.raises(FacedetectError):
        load_estimator(tmp_path / "nan.json")


@pytest.mark.parametrize("text, message", [
    ('{"format": 1e999}', "out of range"),
    ('{"format": ' + "9" * 5000 + "}", "integer of 5000 digits"),
    ("[" * 100_000 + "]" * 100_000, "nested more than 32 levels deep"),
    ('{"format": Infinity}', "Infinity is not allowed"),
])
def test_json_that_python_would_misread_is_refused(tmp_path, text, message):
    (tmp_path / "m.json").write_text(text)
    with pytest.raises(FacedetectError, match=message):
        load_estimator(tmp_path / "m.json")


def test_oversized_model_files_are_refused_before_reading(tmp_path, monkeypatch):
    from facedetect.modelfile import _io as model_file
    monkeypatch.setattr(model_file, "MAX_MODEL_BYTES", 100)
    (tmp_path / "m.json").write_text(" " * 101 + "{}")
    with pytest.raises(FacedetectError, match="more than the 100 bytes a model may have"):
        load_estimator(tmp_path / "m.json")
    with pytest.raises(FacedetectError, match="is a folder"):
        load_estimator(tmp_path)


def test_every_algorithm_name_is_known_to_the_schema():
    from facedetect.modelfile._io import ALGORITHM_NAMES
    from facedetect.training._model_io import FILE_CLASSES as ALGORITHMS
    assert set(ALGORITHM_NAMES) == set(ALGORITHMS)


def test_save_is_atomic(tmp_path, trained):
    path = save_model(tmp_path / "m.json", trained[0])
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]
    assert path.read_text().startswith("{")


def _with_operating_point(tmp_path, trained, calibration=None):
    from facedetect.modelfile._io import save_document
    from facedetect.training._model_io import model_document
    from facedetect.training._operating_point import choose_operating_point
    model, X = trained
    y = (X[:, 0] - X[:, 3] > 0).astype(int)
    point = choose_operating_point(model.decision_function(X), y, (1, 4),
                                   calibration=calibration or "sigmoid")
    document = model_document(model, operating_point=dict(point.as_dict(), raw_threshold=0.0))
    return save_document(tmp_path / "op.json", document), point


@pytest.mark.parametrize("calibration", ["sigmoid", "isotonic"])
def test_operating_point_round_trips(tmp_path, trained, calibration):
    from facedetect.modelfile._io import load_document
    path, point = _with_operating_point(tmp_path, trained, calibration)
    stored = load_document(path)["operating_point"]
    assert stored["threshold"] == point.threshold and stored["calibration"] == point.calibration


@pytest.mark.parametrize("change, message", [
    (lambda p: p.update(threshold="0"), "finite threshold"),
    (lambda p: p.update(prior=1.0), "prior"),
    (lambda p: p.update(cost=[1, -4]), "positive costs"),
    (lambda p: p.update(rule="guess"), "known rule"),
    (lambda p: p.update(extreme="sometimes"), "known rule"),
    (lambda p: p.update(calibration={"method": "magic"}), "unknown method"),
    (lambda p: p.update(calibration={"method": "sigmoid", "a": "x", "b": 0}), "finite a"),
    (lambda p: p.update(calibration={"method": "isotonic", "x": [2, 1], "y": [0, 1]}),
     "increasing"),
    (lambda p: p.update(calibration={"method": "isotonic", "x": [1, 2], "y": [0, 2]}),
     "within"),
    (lambda p: p.clear() or p.update(threshold=1), "operating_point needs"),
])
def test_malformed_operating_point_is_rejected_even_with_a_fresh_checksum(
        tmp_path, trained, change, message):
    from facedetect.modelfile._io import load_document, reseal
    path, _ = _with_operating_point(tmp_path, trained)
    document = json.loads(path.read_text())
    change(document["operating_point"])
    path.write_text(json.dumps(reseal(document)))
    with pytest.raises(FacedetectError, match=message):
        load_document(path)


def test_devices_and_nesting_within_parsing_limits_are_refused(tmp_path):
    with pytest.raises(FacedetectError, match="not a regular file"):
        load_estimator("/dev/zero")
    # Deep enough to pass json.loads but not the checksum's re-encoding.
    nested = '{"format": "facedetect-model", "training": ' + "[" * 500 + "]" * 500 + "}"
    (tmp_path / "m.json").write_text(nested)
    with pytest.raises(FacedetectError, match="nested more than 32 levels"):
        load_estimator(tmp_path / "m.json")
