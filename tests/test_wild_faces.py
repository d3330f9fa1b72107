"""Faces with eye positions: the reader, the window geometry, the held-out split, and the
faces in train-detector and evaluate-detector."""

import json
from dataclasses import replace
import os
import re
import subprocess
import sys

import cv2
import numpy as np
import pytest
from PIL import Image
from skimage.transform import AffineTransform, warp

from facedetect.data import load_cbcl
from facedetect.data._cbcl import FRAMING
from facedetect.data._face_windows import face_windows, window_transform
from facedetect.data._wild_faces import WildFaces, find_faces_folder, heldout_mask, load_wild_faces
from facedetect.detector._model import HaarDetectorModel
from facedetect.errors import FacedetectError
from facedetect.pipeline._wild import crop_recall, eyes_found, split_wild_faces
from facedetect.pipeline._train import TrainConfig, train_detector

from .conftest import needs_data, plain_config

HEADER = "file,source,subject,leye_x,leye_y,reye_x,reye_y\n"


def smooth_crop(size, seed=0):
    noise = np.random.default_rng(seed).uniform(0, 255, (size, size)).astype(np.float32)
    return np.clip(cv2.GaussianBlur(noise, (0, 0), size / 12) * 4 - 380, 0, 255).astype(
        np.uint8)


def one_face(crop, eyes):
    return WildFaces([crop], np.array([eyes], float), ["a"], ["a"], [""], "", "")


def test_window_transform_puts_the_eyes_where_the_framing_says():
    # hand-computed: 19x19, eye distance 19 / 1.75 = 10.857 px, midpoint at (9, 4.82)
    m = window_transform([30.0, 40.0, 50.0, 40.0], (19, 19))
    left, right = m @ [30.0, 40.0, 1.0], m @ [50.0, 40.0, 1.0]
    assert np.allclose(left, [9 - 19 / FRAMING / 2, 4.82]) and np.allclose(
        right, [9 + 19 / FRAMING / 2, 4.82])
    # a tilted face comes out level, at the same distance
    m = window_transform([30.0, 40.0, 50.0, 50.0], (24, 24))
    left, right = m @ [30.0, 40.0, 1.0], m @ [50.0, 50.0, 1.0]
    assert left[1] == pytest.approx(right[1]) and right[0] - left[0] == pytest.approx(
        24 / FRAMING)
    # jitter: turned about the eye midpoint (positive angle counter-clockwise, as
    # cv2.getRotationMatrix2D), scaled and shifted
    m = window_transform([30.0, 40.0, 50.0, 40.0], (19, 19), (90.0, 2.0, 1.0, -1.0))
    middle = m @ [40.0, 40.0, 1.0]
    assert np.allclose(middle, [10.0, 3.82])
    assert np.allclose(m @ [50.0, 40.0, 1.0] - middle, [0.0, -2 * 19 / FRAMING / 2])


def test_face_windows_equal_scikit_image_warp():
    crop = smooth_crop(40)
    eyes = [13.3, 15.2, 26.1, 17.9]     # tilted, about 1.2x the window's scale
    for jitter in ([0.0, 1.0, 0.0, 0.0], [7.0, 0.95, 0.6, -0.4]):
        windows, kept = face_windows(one_face(crop, eyes), (19, 19), np.array([jitter]))
        assert kept.all()
        matrix = np.vstack([window_transform(eyes, (19, 19), jitter), [0, 0, 1]])
        expected = warp(crop.astype(float), AffineTransform(matrix).inverse,
                        output_shape=(19, 19), order=1, mode="edge", preserve_range=True)
        assert np.abs(windows[0].astype(float) - expected).max() <= 1.0


def test_large_faces_are_area_averaged_like_cv2_resize():
    noise = np.random.default_rng(1).uniform(0, 255, (76, 76)).astype(np.float32)
    crop = cv2.normalize(cv2.GaussianBlur(noise, (0, 0), 0.7), None, 0, 255,
                         cv2.NORM_MINMAX).astype(np.uint8)     # fine texture: aliasing shows
    d = 76 / FRAMING   # the window is exactly the whole crop, 4x the window's side
    eyes = [37.5 - d / 2, 0.28 * 76 - 0.5, 37.5 + d / 2, 0.28 * 76 - 0.5]
    windows, _ = face_windows(one_face(crop, eyes), (19, 19))
    expected = cv2.resize(crop, (19, 19), interpolation=cv2.INTER_AREA).astype(int)
    assert np.abs(windows[0].astype(int) - expected).max() <= 1
    naive = cv2.warpAffine(crop, window_transform(eyes, (19, 19)), (19, 19))
    assert np.abs(naive.astype(int) - expected).mean() > 10


