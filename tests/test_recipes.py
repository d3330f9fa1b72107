"""Named recipes (``train-detector --recipe``) and recipe files (``--config``): each recipe
fixes every setting whatever data exists, the shipped models are what their recipes say,
and the command line lays flags over a file over a recipe."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from facedetect.cli._recipe_args import config_from, expert_flag_lines
from facedetect.cli._train_cmd import configure
from facedetect.errors import FacedetectError, InvalidParameter
from facedetect.haar import haar_feature_pool
from facedetect.pipeline._config import feature_types
from facedetect.pipeline._recipes import RECIPES, read_recipe_file, recipe_config

MODELS = Path(__file__).resolve().parents[1] / "facedetect" / "models"
RESOLVED = ("window", "framing", "tilted", "channels", "jitter_shift", "posterize")


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    configure(parser)
    return parser.parse_args(list(argv))


def run_train(*argv, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "facedetect", "train", *map(str, argv)],
                          capture_output=True, text=True, timeout=600, env=env, cwd=cwd)


@pytest.mark.parametrize("name", ["faces", "opencv", "cbcl"])
def test_a_one_stage_recipe_leaves_nothing_to_the_data_found(name):
    config = RECIPES[name].config
    assert all(getattr(config, field) is not None for field in RESOLVED)


@pytest.mark.parametrize("name, model", [("faces", "default.json"), ("opencv", "haar.json")])
def test_the_shipped_models_were_trained_with_their_recipes_settings(name, model):
    # The model file records the settings it was trained with: the recipe must be them.
    recorded = json.loads((MODELS / model).read_text())["training"]["config"]
    recorded = {k: v for k, v in recorded.items() if not k.endswith("_sha256")}
    expected = recipe_config(name).as_dict()
    assert {k: expected[k] for k in recorded} == recorded


def test_the_cbcl_recipe_is_the_papers_pool_of_63960_features():
    config = recipe_config("cbcl")
    assert config.window == (19, 19) and config.framing == 1.75
    assert len(haar_feature_pool(*config.window, feature_types(config))) == 63_960


def test_the_object_recipe_is_an_exportable_cascade():
    recipe = RECIPES["object"]
    assert recipe.cascade and recipe.faces == "positives" and recipe.stages == 20
    assert recipe.config.channels is False   # OpenCV runs Haar features only


def test_a_recipe_file_lies_over_the_recipe_and_a_flag_over_the_file(tmp_path):
    path = tmp_path / "recipe.toml"
    path.write_text("rounds = 3\njitter = 5\ntilted = true\ncost = [1, 4]\n")
    config = config_from(parse("--recipe", "cbcl", "--config", str(path), "--rounds", "7"))
    assert (config.rounds, config.jitter, config.tilted, config.cost) == (7, 5, True,
                                                                          (1.0, 4.0))
    assert config.window == (19, 19)   # the recipe's, untouched by either
    assert config_from(parse("--recipe", "faces")) == recipe_config("faces")


def test_no_bootstrap_drops_the_stage_rounds_it_had_no_use_for(tmp_path):
    assert config_from(parse("--recipe", "cbcl", "--no-bootstrap")).stage_rounds is None
    path = tmp_path / "recipe.toml"   # unless the file asks for them
    path.write_text("stage_rounds = 50\n")
    assert config_from(parse("--recipe", "cbcl", "--no-bootstrap", "--config",
                             str(path))).stage_rounds == 50


@pytest.mark.parametrize("text, message", [
    ("jiter = 2\n", "unknown setting 'jiter'"),
    ('jitter = "x"\n', "jitter must be an integer"),
    ("cost = 3\n", "cost must be a pair"),
    ("jitter = 2\n[more]\nx = 1\n", "[more] is a table"),
    ("jitter = \n", "not a TOML file"),
])
def test_a_bad_recipe_file_is_refused_naming_it(tmp_path, text, message):
    path = tmp_path / "recipe.toml"
    path.write_text(text)
    with pytest.raises(FacedetectError, match="--config") as raised:
        read_recipe_file(path)
    assert message in str(raised.value)


def test_a_recipe_file_too_large_or_not_text_is_refused(tmp_path):
    big = tmp_path / "big.toml"
    big.write_text("# " + "x" * 70_000 + "\n")
    with pytest.raises(FacedetectError, match="more than the 65,536 bytes a recipe file"):
        read_recipe_file(big)
    # a pipe would block, /dev/zero never ends: neither is read
    with pytest.raises(FacedetectError, match="--config /dev/zero: not a regular file"):
        read_recipe_file("/dev/zero")
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(FacedetectError, match="not UTF-8"):
        read_recipe_file(binary)


def test_an_unknown_recipe_is_refused():
    with pytest.raises(InvalidParameter, match="recipe must be one of faces, opencv"):
        recipe_config("frontal")


def test_an_expert_flag_is_warned_of_with_the_line_that_replaces_it():
    lines = expert_flag_lines(parse("--jitter", "5", "--no-mirror", "--no-bootstrap",
                                    "--rounds", "9"))
    assert len(lines) == 2   # --no-bootstrap and --rounds stay on the command line
    assert "`jitter = 5`" in lines[0] or "`jitter = 5`" in lines[1]
    assert any("`mirror = false`" in line for line in lines)
    assert "--recipe cbcl" in expert_flag_lines(parse("--no-wild-faces"))[0]


@pytest.mark.parametrize("argv, message", [
    ([], "the faces recipe trains on faces from the wild, and none were found"),
    (["--recipe", "opencv"], "the opencv recipe trains on faces from the wild"),
    (["--recipe", "object"], "the object recipe trains on your samples"),
    (["--recipe", "faces", "--stages", "2"], "--recipe faces is one stage"),
    (["--recipe", "faces", "--no-wild-faces"], "contradict each other"),
    (["--recipe", "cbcl", "--faces", "somewhere"], "the cbcl recipe trains on CBCL's faces"),
])
def test_a_recipe_without_its_data_is_refused_in_one_line(argv, message, tmp_path):
    # The test session hides the faces from the wild (FACEDETECT_FACES=none).
    done = run_train(*argv, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert done.stderr.startswith("facedetect train: error:")


def test_the_faces_refusal_names_the_flags_that_give_them(tmp_path):
    line = run_train(cwd=tmp_path).stderr
    assert "--faces DIR" in line and "--recipe cbcl" in line


def test_help_states_each_recipes_settings():
    text = run_train("--help").stdout
    for name, window in (("faces", "window=24x24"), ("cbcl", "window=19x19")):
        stated = text.split(f"{name}: ", 1)[1].split(")", 2)
        assert window in " ".join(stated[:2])
    assert "cost=1,10" in text and "stages=20" in text


@pytest.mark.slow
def test_the_cbcl_recipe_trains_on_cbcls_faces_even_where_wild_faces_are_found(
        small_cbcl, tmp_path):
    from tests.test_wild_faces import HEADER
    folder = tmp_path / "faces"
    folder.mkdir()
    (folder / "faces.csv").write_text(HEADER)   # found, but never read by this recipe
    env = {**os.environ, "FACEDETECT_FACES": str(folder)}
    done = run_train("--recipe", "cbcl", "--no-bootstrap", "--rounds", "2", "--data",
                     small_cbcl, "--out", tmp_path / "m.json", "--json", env=env)
    assert done.returncode == 0, done.stderr
    model = json.loads((tmp_path / "m.json").read_text())
    assert model["training"]["config"]["window"] == [19, 19]
    assert "faces_sha256" not in model["training"]["config"]


@pytest.mark.slow
def test_the_object_recipe_trains_a_cascade_that_opencv_runs(small_cbcl, tmp_path):
    import cv2
    import numpy as np
    from PIL import Image

    from facedetect.data import load_cbcl
    from tests.test_detector_training import _write_pictures
    positives = tmp_path / "pos"
    positives.mkdir()
    cbcl = load_cbcl(small_cbcl)
    for k, face in enumerate(cbcl.images[cbcl.labels == 1][:60]):
        Image.fromarray(cv2.resize(face, (24, 24))).save(positives / f"p{k:03d}.png")
    negatives = _write_pictures(tmp_path / "neg", 20)
    out = tmp_path / "object.json"
    done = run_train("--recipe", "object", "--positives", positives, "--negatives", negatives,
                     "--stages", "2", "--min-hit-rate", "0.9", "--out", out, "--quiet")
    assert done.returncode == 0, done.stderr
    model = json.loads(out.read_text())
    config = model["training"]["config"]
    assert (config["tilted"], config["channels"]) == (True, False)   # the recipe's
    assert 1 <= len(model["training"]["cascade_stages"]) <= 2
    xml = tmp_path / "object.xml"
    exported = subprocess.run([sys.executable, "-m", "facedetect", "export-opencv", str(out),
                               str(xml)], capture_output=True, text=True, timeout=300)
    assert exported.returncode == 0, exported.stderr
    cascade = cv2.CascadeClassifier(str(xml))
    assert not cascade.empty()
    picture = np.full((96, 96), 128, np.uint8)
    picture[24:72, 24:72] = cv2.resize(cbcl.images[cbcl.labels == 1][0], (48, 48))
    cascade.detectMultiScale(picture)   # runs: OpenCV read every stage of it


def test_the_docs_table_of_recipes_is_the_recipes():
    text = (Path(__file__).resolve().parents[1] / "docs" / "detector-training.md").read_text()
    section = text.split("## Recipes", 1)[1].split("\n## ", 1)[0]
    rows = {line.split("|")[1].strip(" `"): [cell.strip() for cell in line.split("|")[4:12]]
            for line in section.splitlines() if line.startswith("| `")}
    assert set(rows) == set(RECIPES)
    yes_no = {True: "yes", False: "no"}
    for name, (cost, window, framing, tilted, channels, shift, posterised, verifier) \
            in rows.items():
        config = RECIPES[name].config
        assert verifier == yes_no[RECIPES[name].verifier], name
        assert cost == ",".join(f"{c:g}" for c in config.cost), name
        assert (tilted, channels) == (yes_no[config.tilted], yes_no[config.channels]), name
        assert shift == f"{config.jitter_shift:g}", name
        if not RECIPES[name].cascade:
            assert window == "x".join(map(str, config.window)), name
            assert (framing, posterised) == (f"{config.framing:g}", f"{config.posterize:g}")
