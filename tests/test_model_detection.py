"""The model file's detection section: everything a scan reads in one section, and files of
the previous release (version 1) migrated on read to scan exactly as they did."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import numpy as np
import pytest

import facedetect
from facedetect.detector._api import shipped_model_path
from facedetect.detector._model import HaarDetectorModel
from facedetect.detector._multiscale import params_for
from facedetect.errors import FacedetectError
from facedetect.modelfile._io import load_document, save_document
from facedetect.modelfile._schema import check_document, digest

MODELS = Path(__file__).resolve().parent / "models"
# default.json as the previous release shipped it (version 1; the same model is shipped as
# haar.json now, beside the channel default), and its 20-stage cascade
PREVIOUS_DEFAULT = MODELS / "default_v1.json.gz"
PREVIOUS_CASCADE = MODELS / "cascade.json"


@pytest.fixture(scope="module")
def previous_default() -> dict:
    return json.loads(gzip.decompress(PREVIOUS_DEFAULT.read_bytes()))


def _v1_sealed(document: dict) -> dict:
    document["sha256"] = digest(document)
    return document


def test_the_previous_releases_default_loads_in_the_current_layout(previous_default, tmp_path):
    # That release's default was the 900-round haar.json shipped until 2026-11-29.
    assert previous_default["version"] == 1 and "rejection" in previous_default["features"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(previous_default))
    old = HaarDetectorModel.load(path)
    assert old.document["version"] == 3
    assert old.document["sha256"] == digest(old.document)     # sealed anew
    # how the operating points were chosen left the detection section for calibration
    assert "search_scan" not in old.detection["opencv"] and "source" not in old.detection
    assert old.calibration["image"]["source"] == previous_default["detection"]["source"]
    assert old.document["stumps"] == previous_default["stumps"]
    assert old.detection["opencv"]["threshold"] == 8.769209
    # the rejection levels moved from the features to the detection section
    assert set(old.document["features"]) == {"kind", "normalization", "pool_index", "rects",
                                             "tilted"}
    assert len(old.rejection[1]) == old.n_stumps == 900
    from skimage import data
    image = data.astronaut()
    found = facedetect.Detector(old).detect(image)
    assert len(found.boxes) >= 1
    np.testing.assert_array_equal(found.boxes, facedetect.detect(image, model=path).boxes)


def test_the_previous_releases_cascade_keeps_its_stages_and_bilinear_levels():
    model = HaarDetectorModel.load(PREVIOUS_CASCADE)
    raw = json.loads(PREVIOUS_CASCADE.read_text())
    assert raw["version"] == 1 and "stages" in raw and "pyramid" not in raw["detection"]
    assert [n for n, _ in model.stages] == [st["stumps"] for st in raw["stages"]]
    params = params_for(model)
    assert (params.pyramid, params.step, params.min_neighbors) == ("linear", "auto", 3)
    assert model.detection["window"] == raw["features"]["window"]
    assert (model.detection["box_scale"], model.detection["box_shift"]) == (2.0, 0.1)


def test_a_version_1_file_without_an_image_point_scans_at_its_window_point(
        previous_default, tmp_path):
    document = copy.deepcopy(previous_default)
    del document["detection"]
    del document["features"]["framing"]           # the oldest: in the training config only
    path = tmp_path / "old.json"
    path.write_text(json.dumps(_v1_sealed(document)))
    model = HaarDetectorModel.load(path)
    section = model.detection
    assert model.image_point is None and section["applies_to"] == "windows"
    assert section["threshold"] == document["operating_point"]["threshold"]
    assert (section["framing"], section["box_scale"], section["box_shift"]) == (
        2.2, 1.590909, 0.079545)
    assert (section["min_size"], section["min_neighbors"], section["pyramid"]) == (24, 3, "area")
    assert model.rejection is not None


@pytest.mark.parametrize("change, message", [
    (lambda d: d.pop("detection"), "needs its detection section"),
    (lambda d: d["detection"].update(window=[24]), "detection.window"),
    (lambda d: d["detection"].update(framing=9), "detection.framing"),
    (lambda d: d["detection"].pop("box_scale"), "detection.box_scale"),
    (lambda d: d["detection"].update(applies_to="pictures"), "applies_to"),
    (lambda d: d["detection"].pop("pyramid"), "detection.pyramid"),
    (lambda d: d["detection"]["rejection"].update(thresholds=[1.0]), "detection.rejection"),
    (lambda d: d["detection"].update(stages=[{"stumps": 1, "threshold": 0.0}]),
     "detection.stages"),
    (lambda d: d["features"].update(window=[24, 24]), "unknown features field 'window'"),
    (lambda d: d.update(stages=[]), "unknown field 'stages'"),
])
def test_a_bad_detection_section_is_refused_by_name(tmp_path, change, message):
    document = copy.deepcopy(load_document(shipped_model_path()))
    change(document)
    path = save_document(tmp_path / "m.json", document)
    with pytest.raises(FacedetectError, match=message):
        HaarDetectorModel.load(path)


def test_a_malformed_version_1_file_is_one_line(previous_default):
    document = copy.deepcopy(previous_default)
    document["operating_point"]["threshold"] = "high"
    del document["detection"]
    with pytest.raises(FacedetectError, match="malformed version 1 model"):
        check_document(_v1_sealed(document), "old.json")


@pytest.mark.parametrize("name", ["default", "haar"])
def test_the_version_2_shipped_models_migrate_to_the_shipped_files(name):
    # Oracle: the files as shipped before the calibration section, read now, are the
    # shipped files: every stump and scan setting kept, the provenance moved, nothing lost.
    from facedetect.detector._api import shipped_model_path
    from facedetect.modelfile._io import load_document
    from facedetect.modelfile._schema import check_document
    old = json.loads(gzip.decompress((MODELS / f"{name}_v2.json.gz").read_bytes()))
    assert old["version"] == 2 and "calibration" not in old
    migrated = check_document(json.loads(json.dumps(old)), f"{name}_v2.json")
    # the default now carries a verifier: its one-stage model is the file migrated
    assert migrated == facedetect.load_model(shipped_model_path(name)).one_stage().document
    assert load_document(shipped_model_path(name))["stumps"] == migrated["stumps"]
    moved = {**migrated["detection"], **migrated["calibration"]["image"]}
    opencv = old["detection"].pop("opencv", None)
    assert {k: v for k, v in moved.items() if k != "opencv"} == old["detection"]
    if opencv is not None:
        assert {**migrated["detection"]["opencv"], **migrated["calibration"]["opencv"]} == \
            opencv