def test_mirror_flips_and_a_window_off_its_crop_is_skipped():
    crop = smooth_crop(40)
    faces = WildFaces([crop, crop], np.array([[12.0, 15, 28, 15], [2.0, 3, 30, 3]]),
                      ["a", "b"], ["a", "b"], ["", ""], "", "")
    plain, kept = face_windows(faces, (19, 19))
    flipped, _ = face_windows(faces, (19, 19), mirror=np.array([True, True]))
    assert kept.tolist() == [True, False] and len(plain) == 1
    assert np.array_equal(flipped[0], plain[0, :, ::-1])


def test_grain_is_gaussian_with_each_windows_own_sd_and_only_on_training_windows():
    from facedetect.pipeline._augment import grained
    flat = np.full((400, 19, 19), 128, np.uint8)
    noisy = grained(flat, 20.0, np.random.default_rng(0)).astype(float)
    sds = noisy.reshape(400, -1).std(axis=1)
    # each window's own sd, uniform in [0, 20]: its spread, not one sd for all
    assert sds.max() < 20 * 1.3 and sds.min() < 2 and 8 < sds.mean() < 12
    assert abs(noisy.mean() - 128) < 0.2
    assert np.array_equal(grained(flat, 0.0, np.random.default_rng(0)), flat)
    crops = [smooth_crop(40, k) for k in range(30)]
    eyes = np.tile([12.0, 15.0, 28.0, 15.0], (30, 1))
    names = [f"face{k}" for k in range(30)]
    faces = WildFaces(crops, eyes, names, names, [""] * 30, "f", "0" * 64)
    plain = split_wild_faces(faces, (19, 19), True, 1, 0)
    grainy = split_wild_faces(faces, (19, 19), True, 1, 0, grain=20.0)
    again = split_wild_faces(faces, (19, 19), True, 1, 0, grain=20.0)
    assert np.array_equal(grainy.train, again.train)          # seeded
    assert np.array_equal(grainy.heldout, plain.heldout)      # held-out faces stay clean
    difference = grainy.train.astype(float) - plain.train
    assert 3 < difference.std() < 20 and abs(difference.mean()) < 1
    assert grainy.record["grain"] == 20.0 and "grain" not in plain.record
    with pytest.raises(FacedetectError, match="grain must be"):
        from facedetect.pipeline._config import check_config
        check_config(TrainConfig(grain=-1.0))


def test_mined_negatives_get_the_faces_grain_seeded_by_stage():
    from facedetect.pipeline._augment import degraded_negatives, grained

    def grained_negatives(windows, sd, seed, stage):
        return degraded_negatives(windows, sd, 0.0, seed, stage)
    flat = np.full((400, 19, 19), 128, np.uint8)
    first = grained_negatives(flat, 20.0, seed=0, stage=0)
    assert np.array_equal(first, grained_negatives(flat, 20.0, seed=0, stage=0))
    assert not np.array_equal(first, grained_negatives(flat, 20.0, seed=0, stage=1))
    assert not np.array_equal(first, grained_negatives(flat, 20.0, seed=1, stage=0))
    assert np.array_equal(grained_negatives(flat, 0.0, seed=0, stage=0), flat)
    # the same distribution of grain as the faces get: per-window sd uniform in [0, 20]
    faces_sd = grained(flat, 20.0, np.random.default_rng(5)).reshape(400, -1).std(axis=1)
    negatives_sd = first.reshape(400, -1).std(axis=1)
    assert abs(np.sort(faces_sd) - np.sort(negatives_sd)).max() < 2.5


def test_posterised_windows_keep_a_few_levels_in_order_and_only_their_share():
    from facedetect.pipeline._augment import POSTERIZE_LEVELS, posterize_window, posterized
    windows = np.random.default_rng(1).integers(0, 256, (2000, 19, 19), dtype=np.uint8)
    out = posterized(windows, 0.25, np.random.default_rng(0))
    changed = (out != windows).reshape(2000, -1).any(axis=1)
    assert 0.22 < changed.mean() < 0.28                       # about its fraction
    for before, after in zip(windows[changed], out[changed]):
        levels = np.unique(after)
        assert len(levels) <= POSTERIZE_LEVELS[1] + 1   # a bin cut at each end by the offset
        # one bin of at most 128 grey levels: the middle is within 64 of every pixel in it
        assert np.abs(after.astype(int) - before).max() <= 64
        order = np.argsort(before, axis=None, kind="stable")
        assert (np.diff(after.ravel()[order].astype(int)) >= 0).all()   # monotone
    # hand-computed: 2 levels split at 128 into the bins' middles 64 and 192; moved by
    # half a bin (64), the cuts fall at 64 and 192 and the middles at 0 (clipped), 128, 255
    ramp = np.array([0, 63, 64, 127, 128, 191, 192, 255], np.uint8)
    assert posterize_window(ramp, 2, 0.0).tolist() == [64, 64, 64, 64, 192, 192, 192, 192]
    assert posterize_window(ramp, 2, 0.5).tolist() == [0, 0, 128, 128, 128, 128, 255, 255]
    assert np.array_equal(posterized(windows, 0.0, np.random.default_rng(0)), windows)


