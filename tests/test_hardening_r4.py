"""Hardening, round 4 (issue 37): outputs that name an input, the faces reader's silent
answers, the Python front door's checks, bounded memory, a weak model's image point."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from PIL import Image

import facedetect
from facedetect.data._wild_faces import load_wild_faces
from facedetect.errors import FacedetectError

from .test_wild_faces import write_faces


def run_cli(*argv, cwd=None):
    return subprocess.run([sys.executable, "-m", "facedetect", *map(str, argv)],
                          capture_output=True, text=True, cwd=cwd, timeout=300)


def one_line(result, command: str, words: str):
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"facedetect {command}: error:"), \
        result.stderr
    assert words in lines[0], lines[0]


# 1. Data loss: an output that names an input is refused before the work starts.

def test_detect_never_writes_its_annotation_over_an_input(tmp_path):
    image = tmp_path / "photo.png"
    Image.fromarray(np.full((60, 80), 90, np.uint8)).save(image)
    before = image.read_bytes()
    one_line(run_cli("detect", image, "--output", image), "detect", "is the input image")
    # a folder whose x_faces.png is x.png's annotation and also an input
    Image.fromarray(np.full((60, 80), 30, np.uint8)).save(tmp_path / "photo_faces.png")
    one_line(run_cli("detect", tmp_path, "--output", tmp_path), "detect",
             "would replace the input")
    assert image.read_bytes() == before


def test_train_never_replaces_a_data_file(tmp_path):
    folder = write_faces(tmp_path / "faces", [f"f{k}.png,set,p{k},15,20,35,20"
                                              for k in range(12)])
    csv_before = (folder / "faces.csv").read_bytes()
    one_line(run_cli("train", "--faces", folder, "--out", folder / "faces.csv"), "train",
             "not a facedetect model file")
    with pytest.raises(FacedetectError, match="not a facedetect model file"):
        facedetect.train_detector(facedetect.TrainConfig(rounds=2), out=folder / "f0.png")
    with pytest.raises(ValueError, match="is a folder"):
        facedetect.train_detector(facedetect.TrainConfig(rounds=2), out=folder)
    with pytest.raises(ValueError, match="does not exist"):
        facedetect.train_detector(facedetect.TrainConfig(rounds=2),
                                  out=tmp_path / "nodir" / "m.json")
    assert (folder / "faces.csv").read_bytes() == csv_before
    assert not list(tmp_path.glob("*.checkpoint*"))   # refused before anything was written


# 5 and 7. The faces reader: swapped eyes, one file under several names, links out of the
# folder, and a flood of skipped rows summarised.

def test_the_faces_reader_says_what_it_skips_and_reads_each_file_once(tmp_path):
    good = [f"f{k}.png,set,p{k},15,20,35,20" for k in range(12)]
    aliases = ["./f0.png,set,p0,15,20,35,20", "sub/../f1.png,set,p1,15,20,35,20",
               ".//f2.png,set,p2,15,20,35,20"]
    swapped = ["f3.png,set,p3,35,20,15,20"]
    folder = write_faces(tmp_path / "faces", good)
    with open(folder / "faces.csv", "a") as handle:
        handle.write("\n".join(aliases + swapped + ["link.png,s,x,15,20,35,20"]) + "\n")
    outside = tmp_path / "outside.png"
    Image.fromarray(np.full((50, 50), 100, np.uint8)).save(outside)
    (folder / "link.png").symlink_to(outside)
    lines = []
    faces = load_wild_faces(folder, warn=lines.append)
    assert len(faces) == 12 and faces.skipped == 5
    text = "\n".join(lines)
    assert text.count("listed twice") == 3           # ./f0.png, .//f2.png, f3.png again
    assert "must lie inside" in text and text.count("inside the faces folder") == 2
    # a CSV whose rows mostly list the right eye first is refused; one such row is a
    # face turned upside down (the shared set has one), read as it is
    swapped_all = write_faces(tmp_path / "swapped", [f"s{k}.png,set,p{k},35,20,15,20"
                                                     for k in range(12)])
    with pytest.raises(FacedetectError, match="12 of 12 rows list the eye on the image's "
                                              "right first"):
        load_wild_faces(swapped_all, warn=lines.append)
    one = write_faces(tmp_path / "one", [f"s{k}.png,set,p{k},15,20,35,20" for k in range(11)]
                      + ["s11.png,set,p11,35,20,15,20"])
    assert len(load_wild_faces(one, warn=lines.append)) == 12


def test_a_flood_of_bad_rows_is_summarised(tmp_path):
    good = [f"f{k}.png,set,p{k},15,20,35,20" for k in range(12)]
    folder = write_faces(tmp_path / "faces", good + ["f0.png,set,p0,15,20,35,20"] * 5000)
    lines = []
    faces = load_wild_faces(folder, warn=lines.append)
    assert len(faces) == 12 and faces.skipped == 5000
    assert len(lines) == 21 and "4,980 more rows skipped (5,000 in all)" in lines[-1]


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.one_of(st.text(max_size=12), st.floats(allow_nan=True),
                                   st.integers(-10 ** 30, 10 ** 30)), min_size=0, max_size=8),
                max_size=30))
def test_any_faces_csv_loads_or_is_one_clear_error(tmp_path_factory, rows):
    folder = write_faces(tmp_path_factory.mktemp("fuzz") / "faces",
                         [f"f{k}.png,set,p{k},15,20,35,20" for k in range(10)])
    with open(folder / "faces.csv", "a", encoding="utf-8", newline="") as handle:
        for row in rows:
            handle.write(",".join(str(v).replace("\n", " ") for v in row) + "\n")
    try:
        faces = load_wild_faces(folder, warn=lambda line: None)
    except FacedetectError as error:
        assert "\n" not in str(error)
        return
    assert 10 <= len(faces) <= 10 + len(rows)
    assert np.isfinite(faces.eyes).all()


# 6. The Python front door refuses what the command refuses, naming the parameter.

@pytest.mark.parametrize("settings, words", [
    ({"threshold": float("nan")}, "threshold must be a number"),
    ({"threshold": "x"}, "threshold must be a number"),
    ({"min_neighbors": "x"}, "min_neighbors must be an integer"),
    ({"min_size": 0}, "min_size must be an integer in 1..100000"),
    ({"scale_factor": 1.001}, "scale_factor must be a number in [1.01, 10]"),
    ({"step": 0}, "step must be a positive integer"),
    ({"min_neighbors": True}, "min_neighbors must be an integer"),
])
def test_bad_scan_settings_are_value_errors_naming_the_parameter(settings, words):
    image = np.zeros((40, 40), np.uint8)
    with pytest.raises(ValueError, match=words.replace("[", r"\[")):
        facedetect.detect(image, **settings)


def test_numpy_scalars_are_numbers():
    image = np.zeros((40, 40), np.uint8)
    assert len(facedetect.detect(image, step=np.int64(2), min_size=np.int32(24),
                                 threshold=np.float32(50.0))) == 0


@pytest.mark.parametrize("image, words", [
    (np.full((40, 40), np.nan), "NaN"),
    (np.arange(1600, dtype=np.int64).reshape(40, 40) % 1021, "0 to 1020 fit no grey"),
    (np.full((40, 40), -0.5), "fit no grey"),
    (np.zeros((40, 40), complex), "must hold numbers"),
    (Image.new("LAB", (40, 40)), "mode 'LAB' has no grey conversion"),
])
def test_images_the_front_door_cannot_read_as_grey_are_refused(image, words):
    with pytest.raises(ValueError, match=words):
        facedetect.detect(image)


def test_images_as_cv2_and_pillow_users_hand_them_are_read():
    levels = np.tile(np.arange(0, 250, 5, dtype=np.uint8), (40, 1))
    grey = facedetect.detect(levels)
    for same in (levels.astype(np.int64), levels / 255.0):
        np.testing.assert_array_equal(facedetect.detect(same).boxes, grey.boxes)
    with pytest.warns(UserWarning, match="read as grey levels 0..255"):
        facedetect.detect(levels.astype(np.float32))
    with pytest.raises(ValueError, match="more than max_pixels"):
        facedetect.detect(np.zeros((400, 400), np.uint8), max_pixels=100_000)


def test_train_config_fields_are_checked_as_the_flags_check_them():
    from facedetect.pipeline._config import check_config
    for fields, words in (({"holdout": "x"}, "holdout must be a number"),
                          ({"algorithm": "nope"}, "algorithm must be one of"),
                          ({"balanced": "no"}, "balanced must be True or False"),
                          ({"jitter": 2.5}, "jitter must be an integer in 0..100"),
                          ({"jitter": 10 ** 6}, "jitter must be an integer in 0..100")):
        with pytest.raises(ValueError, match=words):
            check_config(facedetect.TrainConfig(**fields))
    config = facedetect.TrainConfig(framing=np.float32(2.2), seed=np.int64(3))
    check_config(config)
    assert type(config.framing) is float and type(config.seed) is int
    with pytest.raises(TypeError, match="config must be a TrainConfig"):
        facedetect.train_detector({"rounds": 3})
    with pytest.raises(ValueError, match="data must be CBCL windows"):
        facedetect.train_detector(facedetect.TrainConfig(rounds=2), data=3)


def test_every_train_flag_accepts_and_refuses_what_its_field_does():
    import argparse

    from facedetect.cli._common import field_type
    from facedetect.cli._main import build_parser
    from facedetect.pipeline._config import FIELD_LIMITS
    from facedetect.pipeline._settings import (CASCADE_LIMITS, RUN_LIMITS, CascadeConfig,
                                              RunOptions)

    def library(table, name, value) -> bool:
        try:
            if table is FIELD_LIMITS:
                from facedetect.pipeline._config import check_config
                check_config(facedetect.TrainConfig(**{name: value}))
            elif table is RUN_LIMITS:
                RunOptions(**{name: value}).check()
            else:
                CascadeConfig(**{name: value}).check()
            return True
        except ValueError:
            return False

    flags = {action.dest: action.type for action in
             build_parser()._subparsers._group_actions[0].choices["train"]._actions
             if action.type is not None}
    for table in (FIELD_LIMITS, RUN_LIMITS, CASCADE_LIMITS):
        for name, (kind, low, high, _, _) in table.items():
            # the command's own flag is typed from the same table
            assert getattr(flags[name], "__name__", None) == name, name
            span = high - low
            for value in (low, high, low - 1, high + 1, low + span / 2, low + span / 3):
                value = int(value) if kind == "int" else float(value)
                try:
                    field_type(name, None if table is FIELD_LIMITS else table)(repr(value))
                    flag = True
                except argparse.ArgumentTypeError:
                    flag = False
                assert flag == library(table, name, value), (name, value)


# 7. Bounded memory: a pyramid step near 1 is refused, and grouping bounds its pairs.

def test_grouping_refuses_more_pairs_than_memory_allows(monkeypatch):
    from facedetect.detector import _grouping as grouping
    monkeypatch.setattr(grouping, "MAX_PAIRS", 1000)
    rects = np.array([[10 + k % 3, 10 + k % 2, 40, 40] for k in range(200)])
    with pytest.raises(FacedetectError, match="overlap in more than 1,000 pairs"):
        grouping.group_rectangles(rects, np.ones(200), 2)


# 4. A weak model still gets an image operating point: the best it can reach, said.

def test_the_best_windows_are_the_top_of_every_window():
    from facedetect.detector._multiscale import params_for, scan_best, scan_raw, scanner_for
    from skimage import data
    model = facedetect.load_model()
    grey = data.camera()
    params = params_for(model, threshold=-5.0, neighbor_margin=0.0)
    scanner = scanner_for(model, params)
    rects, scores, _ = scan_raw(grey, scanner, params)
    best_rects, best_scores, floor = scan_best(grey, scanner, params, limit=300)
    assert floor > -np.inf and len(best_scores) <= 300
    keep = scores > floor
    np.testing.assert_array_equal(best_rects, rects[keep])
    np.testing.assert_array_equal(best_scores, scores[keep])
    everything = scan_best(grey, scanner, params, limit=10 ** 6)
    np.testing.assert_array_equal(everything[0], rects)
    assert everything[2] == -np.inf


def test_a_weak_model_gets_the_image_point_it_can_reach(monkeypatch):
    from facedetect.detector import _multiscale as multiscale
    from facedetect.detector._calibrate import image_operating_point
    from skimage import data
    monkeypatch.setattr(multiscale, "MAX_WINDOWS", 200)   # as a 3-round model overflows
    model = facedetect.load_model().one_stage()   # the point of the scan alone
    faces = np.random.default_rng(0).integers(0, 256, (50, 24, 24), dtype=np.uint8)
    lines = []
    point = image_operating_point(model, [data.camera(), data.coins()], faces, 0.25,
                                  warn=lines.append)
    assert any("image operating point is sought from" in line for line in lines)
    assert np.isfinite(point["threshold"])


# 2. A full disk: the spill file's blocks are reserved before it is mapped, so a disk
# without room is one line naming the folder and the size, never SIGBUS.

def test_a_spill_file_on_a_full_disk_is_one_line(monkeypatch, tmp_path):
    import errno
    import os

    from facedetect.pipeline import _compact as storage

    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(storage.os, "posix_fallocate", full)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    with pytest.raises(FacedetectError, match=f"2.9 MiB spill file in {tmp_path}.*No space"):
        storage._spill_file(1000, 3000)


# 3. No face left for a class or a split: one line that says where the faces went.

def test_no_face_left_to_train_on_says_where_they_went(small_cbcl, tmp_path):
    from facedetect.data import load_cbcl
    # every window leaves its crop: the eyes sit in the crop's top corner
    folder = write_faces(tmp_path / "faces", [f"f{k}.png,set,p{k},1,1,21,1" for k in range(12)])
    with pytest.raises(FacedetectError, match=r"no face left to train on: CBCL's faces only "
                                              r"measure at this framing; of the 12 faces from "
                                              r"the wild 0 give training windows"):
        facedetect.train_detector(facedetect.TrainConfig(rounds=2, bootstrap_rounds=0),
                                  load_cbcl(small_cbcl), faces=folder, progress=False)


def test_no_held_out_face_for_the_image_point_is_refused_before_boosting(small_cbcl,
                                                                          negatives_dir):
    from facedetect.data import load_cbcl
    config = facedetect.TrainConfig(rounds=2, holdout=0, bootstrap_rounds=1, stage_rounds=2)
    with pytest.raises(FacedetectError, match=r"no held-out face to set the image operating "
                                              r"point with \(--holdout 0"):
        facedetect.train_detector(config, load_cbcl(small_cbcl), faces=None,
                                  negatives=negatives_dir, progress=False)


def test_random_windows_come_from_many_pictures():
    # found by the wild cost sweep: a picture after the first was resized by the
    # previous picture's pyramid object, so a cascade's first negatives from 50 or more
    # pictures failed
    from facedetect.pipeline._bootstrap import random_windows
    rng = np.random.default_rng(0)
    pictures = [rng.integers(0, 256, (60, 80), dtype=np.uint8) for _ in range(60)]
    windows = random_windows(pictures, 120, seed=0, window=(24, 24))
    assert windows.shape == (120, 24, 24)


def test_a_resume_with_contradicting_flags_is_refused_before_the_data_is_read(tmp_path):
    from facedetect.pipeline._checkpoint import RunState, save_checkpoint
    config = facedetect.TrainConfig(cost=(1, 10)).as_dict()
    save_checkpoint(tmp_path / "m.json.checkpoint.json", RunState(), config)
    # no CBCL data where --data points: refused for the cost, before looking for it
    result = run_cli("train", "--cost", "1,5", "--resume", "--out", tmp_path / "m.json",
                     "--data", tmp_path / "no-data")
    one_line(result, "train", "different settings (cost)")
