"""The library's front door: ``import facedetect`` gives detect, load_model, train_detector
and the estimators, with the command's answers and the command's defaults."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import facedetect
from facedetect.errors import FacedetectError

from .conftest import SHARED, data_folder, shipped_default_digests

DEV = (data_folder("mit-cmu-dev", "images") or SHARED / "mit-cmu-dev") / "images"
REFERENCE_BOXES = Path(__file__).parent / "models" / "default_dev_boxes.json"


def test_the_front_door_names_resolve_and_import_lazily():
    for name in facedetect.__all__:
        assert getattr(facedetect, name) is not None, name
    assert {"detect", "load_model", "train_detector", "TrainConfig", "AdaBoostDB"} <= set(
        facedetect.__all__)
    # the commands start without numba or OpenCV: the front door loads on first use
    code = "import facedetect, sys; print('numba' in sys.modules, 'cv2' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split() == ["False", "False"], out.stderr
    with pytest.raises(AttributeError):
        facedetect.no_such_thing  # noqa: B018


def test_every_package_declares_all_and_every_declared_name_exists():
    packages = [facedetect] + [importlib.import_module(f"facedetect.{info.name}")
                               for info in pkgutil.iter_modules(facedetect.__path__)
                               if info.ispkg and info.name != "models"]
    for package in packages:
        assert hasattr(package, "__all__"), package.__name__
        missing = [name for name in package.__all__ if not hasattr(package, name)]
        assert not missing, (package.__name__, missing)


@pytest.mark.slow
@pytest.mark.skipif(not DEV.is_dir(), reason="the MIT+CMU development images are not here")
def test_facedetect_detect_equals_the_detect_command_box_for_box():
    result = subprocess.run([sys.executable, "-m", "facedetect", "detect", str(DEV), "--json"],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert len(printed) == 44 and sum(len(r["faces"]) for r in printed) > 100
    detector = facedetect.Detector()          # loaded once, as the command does
    reference = json.loads((REFERENCE_BOXES).read_text())
    assert reference["model_sha256"] in shipped_default_digests(), \
        "the shipped model changed: regenerate tests/models/default_dev_boxes.json"
    for report in printed:
        found = detector.detect(report["image"])
        assert [[round(float(v), 1) for v in box] for box in found.boxes] == \
            [face["box"] for face in report["faces"]], report["image"]
        # the boxes the shipped model gave before the detector object existed
        np.testing.assert_allclose(found.boxes.reshape(-1, 4), np.reshape(
            reference["boxes"][Path(report["image"]).name], (-1, 4)), atol=0.006)


def test_detect_takes_a_path_a_pil_image_or_an_array_alike(tmp_path):
    from skimage import data
    rgb = data.astronaut()
    path = tmp_path / "astronaut.png"
    Image.fromarray(rgb).save(path)
    boxes = [facedetect.detect(image).boxes
             for image in (rgb, Image.fromarray(rgb), path, str(path), rgb / 255.0)]
    assert len(boxes[0]) >= 1   # her face
    for other in boxes[1:]:
        np.testing.assert_array_equal(other, boxes[0])
    # the model's own operating point, unless overridden
    assert len(facedetect.detect(rgb, threshold=1e9).boxes) == 0
    with pytest.raises(FacedetectError, match="shape"):
        facedetect.detect(np.zeros((4, 4, 2)))
    with pytest.raises(FacedetectError, match="smaller than the 24x24 window"):
        facedetect.detect(np.zeros((10, 40), np.uint8))
    with pytest.raises(FacedetectError, match="min_neighbors"):
        facedetect.detect(rgb, min_neighbors=-1)


def test_a_detector_prepared_once_answers_as_detect_does(tmp_path, monkeypatch):
    from skimage import data
    rgb = data.astronaut()
    detector = facedetect.Detector("default")
    before = detector.params
    found = detector.detect(rgb)
    np.testing.assert_array_equal(found.boxes, facedetect.detect(rgb).boxes)
    # a call's overrides are its own: the detector's settings stay, and the result is
    # what a detector prepared with them gives
    strict = detector.detect(rgb, threshold=before.threshold + 5, min_neighbors=4)
    assert detector.params is before
    np.testing.assert_array_equal(strict.boxes, facedetect.Detector(
        threshold=before.threshold + 5, min_neighbors=4).detect(rgb).boxes)
    assert len(detector.detect(rgb, threshold=1e9)) == 0
    with pytest.raises(FacedetectError, match="unknown scan setting 'treshold'"):
        detector.detect(rgb, treshold=3)
    with pytest.raises(FacedetectError, match="scale_factor"):
        detector.detect(rgb, scale_factor=1.0)
    # one record per face, with its box and score, as detectMultiScale's arrays give
    faces = list(found)
    assert len(faces) == len(found) >= 1
    assert [face.box for face in faces] == [tuple(b) for b in found.boxes.tolist()]
    assert [face.score for face in faces] == found.scores.tolist()


def test_detect_loads_a_model_file_once_until_it_changes(tmp_path, monkeypatch):
    import os

    from facedetect.detector._model import HaarDetectorModel
    copy = tmp_path / "mine.json"
    copy.write_bytes(importlib.resources.files("facedetect").joinpath(
        "models", "default.json").read_bytes())
    loads = []
    original = HaarDetectorModel.load.__func__
    monkeypatch.setattr(HaarDetectorModel, "load", classmethod(
        lambda cls, path: loads.append(path) or original(cls, path)))
    image = np.random.default_rng(0).integers(0, 256, (60, 80), dtype=np.uint8)
    for _ in range(3):
        facedetect.detect(image, copy)
    assert len(loads) == 1
    facedetect.detect(image, str(copy), threshold=1e9)   # same file, its own settings
    assert len(loads) == 1
    stat = copy.stat()
    os.utime(copy, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10 ** 9))   # changed since
    facedetect.detect(image, copy)
    assert len(loads) == 2


def test_load_model_by_name_or_path_and_one_model_type(tmp_path):
    from .test_cascade import REFERENCE_CASCADE
    default, cascade = facedetect.load_model("default"), facedetect.load_model(REFERENCE_CASCADE)
    assert type(default) is type(cascade) is facedetect.HaarDetectorModel
    assert cascade.stages and not default.stages
    # The cascade that shipped before: one line saying what stands in for it.
    with pytest.raises(FacedetectError, match="no longer shipped.*export-opencv default"):
        facedetect.load_model("cascade")
    copy = tmp_path / "mine.json"
    copy.write_bytes(importlib.resources.files("facedetect").joinpath(
        "models", "default.json").read_bytes())
    assert facedetect.load_model(copy).n_stumps == default.n_stumps
    assert facedetect.load_model(default) is default
    from facedetect.modelfile._schema import digest
    for model in (default, cascade, facedetect.Detector().model):
        assert model.document["sha256"] == digest(model.document)
    windows = np.random.default_rng(0).integers(0, 256, (5, *default.window[::-1]), dtype=np.uint8)
    assert default.decision_function(windows).shape == (5,)
    assert set(default.predict(windows)) <= {0, 1}
    with pytest.raises(FacedetectError):
        facedetect.load_model(tmp_path / "missing.json")


def _train_parser():
    import argparse

    from facedetect.cli._main import build_parser
    commands = next(action for action in build_parser()._actions
                    if isinstance(action, argparse._SubParsersAction))
    return commands.choices["train"]


def test_train_without_flags_trains_the_settings_the_shipped_model_records():
    # The reference: the config the shipped default.json records it was trained with,
    # which the default recipe trained.
    from facedetect.cli._recipe_args import config_from
    parse = _train_parser().parse_args
    trained = config_from(parse([]))
    recorded = facedetect.load_model().document["training"]["config"]
    shared = [name for name in trained.as_dict() if name in recorded]
    assert len(shared) >= 25
    assert {name: trained.as_dict()[name] for name in shared} == \
        {name: recorded[name] for name in shared}
    # the target the image point was chosen at, recorded with its choice before the
    # training config held it
    target = facedetect.load_model().calibration["image"]["target_false_alarms_per_megapixel"]
    assert trained.target_false_alarms_per_megapixel == target
    newer = set(trained.as_dict()) - set(recorded) - {"target_false_alarms_per_megapixel"}
    assert not any(trained.as_dict()[name] for name in newer), newer   # predates them: off
    # a flag over the recipe; another recipe, as its description gives it
    assert config_from(parse(["--rounds", "7"])) == replace(trained, rounds=7)
    cbcl = config_from(parse(["--recipe", "cbcl"]))
    assert (cbcl.window, cbcl.framing, cbcl.tilted, cbcl.channels, cbcl.cost) == \
        ((19, 19), 1.75, False, False, (1.0, 1.0))


def test_each_default_train_help_states_is_what_train_without_the_flag_trains():
    # The value a run takes comes from the recipe, not from the help's constants: read each
    # "(default VALUE)" of a setting flag and compare it with the config a bare run trains.
    from facedetect.cli._recipe_args import chosen_recipe, config_from
    parser = _train_parser()
    bare = parser.parse_args([])
    trained = dict(config_from(bare).as_dict(), recipe=chosen_recipe(bare).name)
    stated = {}
    for action in parser._actions:
        said = re.match(r":? ([\w.]+)[;,)]", (action.help or "").partition("(default")[2])
        if said and action.dest in trained:
            word = said[1]
            stated[action.dest] = {"on": True, "off": False}.get(
                word, float(word) if re.fullmatch(r"[\d.]+", word) else word)
    assert {"recipe", "rounds", "seed", "holdout", "jitter", "bootstrap_rounds"} <= set(stated)
    assert stated == {name: trained[name] for name in stated}


def test_the_settings_classes_take_keyword_arguments_only():
    from facedetect.pipeline import CascadeConfig, RunOptions
    from facedetect.reproduce import PaperConfig
    from facedetect.reproduce._cbcl_sweep import SweepSettings
    for config in (facedetect.TrainConfig, facedetect.DetectionParams, CascadeConfig,
                   RunOptions, PaperConfig, SweepSettings):
        with pytest.raises(TypeError):
            config((1, 10))                            # keyword-only fields


def test_one_cost_check_for_the_flag_the_config_and_the_estimators():
    from facedetect.costs import InvalidCost
    from facedetect.pipeline._config import check_config
    bad = (1.0, 2e6)
    with pytest.raises(InvalidCost, match="ratio"):
        check_config(facedetect.TrainConfig(cost=bad))
    with pytest.raises(ValueError, match="ratio"):      # scikit-learn's convention
        facedetect.AdaBoostDB(n_rounds=2, cost=bad).fit(np.eye(4), [0, 0, 1, 1])
    result = subprocess.run([sys.executable, "-m", "facedetect", "train", "--cost", "1,2e6"],
                            capture_output=True, text=True)
    assert result.returncode == 2 and "ratio must be at most 1e+06" in result.stderr


def test_detection_reads_nothing_of_the_training_record():
    # the detection section and the stumps' features are all a scan reads: a document
    # without its training record, operating point or any other section scans the same
    import copy

    from skimage import data
    from facedetect.detector._model import HaarDetectorModel
    model = facedetect.load_model()
    document = copy.deepcopy(model.document)
    for section in ("training", "operating_point"):
        document.pop(section)
    alone = HaarDetectorModel.from_document(document)
    rgb = data.astronaut()
    np.testing.assert_array_equal(facedetect.Detector(alone).detect(rgb).boxes,
                                  facedetect.detect(rgb).boxes)
    assert set(model.detection) >= {"window", "framing", "box_scale", "box_shift",
                                     "threshold", "min_neighbors", "scale_factor", "step",
                                     "min_size", "pyramid", "rejection"}


def test_the_stub_declares_the_lazy_front_door():
    # editors and type checkers read facedetect/__init__.pyi: it must name what
    # __init__.py imports on first use, from where it really lives
    import ast
    stub = ast.parse((Path(facedetect.__file__).with_suffix(".pyi")).read_text())
    imported = {}
    for node in stub.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                imported[alias.asname or alias.name] = (node.module, alias.name)
        if isinstance(node, ast.Assign) and node.targets[0].id == "__all__":
            declared = ast.literal_eval(node.value)
    assert sorted(declared) == sorted(facedetect.__all__) == sorted(imported)
    for name, (module, attribute) in imported.items():
        real = getattr(importlib.import_module(f"facedetect.{module}"), attribute)
        assert getattr(facedetect, name) is real, name