def test_degraded_windows_without_levels_are_the_grain_alone_and_streams_stay_apart():
    from facedetect.pipeline._augment import (GRAIN_STREAM, degraded, degraded_negatives,
                                             grained)
    flat = np.full((300, 19, 19), 100, np.uint8)
    # no posterising: the very grain the recipe drew before its 2% share (a model
    # retrained with --posterize 0 is that model's file)
    assert np.array_equal(degraded(flat, 10.0, 0.0, 7, GRAIN_STREAM),
                          grained(flat, 10.0, np.random.default_rng([7, GRAIN_STREAM])))
    both = degraded(flat, 10.0, 0.5, 7, GRAIN_STREAM)
    assert np.array_equal(both, degraded(flat, 10.0, 0.5, 7, GRAIN_STREAM))   # seeded
    few = np.array([len(np.unique(w)) for w in both])
    assert 0.4 < (few <= 9).mean() < 0.6
    negatives = degraded_negatives(flat, 10.0, 0.5, 7, stage=0)
    assert not np.array_equal(negatives, both)
    assert not np.array_equal(negatives, degraded_negatives(flat, 10.0, 0.5, 7, stage=1))
    from facedetect.pipeline._config import check_config
    for bad in (-0.1, 1.5, float("nan"), True):
        with pytest.raises(FacedetectError, match="posterize must be"):
            check_config(TrainConfig(posterize=bad))


def test_the_posterize_flag_and_field_agree_on_the_recipes_share(capsys):
    from facedetect.cli._main import build_parser
    from facedetect.pipeline._config import WILD_POSTERIZE, check_config, resolved_window
    # the recipe's share is the one the shipped default was trained with
    from facedetect.detector._api import shipped_model_path
    shipped = json.loads(shipped_model_path("default").read_text())
    assert shipped["training"]["config"]["posterize"] == WILD_POSTERIZE > 0
    parser = build_parser()
    assert parser.parse_args(["train"]).posterize is None
    assert parser.parse_args(["train", "--posterize", "0"]).posterize == 0.0
    assert parser.parse_args(["train", "--posterize", "0.1"]).posterize == 0.1
    check_config(TrainConfig())   # None is the recipe's, not a bad value
    # the share goes with the channel features and the faces from the wild only: the
    # Haar-only model (haar.json, --no-channels) and CBCL's models keep none
    assert resolved_window(TrainConfig(), wild_faces=True).posterize == WILD_POSTERIZE
    assert resolved_window(TrainConfig(channels=False), wild_faces=True).posterize == 0.0
    assert resolved_window(TrainConfig(), wild_faces=False).posterize == 0.0
    assert resolved_window(TrainConfig(posterize=0.0), wild_faces=True).posterize == 0.0
    assert resolved_window(TrainConfig(posterize=0.3, channels=False), True).posterize == 0.3
    # a checkpoint saved before the share resumes with the flag that says so
    from facedetect.pipeline._checkpoint import _feature_hint
    assert _feature_hint(["posterize"], {"posterize": 0.0}) == \
        ", or resume with --posterize 0 as it was made"
    assert _feature_hint(["channels", "posterize"], {"channels": False, "posterize": 0.0}) \
        == ", or resume with --no-channels --posterize 0 as it was made"
    with pytest.raises(SystemExit):
        parser.parse_args(["train", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "(default: the recipe's, 0.02 for faces, else 0" in help_text


def write_faces(folder, rows, size=50, header=HEADER):
    folder.mkdir(parents=True, exist_ok=True)
    for k, row in enumerate(rows):
        name = row.split(",")[0]
        if name and not (folder / name).exists() and "missing" not in name:
            Image.fromarray(smooth_crop(size, k)).save(folder / name)
    (folder / "faces.csv").write_text(header + "\n".join(rows) + "\n")
    return folder


def test_bad_rows_are_skipped_one_line_each_and_training_goes_on(tmp_path):
    good = [f"f{k}.png,set,p{k},15,20,35,20" for k in range(12)]
    bad = ["g1.png,set,x,15,20,35", "g2.png,set,x,nan,20,35,20", "g3.png,set,x,15,20,17,20",
           "g4.png,set,x,15,20,90,20", "f0.png,set,p0,15,20,35,20", "missing.png,set,x,1,2,30,2"]
    folder = write_faces(tmp_path / "faces", good + bad)
    (folder / "g5.png").write_bytes(b"not an image")
    (folder / "faces.csv").write_text((folder / "faces.csv").read_text()
                                      + "g5.png,set,x,15,20,35,20\n")
    lines = []
    faces = load_wild_faces(folder, warn=lines.append)
    assert len(faces) == 12 and faces.skipped == 7 and len(lines) == 7
    for number, words in zip(range(14, 21), ("four numbers", "finite", "closer", "outside",
                                             "twice", "missing.png", "g5.png")):
        assert any(f"faces.csv:{number}:" in line and words in line for line in lines), words


def test_too_few_faces_missing_columns_and_no_csv_are_one_clear_error(tmp_path):
    folder = write_faces(tmp_path / "few", [f"f{k}.png,s,p,15,20,35,20" for k in range(3)])
    with pytest.raises(FacedetectError, match="3 usable faces.*at least 10"):
        load_wild_faces(folder, warn=lambda line: None)
    folder = write_faces(tmp_path / "cols", ["f.png,15,20,35"],
                         header="file,leye_x,leye_y,reye_x\n")
    with pytest.raises(FacedetectError, match="missing column\\(s\\) reye_y"):
        load_wild_faces(folder)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FacedetectError, match="no faces.csv.*file, leye_x, leye_y, reye_x, reye_y"):
        find_faces_folder(tmp_path / "empty")
    with pytest.raises(FacedetectError, match="no such folder"):
        find_faces_folder(tmp_path / "nowhere")


def test_heldout_split_keeps_a_subject_on_one_side_and_does_not_move():
    groups = [f"set/person{k % 300}" for k in range(3000)]
    held = heldout_mask(groups)
    by_group = {}
    for group, flag in zip(groups, held):
        by_group.setdefault(group, set()).add(bool(flag))
    assert all(len(flags) == 1 for flags in by_group.values())
    assert 0.05 < held.mean() < 0.15


def test_calibration_faces_are_neither_trained_on_nor_held_out():
    from facedetect.data._wild_faces import WildFaces
    from facedetect.pipeline._wild import split_wild_faces
    n = 400
    crops = [np.full((40, 40), k % 256, np.uint8) for k in range(n)]
    eyes = np.tile([12.0, 15.0, 28.0, 15.0], (n, 1))
    names = [f"face{k}" for k in range(n)]
    faces = WildFaces(crops, eyes, names, names, [""] * n, "f", "0" * 64)
    plain = split_wild_faces(faces, (19, 19), mirror=False, jitter=0, seed=0)
    split = split_wild_faces(faces, (19, 19), mirror=False, jitter=0, seed=0, calibrate=True)
    kept = split.record["calibration_faces"]
    assert len(plain.calibration) == 0 and 0 < kept == len(split.calibration) < 0.1 * n
    assert len(split.heldout) == len(plain.heldout)
    assert len(split.train) + kept == len(plain.train)
    assert len(split.train) + kept + len(split.heldout) == n


def test_the_fingerprint_follows_the_images_and_the_csv_on_disk(tmp_path):
    rows = [f"f{k}.png,set,p{k},15,20,35,20" for k in range(10)]
    folder = write_faces(tmp_path / "faces", rows)
    first = load_wild_faces(folder).fingerprint
    assert load_wild_faces(folder).fingerprint == first
    Image.fromarray(smooth_crop(50, 99)).save(folder / "f3.png")          # one image edited
    second = load_wild_faces(folder).fingerprint
    (folder / "faces.csv").write_text((folder / "faces.csv").read_text().replace(
        "f9.png,set,p9,15,20,35,20", "f9.png,set,p9,15,21,35,20"))     # one eye moved
    assert len({first, second, load_wild_faces(folder).fingerprint}) == 3


def test_eyes_found_needs_both_eyes_in_a_box_of_face_size():
    eyes = [20.0, 20.0, 40.0, 20.0]
    assert eyes_found(np.array([[10, 5, 40, 40]]), eyes, 4.0)
    assert not eyes_found(np.array([[25, 5, 40, 40]]), eyes, 4.0)       # one eye outside
    assert not eyes_found(np.array([[0, 0, 81, 81]]), eyes, 4.0)        # a box too large
    assert eyes_found(np.array([[0, 0, 81, 81]]), eyes, 4.05)
    assert not eyes_found(np.empty((0, 4)), eyes)


def test_a_photograph_listed_twice_falls_on_one_side_of_the_split(tmp_path):
    """The same image bytes under two subjects (or sources) merge their groups, and with
    them every other face of those subjects: one person stays on one side."""
    from facedetect.data._wild_faces import heldout_mask
    picture = np.random.default_rng(0).integers(0, 256, (40, 40), dtype=np.uint8)
    rows = ["file,source,subject,leye_x,leye_y,reye_x,reye_y"]
    for k in range(12):
        image = picture if k in (0, 1) else np.full((40, 40), 10 * k, np.uint8)
        Image.fromarray(image).save(tmp_path / f"f{k}.png")
        subject = "alice" if k in (0, 2) else "bob" if k in (1, 3) else f"p{k}"
        rows.append(f"f{k}.png,{'a' if k % 2 == 0 else 'b'},{subject},12,15,28,15")
    (tmp_path / "faces.csv").write_text("\n".join(rows) + "\n")
    faces = load_wild_faces(tmp_path)
    assert faces.groups[:4] == ["a/alice"] * 4          # alice and bob are one group now
    held = heldout_mask(faces.groups)
    assert len(set(held[:4].tolist())) == 1


def test_crop_recall_gives_every_detector_the_same_margin_over_its_own_box_width():
    """Two detectors that differ only in how wide they frame a face score alike; a box far
    wider than the detector's usual one does not count."""
    crops = [np.zeros((200, 200), np.uint8)] * 5
    eyes = np.array([[90.0, 100.0, 110.0, 100.0]] * 5)        # eye distance 20
    names = [f"f{k}" for k in range(5)]
    faces = WildFaces(crops, eyes, names, names, ["a", "a", "a", "b", "b"], "f", "0" * 64)

    def framing(width_in_eye_distances, wide_on_last=0.0):
        boxes = iter([width_in_eye_distances] * 4 + [wide_on_last or width_in_eye_distances])
        def detect(crop):
            side = 20 * next(boxes)
            return np.array([[100 - side / 2, 100 - side / 2, side, side]])
        return detect

    tight, loose = crop_recall(framing(2.5), faces), crop_recall(framing(3.5), faces)
    assert tight.by_source == loose.by_source == {"a": {"faces": 3, "recall": 1.0},
                                                  "b": {"faces": 2, "recall": 1.0}}
    assert (tight.max_eye_distances, loose.max_eye_distances) == (3.75, 5.25)
    # 1.5 x the median 3.5 is 5.25: a box of 5.3 eye distances is too wide
    assert crop_recall(framing(3.5, wide_on_last=5.3), faces).by_source["b"]["recall"] == 0.5


@pytest.fixture(scope="module")
def cbcl_faces_folder(tmp_path_factory, small_cbcl):
    """40 CBCL faces, upscaled 2x into 50x50 crops, with their eyes where the framing
    puts them: windows cut from the eyes give the faces back."""
    folder = tmp_path_factory.mktemp("faces")
    faces = load_cbcl(small_cbcl)
    faces = faces.images[faces.labels == 1][:40]
    half = 19 / FRAMING / 2
    rows = []
    for k, face in enumerate(faces):
        crop = np.full((50, 50), int(face.mean()), np.uint8)
        crop[6:44, 6:44] = cv2.resize(face, (38, 38), interpolation=cv2.INTER_LINEAR)
        Image.fromarray(crop).save(folder / f"c{k}.png")
        ly = (0.28 * 19 - 0.5) * 2 + 0.5 + 6
        rows.append(f"c{k}.png,cbcl,p{k % 20},{(9 - half) * 2 + 6.5},{ly},"
                    f"{(9 + half) * 2 + 6.5},{ly}")
    (folder / "faces.csv").write_text(HEADER + "\n".join(rows) + "\n")
    return folder, faces


def test_windows_cut_from_the_eyes_give_the_cbcl_faces_back(cbcl_faces_folder):
    folder, originals = cbcl_faces_folder
    windows, kept = face_windows(load_wild_faces(folder), (19, 19))
    assert kept.all()
    assert np.abs(windows.astype(int) - originals).mean() < 6


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "facedetect", *args], capture_output=True,
                          text=True, timeout=300)


@pytest.mark.slow
def test_train_detector_uses_the_faces_and_says_so(small_cbcl, cbcl_faces_folder, tmp_path):
    folder, _ = cbcl_faces_folder
    out = tmp_path / "model.json"
    result = run_cli("train", "--no-bootstrap", "--rounds", "4", "--data", str(small_cbcl),
                     "--faces", str(folder), "--window", "19x19", "--framing", "1.75",
                     "--cost", "1,1", "--out", str(out))
    assert result.returncode == 0, result.stderr
    said = [line for line in result.stderr.splitlines() if line.startswith("faces from")]
    assert len(said) == 1 and "40 faces" in said[0] and "join CBCL's faces" in said[0]
    record = HaarDetectorModel.load(out).document["training"]["wild_faces"]
    held = int(heldout_mask([f"cbcl/p{k % 20}" for k in range(40)]).sum())
    assert record["train_faces"] == 40 - held and record["heldout_faces"] == held
    assert "terms" in record
    trained = int(re.search(r"trained on (\d+) faces", result.stdout).group(1))
    alone = json.loads(run_cli("train", "--no-bootstrap", "--rounds", "4", "--data",
                               str(small_cbcl), "--recipe", "cbcl", "--out",
                               str(tmp_path / "m3.json"), "--json").stdout)
    assert trained == alone["train_windows"]["faces"] + 40 - held
    report = run_cli("evaluate", str(out), "--data", str(small_cbcl), "--faces", str(folder),
                     "--json")
    assert report.returncode == 0, report.stderr
    wild = json.loads(report.stdout)["wild_faces"]
    assert wild["faces"] == held and 0 < wild["crop_box_max_eye_distances"] < 100
    text = run_cli("evaluate", str(out), "--data", str(small_cbcl), "--faces", str(folder))
    assert text.returncode == 0 and "eye distances wide" in text.stdout, text.stderr


@pytest.mark.slow
def test_the_recipe_window_trains_the_faces_from_the_wild_without_cbcl_faces(
        small_cbcl, cbcl_faces_folder, tmp_path):
    from tests.test_detector_training import _write_pictures
    folder, _ = cbcl_faces_folder
    out = tmp_path / "wide.json"
    env = dict(os.environ, FACEDETECT_NEGATIVES=str(_write_pictures(tmp_path / "neg", 30)))
    result = subprocess.run([sys.executable, "-m", "facedetect", "train", "--no-verifier",
                             "--rounds", "4", "--bootstrap-rounds", "1",
                             "--bootstrap-limit", "50", "--data",
                             str(small_cbcl), "--faces", str(folder), "--out", str(out)],
                            capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    said = [line for line in result.stderr.splitlines() if line.startswith("faces from")]
    assert len(said) == 1 and "train the 24x24 window with CBCL's non-faces" in said[0]
    model = HaarDetectorModel.load(out)
    assert model.window == (24, 24)
    config = model.document["training"]["config"]
    assert config["window"] == [24, 24] and config["framing"] == 2.2
    # scanned from the window's own size, boxes as CBCL's window frames the face
    detection = model.document["detection"]
    assert detection["min_size"] == 24
    assert (detection["box_scale"], detection["box_shift"]) == (1.590909, 0.079545)
    record = model.document["training"]["wild_faces"]
    trained = int(re.search(r"trained on (\d+) faces", result.stdout).group(1))
    assert trained == record["train_faces"]    # CBCL's faces only measure
    # The window operating point is calibrated on wild faces held back from boosting,
    # beside CBCL's calibration non-faces, at the CBCL split's prior.
    point = model.document["operating_point"]
    assert record["calibration_faces"] > 0
    assert point["calibration_faces"] == "held-back faces from the wild"
    cbcl_calibration = model.document["training"]["calibration_size"]
    # its non-faces: CBCL's calibration split less that split's faces
    assert 0 < point["n_calibration"] - record["calibration_faces"] < cbcl_calibration
    report = run_cli("evaluate", str(out), "--data", str(small_cbcl), "--faces", str(folder),
                     "--json")
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["n_positive"] > 0


@pytest.mark.slow
def test_a_window_framed_wider_than_cbcl_needs_faces_from_the_wild(small_cbcl, tmp_path):
    result = run_cli("train", "--recipe", "cbcl", "--no-bootstrap", "--rounds", "2", "--data",
                     str(small_cbcl), "--framing", "2.2", "--out", str(tmp_path / "m.json"))
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1 and "needs faces from the wild" in result.stderr


def test_without_faces_the_recipe_says_where_to_put_them(small_cbcl, tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("FACEDETECT_FACES", None)
    result = subprocess.run([sys.executable, "-m", "facedetect", "train", "--no-bootstrap",
                             "--rounds", "2", "--data", str(small_cbcl), "--out",
                             str(tmp_path / "m.json")], capture_output=True, text=True,
                            timeout=300, cwd=tmp_path, env=env)
    # refused in one line, before CBCL is read: the default recipe needs them
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert "none were found" in result.stderr and "./data/faces" in result.stderr
    assert "--recipe cbcl" in result.stderr and not (tmp_path / "m.json").exists()


@pytest.mark.slow
def test_resume_after_the_faces_changed_is_refused(small_cbcl, cbcl_faces_folder, tmp_path,
                                                   interrupt_after_two_rounds):
    folder, _ = cbcl_faces_folder
    data, faces = load_cbcl(small_cbcl), load_wild_faces(folder)
    config = plain_config((1, 10), 5)
    with pytest.raises(FacedetectError, match="interrupted"):
        train_detector(config, data, faces=faces, out=tmp_path / "m.json", progress=False)
    interrupt_after_two_rounds()
    fewer = faces.subset(np.arange(len(faces)) > 0)
    fewer.fingerprint = "0" * 64
    with pytest.raises(FacedetectError, match="faces folder changed"):
        train_detector(config, data, faces=fewer, out=tmp_path / "m.json", resume=True,
                       progress=False)
    resumed = train_detector(config, data, faces=faces, out=tmp_path / "m.json", resume=True,
                             progress=False).model
    whole = train_detector(config, data, faces=faces, out=tmp_path / "w.json",
                           progress=False).model
    assert resumed.alphas.tobytes() == whole.alphas.tobytes()


def test_split_of_the_shared_faces_holds_out_about_a_tenth():
    folder = needs_data("faces", "faces.csv")
    import csv
    with open(folder / "faces.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    groups = [f"{r['source']}/{r['subject']}" if r["subject"] else r["file"] for r in rows]
    held = heldout_mask(groups)
    assert 0.08 < held.mean() < 0.12
    faces = WildFaces([np.zeros((64, 64), np.uint8)] * 5, np.tile([22.0, 24, 42, 24], (5, 1)),
                      ["a"] * 5, ["a"] * 5, [""] * 5, "", "")
    assert len(split_wild_faces(faces, (19, 19), True, 1, 0).train) + len(
        split_wild_faces(faces, (19, 19), True, 1, 0).heldout) == 5


def test_a_cascade_learns_from_the_faces_too_and_samples_its_positives(small_cbcl,
                                                                        cbcl_faces_folder):
    from facedetect.pipeline._bootstrap import NegativeSet, skimage_negatives
    from facedetect.pipeline._settings import CascadeConfig
    from facedetect.pipeline._cascade_train import _sample, cascade_samples, train_cascade
    folder, _ = cbcl_faces_folder
    data, faces = load_cbcl(small_cbcl), load_wild_faces(folder)
    config = TrainConfig(cost=(2, 1), jitter=0, mirror=True)
    alone, with_faces = cascade_samples(data, config), cascade_samples(data, config, faces)
    record = with_faces.wild_faces
    assert len(with_faces.faces) == len(alone.faces) + record["train_faces"]
    assert len(with_faces.held) == len(alone.held) + record["heldout_faces"]
    sample = _sample(with_faces.faces, 60, seed=3)
    assert len(sample) == 60 and np.array_equal(sample, _sample(with_faces.faces, 60, 3))
    assert _sample(with_faces.faces, 10**6, 3) is with_faces.faces
    images, names = skimage_negatives()
    rules = CascadeConfig(stages=2, min_hit_rate=0.9, max_false_alarm_rate=0.5,
                          max_stumps_per_stage=10, negatives_per_stage=100,
                          positives_per_stage=100)
    model = train_cascade(replace(config, posterize=0.3), rules, data, faces=faces,
                          progress=False,
                          negatives=NegativeSet(images, [], "skimage", "skimage")).model
    assert model.document["training"]["wild_faces"]["train_faces"] == record["train_faces"]
    assert model.document["training"]["config"]["faces_sha256"] == faces.fingerprint
    # the recipe grains one-stage training only; the cascade's record says none
    assert config.grain > 0 and model.document["training"]["config"]["grain"] == 0.0
    assert model.document["training"]["config"]["posterize"] == 0.0
    assert "grain" not in model.document["training"]["wild_faces"]
    # nor channel features, which OpenCV cannot run: a cascade is trained to export
    assert config.channels is None and model.document["training"]["config"]["channels"] is False
    assert not (model.channels >= 0).any()


def test_short_mining_stages_still_end_in_a_model_of_the_full_rounds(small_cbcl):
    picture = np.random.default_rng(0).integers(0, 256, (60, 60), dtype=np.uint8)
    common = dict(cost=(1, 10), rounds=6, stage_rounds=2, bootstrap_rounds=2, jitter=0,
                  mirror=False, holdout=0.25)
    # mining that finds nothing (threshold far above any score) jumps to the last stage
    model = train_detector(TrainConfig(bootstrap_threshold=1e5, **common),
                           load_cbcl(small_cbcl), negatives=[picture], progress=False).model
    assert model.document["training"]["rounds"] == 6
    stages = model.document["training"]["bootstrap"]["stages"]
    assert stages == [{"stage": 1, "hard_negatives_added": 0}]


@pytest.mark.slow
def test_grain_goes_on_the_mined_negatives_with_the_wild_faces_and_never_alone(
        small_cbcl, cbcl_faces_folder, monkeypatch):
    import facedetect.pipeline._train as train_module
    calls = []

    def spy(windows, max_sd, posterize, seed, stage):
        calls.append((len(windows), max_sd, posterize, stage))
        return windows

    monkeypatch.setattr(train_module, "degraded_negatives", spy)
    folder, _ = cbcl_faces_folder
    picture = np.random.default_rng(0).integers(0, 256, (60, 60), dtype=np.uint8)
    config = TrainConfig(cost=(1, 10), rounds=4, stage_rounds=2, bootstrap_rounds=1,
                         jitter=0, mirror=False, grain=10.0, posterize=0.25,
                         bootstrap_threshold=-1e5, bootstrap_limit=50)
    data = load_cbcl(small_cbcl)
    with_faces = train_detector(config, data, faces=load_wild_faces(folder),
                                negatives=[picture], progress=False).model
    assert calls == [(50, 10.0, 0.25, 0)]     # stage 1's mined windows, grain 10, levels
    assert with_faces.document["training"]["config"]["grain"] == 10.0
    assert with_faces.document["training"]["wild_faces"]["grain"] == 10.0
    assert with_faces.document["training"]["wild_faces"]["posterize"] == 0.25
    calls.clear()
    alone = train_detector(config, data, faces=None, negatives=[picture],
                           progress=False).model
    assert calls == [(50, 0.0, 0.0, 0)]              # no wild faces: nothing grained
    assert alone.document["training"]["config"]["grain"] == 0.0
    assert alone.document["training"]["config"]["posterize"] == 0.0
    unmined = train_detector(replace(config, bootstrap_rounds=0), data,
                             faces=load_wild_faces(folder), progress=False).model
    assert unmined.document["training"]["config"]["grain"] == 0.0   # no negatives to grain
    assert "grain" not in unmined.document["training"]["wild_faces"]
    assert "posterize" not in unmined.document["training"]["wild_faces"]
    calls.clear()
    recipe = train_detector(replace(config, posterize=None), data,
                            faces=load_wild_faces(folder), negatives=[picture],
                            progress=False).model
    assert calls == [(50, 10.0, 0.02, 0)]   # the recipe's share, channel features and all
    assert recipe.document["training"]["config"]["posterize"] == 0.02
    assert recipe.document["training"]["wild_faces"]["posterize"] == 0.02


@pytest.mark.slow
def test_an_interrupted_grained_bootstrap_resumes_to_the_identical_model(
        small_cbcl, cbcl_faces_folder, tmp_path, monkeypatch):
    import facedetect.pipeline._bootstrap as bootstrap
    from facedetect.pipeline._bootstrap import NegativeSet

    from .test_detector_training import _write_pictures
    folder, _ = cbcl_faces_folder
    data, faces = load_cbcl(small_cbcl), load_wild_faces(folder)
    negatives = NegativeSet.find(_write_pictures(tmp_path / "neg", 80, size=(70, 70)))
    config = plain_config((1, 5), 5, bootstrap_rounds=2, bootstrap_limit=120, grain=10.0)
    original, calls = bootstrap.positive_windows, {"n": 0, "stop": None}

    def interrupted(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == calls["stop"]:
            raise KeyboardInterrupt
        return original(*args, **kwargs)
    monkeypatch.setattr(bootstrap, "positive_windows", interrupted)
    whole = train_detector(config, data, faces=faces, out=tmp_path / "whole.json",
                           progress=False, negatives=negatives).model
    assert whole.document["training"]["config"]["grain"] == 10.0
    assert len(whole.document["training"]["bootstrap"]["stages"]) == 2
    # the last mining stage, a few pictures before its end
    calls.update(n=0, stop=calls["n"] - 3)
    out = tmp_path / "resumed.json"
    with pytest.raises(FacedetectError, match="interrupted while mining"):
        train_detector(config, data, faces=faces, out=out, progress=False,
                       negatives=negatives)
    assert json.loads((tmp_path / "resumed.json.checkpoint.json").read_text())["stage"] == 1
    monkeypatch.setattr(bootstrap, "positive_windows", original)
    # the grain is part of what the checkpoint checks, and a refused resume leaves it whole
    with pytest.raises(FacedetectError, match=r"different settings \(grain"):
        train_detector(replace(config, grain=5.0), data, faces=faces, out=out, resume=True,
                       progress=False, negatives=negatives)
    resumed = train_detector(config, data, faces=faces, out=out, resume=True,
                             progress=False, negatives=negatives).model
    for key in ("thresholds", "polarities", "alphas"):
        assert getattr(resumed, key).tobytes() == getattr(whole, key).tobytes()


def test_the_wild_faces_move_as_far_as_the_jitter_shift_says():
    # Oracle: each training window is the crop cut by window_transform with the seeded
    # draw, its shift as asked; the held-out windows never move.
    from facedetect.data._face_windows import eye_line_for
    from facedetect.pipeline._augment import WILD_SEED_OFFSET, jitter_transforms
    crops = [smooth_crop(60, k) for k in range(30)]
    eyes = np.tile([22.0, 25.0, 38.0, 25.0], (30, 1))
    names = [f"face{k}" for k in range(30)]
    faces = WildFaces(crops, eyes, names, names, [""] * 30, "f", "0" * 64)
    near = split_wild_faces(faces, (24, 24), False, 1, 0, framing=2.2)
    far = split_wild_faces(faces, (24, 24), False, 1, 0, framing=2.2, max_shift=1.5)
    assert np.array_equal(near.heldout, far.heldout)
    trained = faces.subset(~heldout_mask(faces.groups))
    draws = jitter_transforms(len(trained), np.random.default_rng(WILD_SEED_OFFSET), 1.5)
    expected, _ = face_windows(trained, (24, 24), draws, None, 2.2, eye_line_for(2.2))
    np.testing.assert_array_equal(far.train, expected)
    assert not np.array_equal(far.train, near.train)
