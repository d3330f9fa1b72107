"""train-detector / evaluate-detector: the workflow, checkpoints, bad input."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from facedetect.data import load_cbcl
from facedetect.detector._model import HaarDetectorModel
from facedetect.errors import FacedetectError
from facedetect.training import AdaBoostDB
from facedetect.pipeline._heldout import evaluate
from facedetect._utils.interrupts import terminate_as_interrupt
from facedetect.pipeline._train import RunOptions, TrainConfig, train_detector
from .conftest import plain_config

# The one-stage window classifier on CBCL alone, without mining: the quick run.
TRAIN_CBCL = ("train", "--recipe", "cbcl", "--no-bootstrap")


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "facedetect", *args], capture_output=True,
                          text=True, timeout=300)


def test_train_then_evaluate_on_the_heldout_split(small_cbcl, tmp_path):
    out = tmp_path / "model.json"
    result = run_cli(*TRAIN_CBCL, "--cost", "1,10", "--rounds", "8", "--data", str(small_cbcl),
                     "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stderr
    assert "saved" in result.stdout and out.exists()
    assert not (tmp_path / "model.json.checkpoint.json").exists()
    model = HaarDetectorModel.load(out)
    training = model.document["training"]
    assert len(training["heldout_names"]) == 100  # 25% of 400, stratified
    assert model.n_stumps == 8 and model.cost == (1.0, 10.0)
    report = run_cli("evaluate", str(out), "--data", str(small_cbcl), "--json")
    assert report.returncode == 0, report.stderr
    data = json.loads(report.stdout)
    assert data["n_positive"] == 38 and data["n_negative"] == 62
    assert data["false_negatives"] == round(data["false_negative_rate"] * 38)
    assert data["roc"][0]["false_positive_rate"] == 1.0


def test_heldout_scores_equal_the_training_feature_matrix_scores(small_cbcl):
    """The saved model's own window scoring reproduces the estimator's decisions."""
    from facedetect.haar import feature_matrix, haar_feature_pool
    data = load_cbcl(small_cbcl)
    result = train_detector(plain_config((1, 5), 6), data, progress=False)
    model = result.model
    # sealed once, after everything it records (its training seconds too)
    from facedetect.modelfile._schema import digest
    assert model.document["training"]["seconds"] > 0
    assert model.document["sha256"] == digest(model.document)
    pool = haar_feature_pool()
    X = feature_matrix(data.images, pool, progress=False)
    from facedetect.training._model_io import estimator_from_document
    estimator = estimator_from_document(model.document)
    np.testing.assert_array_equal(model.decision_function(data.images),
                                  estimator.decision_function(X))


@pytest.mark.slow
def test_interrupted_run_resumes_to_the_identical_model(small_cbcl, tmp_path, monkeypatch):
    data = load_cbcl(small_cbcl)
    config = plain_config((1, 10), 9)
    whole = train_detector(config, data, out=tmp_path / "whole.json", progress=False).model

    original = AdaBoostDB._boost_once
    calls = {"n": 0}

    def interrupted(self, *args):
        calls["n"] += 1
        if calls["n"] == 6:
            raise KeyboardInterrupt
        time.sleep(0.3)   # a run long enough that its seconds tell the parts apart
        return original(self, *args)

    monkeypatch.setattr(AdaBoostDB, "_boost_once", interrupted)
    out = tmp_path / "resumed.json"
    with pytest.raises(FacedetectError, match="interrupted after 5 rounds"):
        train_detector(config, data, out=out, progress=False,
                       options=RunOptions(checkpoint_every=2))
    assert (tmp_path / "resumed.json.checkpoint.json").exists() and not out.exists()
    saved = json.loads((tmp_path / "resumed.json.checkpoint.json").read_text())["seconds"]
    monkeypatch.setattr(AdaBoostDB, "_boost_once", original)
    resumed = train_detector(config, data, out=out, resume=True, progress=False)
    for key in ("thresholds", "polarities", "alphas"):
        assert getattr(resumed.model, key).tobytes() == getattr(whole, key).tobytes()
    assert resumed.model.rects == whole.rects
    assert not (tmp_path / "resumed.json.checkpoint.json").exists()
    # The model records the whole training's seconds, the interrupted part's included.
    assert saved >= 1.5
    assert resumed.model.document["training"]["seconds"] == round(resumed.seconds, 2)
    assert resumed.seconds >= saved


def test_resume_refuses_a_checkpoint_of_other_settings(small_cbcl, tmp_path,
                                                       interrupt_after_two_rounds):
    data = load_cbcl(small_cbcl)
    with pytest.raises(FacedetectError):
        train_detector(plain_config((1, 10), 5), data, out=tmp_path / "m.json", progress=False)
    interrupt_after_two_rounds()
    with pytest.raises(FacedetectError, match="different settings \\(cost\\)"):
        train_detector(plain_config((1, 3), 5), data, out=tmp_path / "m.json", resume=True,
                       progress=False)


def test_sigterm_becomes_an_interrupt():
    with pytest.raises(KeyboardInterrupt):
        with terminate_as_interrupt():
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(100):
                pass


def test_same_seed_gives_an_identical_model_file(small_cbcl, tmp_path):
    data = load_cbcl(small_cbcl)
    first = train_detector(plain_config((2, 1), 5, seed=4), data, out=tmp_path / "a.json",
                           progress=False)
    second = train_detector(plain_config((2, 1), 5, seed=4), data, out=tmp_path / "b.json",
                            progress=False)

    def strip(m):
        return {k: v for k, v in m.document.items() if k not in ("training", "sha256")}

    assert strip(first.model) == strip(second.model)
    assert first.model.document["training"]["heldout_names"] == \
        second.model.document["training"]["heldout_names"]


def test_evaluation_refuses_other_data_and_unsplit_models(small_cbcl, cbcl, tmp_path):
    data = load_cbcl(small_cbcl)
    model = train_detector(plain_config((1, 1), 3), data, progress=False).model
    with pytest.raises(FacedetectError, match="not the data the model was trained on"):
        evaluate(model, cbcl)
    unsplit = train_detector(plain_config((1, 1), 3, holdout=0), data, progress=False).model
    with pytest.raises(FacedetectError, match="holdout 0"):
        evaluate(unsplit, data)
    assert evaluate(unsplit, data, split="train")["n_positive"] == 150


@pytest.mark.parametrize("args, message", [
    (["--cost", "1"], "expected two costs"),
    (["--cost", "0,1"], "positive"),
    (["--cost", "a,b"], "must be numbers"),
    (["--out", "/nonexistent/folder/m.json"], "does not exist"),
])
def test_bad_train_arguments_are_one_line(small_cbcl, args, message):
    result = run_cli(*TRAIN_CBCL, "--data", str(small_cbcl), "--rounds", "2", *args)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]


def test_missing_and_one_class_data_are_one_line(small_cbcl, tmp_path):
    result = run_cli(*TRAIN_CBCL, "--data", str(tmp_path / "missing"), "--rounds", "2")
    assert result.returncode == 1 and len(result.stderr.strip().splitlines()) == 1
    one_class = tmp_path / "faces_only"
    (one_class / "train").mkdir(parents=True)
    os.symlink(small_cbcl / "train" / "face", one_class / "train" / "face")
    result = run_cli(*TRAIN_CBCL, "--data", str(one_class), "--rounds", "2")
    assert result.returncode == 1
    assert "only one class" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_evaluate_bad_model_files_are_one_line(tmp_path, small_cbcl):
    (tmp_path / "bad.json").write_text("{not json")
    for path in (tmp_path / "bad.json", tmp_path / "missing.json"):
        result = run_cli("evaluate", str(path), "--data", str(small_cbcl))
        assert result.returncode == 1 and len(result.stderr.strip().splitlines()) == 1


def test_mirror_adds_each_training_face_flipped(small_cbcl):
    from facedetect.pipeline._train import training_windows
    images = np.arange(3 * 19 * 19, dtype=np.uint8).reshape(3, 19, 19)
    labels = np.array([1, 0, 1])
    mirrored, mirrored_labels = training_windows(images, labels, mirror=True)
    assert mirrored_labels.tolist() == [1, 0, 1, 1, 1]
    np.testing.assert_array_equal(mirrored[3], images[0][:, ::-1])
    np.testing.assert_array_equal(mirrored[4], images[2][:, ::-1])
    data = load_cbcl(small_cbcl)
    plain = train_detector(plain_config((1, 5), 3), data, progress=False)
    flipped = train_detector(plain_config((1, 5), 3, mirror=True), data, progress=False)
    assert flipped.train_counts["faces"] == 2 * plain.train_counts["faces"]
    assert flipped.train_counts["non_faces"] == plain.train_counts["non_faces"]
    assert flipped.model.document["training"]["config"]["mirror"] is True
    # The held-out faces are not mirrored into training: the split is the same.
    assert (flipped.model.document["training"]["heldout_names"]
            == plain.model.document["training"]["heldout_names"])


def test_negative_pictures_are_scanned_in_all_eight_orientations():
    from facedetect.pipeline._bootstrap import dihedral_variants
    image = np.arange(12, dtype=np.uint8).reshape(3, 4)
    variants = dihedral_variants(image)
    assert len({v.tobytes() + bytes(v.shape) for v in variants}) == 8
    assert all(sorted(v.ravel()) == sorted(image.ravel()) for v in variants)
    assert all(v.flags.c_contiguous for v in variants)


@pytest.mark.slow
def test_bootstrapping_adds_windows_the_model_accepts_and_retrains(small_cbcl):
    from skimage import data as skdata

    from facedetect.pipeline._bootstrap import hard_negatives
    data = load_cbcl(small_cbcl)
    picture = np.ascontiguousarray(skdata.brick()[:120, :120])
    plain = train_detector(plain_config((1, 1), 4), data, progress=False)
    found = hard_negatives(plain.model, [picture], limit=40, seed=0)
    assert 0 < len(found) <= 40 and found.shape[1:] == (19, 19)
    # Oracle: each hard negative is a window the model accepts (scored as in training).
    assert (plain.model.decision_function(found) > 0).all()
    boosted = train_detector(plain_config((1, 1), 4, bootstrap_rounds=1, bootstrap_limit=40),
                             data, progress=False, negatives=[picture])
    stages = boosted.model.document["training"]["bootstrap"]["stages"]
    assert stages == [{"stage": 1, "hard_negatives_added": len(found)}]
    assert (boosted.train_counts["non_faces"]
            == plain.train_counts["non_faces"] + len(found))


def test_negatives_without_bootstrapping_is_one_line(small_cbcl, tmp_path):
    result = run_cli(*TRAIN_CBCL, "--data", str(small_cbcl), "--rounds", "2", "--negatives",
                     str(tmp_path), "--no-bootstrap", "--out", str(tmp_path / "m.json"))
    assert result.returncode != 0
    assert result.stderr.strip().count("\n") == 0 and "--no-bootstrap" in result.stderr


def test_jitter_adds_seeded_variants_of_every_face_mirrored_ones_included():
    from facedetect.pipeline._train import training_windows
    rng = np.random.default_rng(3)
    images = rng.integers(0, 256, (3, 19, 19), dtype=np.uint8)
    labels = np.array([1, 0, 1])
    windows, window_labels = training_windows(images, labels, mirror=True, jitter=2, seed=7)
    # 3 originals, 2 mirrored faces, then 2 variants of each of the 4 faces.
    assert window_labels.tolist() == [1, 0, 1, 1, 1] + [1] * 8
    again, _ = training_windows(images, labels, mirror=True, jitter=2, seed=7)
    np.testing.assert_array_equal(windows, again)
    other, _ = training_windows(images, labels, mirror=True, jitter=2, seed=8)
    assert not np.array_equal(windows[5:], other[5:])
    # Without jitter the windows are exactly the mirrored set (old models reproduce).
    plain, _ = training_windows(images, labels, mirror=True)
    np.testing.assert_array_equal(windows[:5], plain)


def test_jittered_face_is_a_small_affine_change_of_its_source():
    import cv2

    from facedetect.pipeline import _augment as augment
    face = cv2.GaussianBlur(np.random.default_rng(0).integers(0, 256, (19, 19))
                            .astype(np.uint8), (0, 0), 2.0)
    variants = augment.jittered_faces(face[None], 20, seed=0)
    assert variants.shape == (20, 19, 19) and variants.dtype == np.uint8
    # Oracle: each variant is the transform recomputed here from the same draws.
    transforms = augment.jitter_transforms(
        20, np.random.default_rng(augment.SEED_OFFSET + 0))
    assert (np.abs(transforms[:, 0]) <= augment.MAX_ANGLE).all()
    assert (np.abs(transforms[:, 1] - 1) <= augment.MAX_SCALE).all()
    angle, scale, dx, dy = transforms[5]
    matrix = cv2.getRotationMatrix2D((9.0, 9.0), angle, scale)
    matrix[:, 2] += (dx, dy)
    expected = cv2.warpAffine(face, matrix, (19, 19), flags=cv2.INTER_LINEAR,
                              borderMode=cv2.BORDER_REFLECT_101)
    np.testing.assert_array_equal(variants[5], expected)
    # Small changes: on a smooth face every variant stays close to its source.
    assert np.abs(variants.astype(int) - face).mean() < 20
    assert augment.jittered_faces(face[None], 0, seed=0).shape == (0, 19, 19)


def test_bootstrap_threshold_harvests_near_misses_too(small_cbcl):
    from skimage import data as skdata

    from facedetect.pipeline._bootstrap import hard_negatives
    data = load_cbcl(small_cbcl)
    picture = np.ascontiguousarray(skdata.brick()[:120, :120])
    plain = train_detector(plain_config((1, 1), 4), data, progress=False)
    accepted = hard_negatives(plain.model, [picture], limit=10**6, seed=0)
    near = hard_negatives(plain.model, [picture], limit=10**6, seed=0, threshold=-1.0)
    assert len(near) > len(accepted)
    assert (plain.model.decision_function(near) > -1.0).all()


def test_bad_jitter_and_bootstrap_threshold_are_one_line(small_cbcl, tmp_path):
    for flags in (["--jitter", "-1"], ["--bootstrap-threshold", "nan"]):
        result = run_cli(*TRAIN_CBCL, "--data", str(small_cbcl), "--rounds", "2", *flags,
                         "--out", str(tmp_path / "m.json"))
        assert result.returncode != 0
        assert result.stderr.strip().count("\n") == 0 and flags[0] in result.stderr


def test_operating_point_is_chosen_on_the_calibration_split(small_cbcl):
    """The threshold is the least-cost cut of the calibration windows' scores, which the
    model never trained on; the held-out windows stay out of it."""
    from facedetect.training._operating_point import cost_optimal_threshold
    from facedetect.pipeline._train import calibration_indices, split_indices
    data = load_cbcl(small_cbcl)
    config = plain_config((1, 10), 10, threshold_rule="empirical")
    model = train_detector(config, data, progress=False).model
    point = model.operating_point
    train, held = split_indices(data.labels, config)
    fit, calibration = calibration_indices(data.labels, train, config)
    assert not set(calibration) & set(held) and not set(calibration) & set(fit)
    assert point["n_calibration"] == len(calibration) == 60    # 20% of the 300 training
    assert model.document["training"]["train_size"] == len(fit) == 240
    scores = model.decision_function(data.images[calibration])
    expected, _, _ = cost_optimal_threshold(scores, data.labels[calibration] == 1, (1, 10))
    assert point["threshold"] == expected and point["raw_threshold"] == 0.0
    assert point["prior"] == pytest.approx(np.mean(data.labels[calibration] == 1))
    report = evaluate(model, data)
    assert report["threshold"] == expected and report["threshold_source"] == "operating point"
    raw = evaluate(model, data, threshold=0.0)
    assert raw["threshold_source"] == "raw" and raw["false_positives"] == report["raw"][
        "false_positives"]


def test_adamec_and_calibration_are_stored(small_cbcl, tmp_path):
    data = load_cbcl(small_cbcl)
    config = plain_config((1, 4), 10, algorithm="adaboost", prior=0.2)
    model = train_detector(config, data, out=tmp_path / "m.json", progress=False).model
    point = model.operating_point
    assert model.cost == (1.0, 4.0) and point["rule"] == "probability"
    assert point["calibration"]["method"] == "sigmoid" and point["prior"] == 0.2
    from facedetect.training._operating_point import fit_calibration, probability_threshold
    from facedetect.pipeline._train import calibration_indices, split_indices
    train, _ = split_indices(data.labels, config)
    _, calibration = calibration_indices(data.labels, train, config)
    scores = model.decision_function(data.images[calibration])
    positive = data.labels[calibration] == 1
    platt = fit_calibration(scores, positive, "sigmoid")
    shift = (0.2 / 0.8) / (positive.mean() / (1 - positive.mean()))
    assert point["calibration"] == platt
    assert point["threshold"] == probability_threshold(platt, (1, 4), shift, scores)[0]
    loaded = HaarDetectorModel.load(tmp_path / "m.json")
    assert loaded.operating_point == point
    probability = loaded.predict_proba(data.images[:50])
    assert ((0 <= probability) & (probability <= 1)).all()


def test_model_without_operating_point_reports_threshold_zero(small_cbcl, tmp_path):
    data = load_cbcl(small_cbcl)
    model = train_detector(plain_config((1, 10), 5, calibration_split=0), data,
                           out=tmp_path / "old.json", progress=False).model
    assert model.operating_point is None and model.window_threshold == 0.0
    result = run_cli("evaluate", str(tmp_path / "old.json"), "--data", str(small_cbcl))
    assert result.returncode == 0, result.stderr
    assert "no operating point recorded: threshold 0" in result.stdout


@pytest.mark.parametrize("args, message", [
    (["--prior", "0"], "prior must be a number in [1e-12"),
    (["--prior", "1.5"], "0.999999999999]"), (["--prior", "nan"], "--prior"),
    (["--calibration-split", "1"], "calibration_split"),
    (["--calibration-split", "0", "--prior", "0.3"], "calibration split"),
])
def test_bad_operating_point_options_are_one_line(small_cbcl, tmp_path, args, message):
    result = run_cli(*TRAIN_CBCL, "--rounds", "2", "--data", str(small_cbcl), "--out",
                     str(tmp_path / "m.json"), "--quiet", *args)
    assert result.returncode != 0 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "m.json").exists()


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["db", "dbn", "cs", "adaboost", "asym-init"])
def test_every_algorithm_gets_an_operating_point(small_cbcl, algorithm):
    data = load_cbcl(small_cbcl)
    # 2,000 features a round: the operating point does not depend on how many are searched,
    # and Cost-Sensitive AdaBoost solves a root for each
    model = train_detector(plain_config((1, 10), 2, algorithm=algorithm, max_features=2_000),
                           data, progress=False).model
    point = model.operating_point
    assert point["cost"] == [1.0, 10.0] and model.cost == (1.0, 10.0)
    assert point["calibration"]["method"] == "sigmoid" and point["n_calibration"] == 60
    assert evaluate(model, data)["threshold"] == point["threshold"]


def test_calibration_part_without_faces_is_one_clear_error(small_cbcl, tmp_path):
    from facedetect.data._cbcl import CBCLData
    data = load_cbcl(small_cbcl)
    keep = np.r_[np.flatnonzero(data.labels == 1)[:2], np.flatnonzero(data.labels == 0)]
    few = CBCLData(data.images[keep], data.labels[keep], [data.names[i] for i in keep],
                   data.source)
    with pytest.raises(FacedetectError, match="leaves the calibration part 0 faces"):
        train_detector(plain_config((1, 1), 2, holdout=0), few, progress=False)


@pytest.mark.parametrize("args, message", [
    (["--seed", "-1"], "0..4294967295"), (["--holdout", "0.999"], "without both classes"),
    (["--holdout", "1e-9"], "without both classes"), (["--cost", "1e308,1"], "cost ratio"),
    (["--out", "."], "is a folder"),
])
def test_bad_numbers_and_outputs_are_one_line(small_cbcl, tmp_path, args, message):
    argv = ["train", "--recipe", "cbcl", "--rounds", "2", "--data", str(small_cbcl), "--quiet"]
    if "--out" not in args:
        argv += ["--out", str(tmp_path / "m.json")]
    result = run_cli(*argv, *args)
    assert result.returncode != 0 and message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "m.json").exists()


def test_bad_roc_points_is_one_line(small_cbcl, tmp_path):
    result = run_cli("evaluate", "nothing.json", "--roc-points", "-3")
    assert result.returncode == 2 and "2..1000" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.slow
@pytest.mark.parametrize("flags, message", [
    (["--exact", "--memory", "0.05"], "more than the memory setting 0.05 GiB"),
    (["--memory", "0.0001"], "the minimum is"),
    (["--memory", "nan"], "finite"), (["--memory", "-1"], "between 1 KiB and 1,048,576 GiB"),
])
def test_a_memory_setting_too_small_is_refused_before_allocation(small_cbcl, tmp_path,
                                                                  flags, message):
    result = run_cli(*TRAIN_CBCL, "--rounds", "2", "--data", str(small_cbcl),
                     "--quiet", "--out", str(tmp_path / "m.json"), *flags)
    assert result.returncode in (1, 2) and message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_second_writer_of_the_same_output_is_refused(tmp_path):
    from facedetect._utils.atomic import exclusive_output
    out = tmp_path / "m.json"
    with exclusive_output(out):
        with pytest.raises(FacedetectError, match="another run is writing"):
            with exclusive_output(out):
                pass
    assert not (tmp_path / "m.json.lock").exists()
    with exclusive_output(out):   # free again
        pass


@pytest.mark.slow
def test_resume_with_fewer_rounds_saves_only_the_rounds_asked(small_cbcl, tmp_path,
                                                               monkeypatch):
    data = load_cbcl(small_cbcl)
    original = AdaBoostDB._boost_once

    def stop(self, *args):
        if len(args[0].alphas) == 6:
            raise KeyboardInterrupt
        return original(self, *args)
    monkeypatch.setattr(AdaBoostDB, "_boost_once", stop)
    out = tmp_path / "m.json"
    with pytest.raises(FacedetectError, match="after 6 rounds"):
        train_detector(plain_config((1, 10), 9), data, out=out,
                       options=RunOptions(checkpoint_every=2),
                       progress=False)
    monkeypatch.setattr(AdaBoostDB, "_boost_once", original)
    resumed = train_detector(plain_config((1, 10), 4), data, out=out, resume=True,
                             progress=False).model
    short = train_detector(plain_config((1, 10), 4), data, progress=False).model
    assert resumed.n_stumps == 4
    for key in ("thresholds", "polarities", "alphas"):
        assert getattr(resumed, key).tobytes() == getattr(short, key).tobytes()


def test_resume_past_the_first_stage_needs_the_same_rounds(tmp_path):
    from facedetect.pipeline._checkpoint import RunState, load_checkpoint, save_checkpoint
    path = tmp_path / "m.json.checkpoint.json"
    save_checkpoint(path, RunState(stage=1), {"rounds": 5, "cost": [1, 10]})
    assert load_checkpoint(path, {"rounds": 5, "cost": [1, 10]}).stage == 1
    with pytest.raises(FacedetectError, match="resume with --rounds 5"):
        load_checkpoint(path, {"rounds": 4, "cost": [1, 10]})
    # A damaged window file is refused by its checksum.
    (npz,) = tmp_path.glob("m.json.checkpoint.json.*.npz")   # named by its digest
    npz.write_bytes(npz.read_bytes()[:-1] + b"x")
    with pytest.raises(FacedetectError, match="does not match its checkpoint"):
        load_checkpoint(path, {"rounds": 5, "cost": [1, 10]})


def test_a_tampered_checkpoint_is_refused(tmp_path):
    import json

    from facedetect.modelfile._io import reseal
    from facedetect.training._boosting import TrainingState
    from facedetect.pipeline._checkpoint import RunState, load_checkpoint, save_checkpoint
    path = tmp_path / "m.json.checkpoint.json"
    config = {"rounds": 5, "cost": [1, 10]}
    state = TrainingState(np.full(4, 0.25), 0.0, 0.0, [(3, 0.5, 1)], [0.7], [{}], False)
    save_checkpoint(path, RunState(boosting=state), config)
    assert load_checkpoint(path, config).boosting.stumps == [(3, 0.5, 1)]
    document = json.loads(path.read_text())
    document["boosting"]["weights"][0] = 0.5
    path.write_text(json.dumps(document))
    with pytest.raises(FacedetectError, match="checksum mismatch"):
        load_checkpoint(path, config)
    document["boosting"]["weights"][0] = -1.0   # resealed: the content check refuses it
    path.write_text(json.dumps(reseal(document)))
    with pytest.raises(FacedetectError, match="damaged checkpoint"):
        load_checkpoint(path, config)
    path.write_text('{"format": 1e999}')
    with pytest.raises(FacedetectError, match="out of range"):
        load_checkpoint(path, config)


def test_a_checkpoint_from_before_area_levels_is_refused(tmp_path):
    import json

    from facedetect.modelfile._io import reseal
    from facedetect.training._boosting import TrainingState
    from facedetect.pipeline._checkpoint import RunState, load_checkpoint, save_checkpoint
    path = tmp_path / "m.json.checkpoint.json"
    config = {"rounds": 5, "cost": [1, 10]}
    state = TrainingState(np.full(4, 0.25), 0.0, 0.0, [(3, 0.5, 1)], [0.7], [{}], False)
    save_checkpoint(path, RunState(boosting=state), config)
    document = json.loads(path.read_text())
    assert document["pyramid"] == "area"
    del document["pyramid"]   # as written before: its negatives were mined bilinear
    path.write_text(json.dumps(reseal(document)))
    with pytest.raises(FacedetectError, match="mined bilinear pyramid levels"):
        load_checkpoint(path, config)


def test_a_kill_between_the_checkpoint_files_leaves_a_pair_that_resumes(tmp_path,
                                                                       monkeypatch):
    from facedetect.pipeline import _checkpoint as checkpoint
    from facedetect.pipeline._bootstrap import MiningState
    from facedetect.pipeline._checkpoint import RunState, load_checkpoint, save_checkpoint
    path = tmp_path / "m.json.checkpoint.json"
    config = {"rounds": 5, "cost": [1, 10]}
    first = np.full((3, 19, 19), 7, np.uint8)
    save_checkpoint(path, RunState(stage=1, mining=MiningState(4, [first], [])), config)

    def killed(*args, **kwargs):   # the process dies after the windows, before the JSON
        raise KeyboardInterrupt
    monkeypatch.setattr(checkpoint, "atomic_write_text", killed)
    second = np.full((5, 19, 19), 9, np.uint8)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(path, RunState(stage=1, mining=MiningState(9, [second], [])), config)
    resumed = load_checkpoint(path, config)          # the older pair, whole
    assert resumed.mining.position == 4 and resumed.mining.windows[0].tolist() == first.tolist()
    monkeypatch.undo()
    save_checkpoint(path, RunState(stage=1, mining=MiningState(9, [second], [])), config)
    assert load_checkpoint(path, config).mining.position == 9
    assert len(list(tmp_path.glob("m.json.checkpoint.json.*.npz"))) == 1   # the old one gone
    checkpoint.remove_checkpoint(path)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("where", ["reading", "cutting"])
def test_an_interrupt_before_training_says_the_run_saved_nothing(small_cbcl, tmp_path,
                                                                      monkeypatch, where):
    # Ctrl-C while the data is read (a wild-faces run reads 26,980 images first) or the
    # windows are cut: no checkpoint exists yet, and the message says so rather than a bare
    # "interrupted" (from the command line: one line, exit 130, as any interrupt).
    from facedetect.errors import InterruptedRun
    from facedetect.pipeline import _plan as plan_module, _train as train_module

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt
    if where == "reading":
        monkeypatch.setattr(plan_module, "_cbcl", interrupt)
    else:
        monkeypatch.setattr(train_module, "training_windows", interrupt)
    with pytest.raises(InterruptedRun, match="this run saved nothing") as error:
        train_detector(plain_config((1, 1), 3), small_cbcl, out=tmp_path / "m.json",
                       progress=False)
    assert ("reading the data" if where == "reading" else "cutting") in str(error.value)
    assert not list(tmp_path.glob("m.json*checkpoint*"))


def test_a_checkpoint_from_before_tilted_features_resumes(small_cbcl, tmp_path,
                                                          interrupt_after_two_rounds):
    # Checkpoints written before the tilted field existed trained on the basic pool: they
    # resume as tilted=False runs (and are refused as different settings with --tilted).
    from facedetect.modelfile._io import digest
    data = load_cbcl(small_cbcl)
    out = tmp_path / "m.json"
    with pytest.raises(FacedetectError, match="interrupted"):
        train_detector(plain_config((1, 10), 5), data, out=out, progress=False)
    checkpoint = tmp_path / "m.json.checkpoint.json"
    document = json.loads(checkpoint.read_text())
    assert document["config"].pop("tilted") is False
    document.pop("sha256")
    document["sha256"] = digest(document)
    checkpoint.write_text(json.dumps(document))
    interrupt_after_two_rounds()
    with pytest.raises(FacedetectError, match="different settings \\(tilted\\).*, or "
                       "resume with --no-tilted as it was made"):
        train_detector(plain_config((1, 10), 5, tilted=True), data, out=out, resume=True,
                       progress=False)
    resumed = train_detector(plain_config((1, 10), 5), data, out=out, resume=True,
                             progress=False).model
    whole = train_detector(plain_config((1, 10), 5), data, progress=False).model
    assert resumed.alphas.tobytes() == whole.alphas.tobytes()


def test_the_jitter_shift_moves_faces_further_on_the_same_draws():
    import cv2

    from facedetect.pipeline import _augment as augment
    rng = lambda: np.random.default_rng(augment.SEED_OFFSET)   # noqa: E731
    near, far = augment.jitter_transforms(500, rng()), augment.jitter_transforms(500, rng(), 1.5)
    # The same seed draws the same turns and scales; the shifts only go further.
    np.testing.assert_array_equal(near[:, :2], far[:, :2])
    np.testing.assert_allclose(far[:, 2:], near[:, 2:] * 2, atol=1e-12)
    assert np.abs(near[:, 2:]).max() <= 0.75 < np.abs(far[:, 2:]).max() <= 1.5
    assert not augment.jitter_transforms(50, rng(), 0.0)[:, 2:].any()
    # Oracle: a pure 1.5 px shift of a face is OpenCV's warp by that translation.
    face = np.random.default_rng(1).integers(0, 256, (19, 19), dtype=np.uint8)
    variant = augment.jittered_faces(face[None], 3, seed=0, max_shift=1.5)[2]
    angle, scale, dx, dy = augment.jitter_transforms(
        3, np.random.default_rng(augment.SEED_OFFSET), 1.5)[2]
    matrix = cv2.getRotationMatrix2D((9.0, 9.0), angle, scale)
    matrix[:, 2] += (dx, dy)
    np.testing.assert_array_equal(variant, cv2.warpAffine(
        face, matrix, (19, 19), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT_101))


def test_the_jitter_shift_is_the_recipes_and_its_flag_sets_it(capsys):
    from facedetect.cli._main import build_parser
    from facedetect.pipeline._config import (CBCL_JITTER_SHIFT, WILD_JITTER_SHIFT,
                                             check_config, resolved_window)
    for_opencv = TrainConfig(channels=False)
    assert resolved_window(for_opencv, wild_faces=True).jitter_shift == WILD_JITTER_SHIFT
    assert resolved_window(for_opencv, wild_faces=False).jitter_shift == CBCL_JITTER_SHIFT
    assert resolved_window(TrainConfig(), wild_faces=True).jitter_shift == CBCL_JITTER_SHIFT
    assert resolved_window(TrainConfig(jitter_shift=2.0), True).jitter_shift == 2.0
    parser = build_parser()
    assert parser.parse_args(["train"]).jitter_shift is None
    assert parser.parse_args(["train", "--jitter-shift", "0.75"]).jitter_shift == 0.75
    with pytest.raises(SystemExit):
        parser.parse_args(["train", "--jitter-shift", "9"])
    # a flag always carries a value: its message offers the range only, never None
    assert "jitter_shift must be a number in [0, 4], got 9.0" in capsys.readouterr().err
    for bad in (-0.5, 4.5, float("nan"), "far"):
        with pytest.raises(FacedetectError, match="jitter_shift"):
            check_config(TrainConfig(jitter_shift=bad))


def test_a_checkpoint_from_before_the_jitter_shift_resumes_as_075(small_cbcl, tmp_path,
                                                                interrupt_after_two_rounds):
    # Checkpoints written before the field existed jittered their faces up to 0.75 px.
    from facedetect.modelfile._io import digest
    data = load_cbcl(small_cbcl)
    out = tmp_path / "m.json"
    config = plain_config((1, 10), 5, jitter=1)
    with pytest.raises(FacedetectError, match="interrupted"):
        train_detector(config, data, out=out, progress=False)
    checkpoint = tmp_path / "m.json.checkpoint.json"
    document = json.loads(checkpoint.read_text())
    assert document["config"].pop("jitter_shift") == 0.75
    document.pop("sha256")
    document["sha256"] = digest(document)
    checkpoint.write_text(json.dumps(document))
    interrupt_after_two_rounds()
    with pytest.raises(FacedetectError, match="different settings \\(jitter_shift\\)"):
        train_detector(plain_config((1, 10), 5, jitter=1, jitter_shift=1.5), data, out=out,
                       resume=True, progress=False)
    resumed = train_detector(config, data, out=out, resume=True, progress=False).model
    whole = train_detector(config, data, progress=False).model
    assert resumed.alphas.tobytes() == whole.alphas.tobytes()


def test_kept_features_compute_only_each_mining_stages_new_windows(small_cbcl, monkeypatch):
    """With keep_features a mining stage featurises only the windows the stage before mined
    (counted where the features are computed); the last stage bins all its windows at
    their own quantiles. The run's phases and lines say what each stage did and how long
    the whole should take."""
    from skimage import data as skdata
    from facedetect.haar._matrix import PreparedWindows
    prepared = []
    original = PreparedWindows.prepare

    def counting(self, windows, normalize=True):
        prepared.append(len(windows))
        return original(self, windows, normalize)

    monkeypatch.setattr(PreparedWindows, "prepare", counting)
    pictures = [np.ascontiguousarray(skdata.brick()[:160, :160]),
                np.ascontiguousarray(skdata.grass()[:160, :160])]
    lines = []
    config = plain_config((1, 1), 6, bootstrap_rounds=2, bootstrap_limit=30, stage_rounds=3,
                          keep_features=True)
    result = train_detector(config, load_cbcl(small_cbcl), negatives=pictures, progress=True,
                            options=RunOptions(log=lines.append))
    added = [s["hard_negatives_added"] for s in
             result.model.document["training"]["bootstrap"]["stages"]]
    assert len(added) == 2 and all(0 < n <= 30 for n in added)
    windows = result.train_counts["faces"] + result.train_counts["non_faces"]
    base = windows - sum(added)
    from facedetect.pipeline._phases import PROBE_WINDOWS
    # the probe's random windows first (the forecast), then the first stage's, the second's
    # new ones, and the last stage's all
    assert prepared == [64, PROBE_WINDOWS, base, added[0], windows]
    phases = {(p["phase"], p["stage"]): p for p in result.phases}
    assert [phases["features", s]["windows"] for s in (1, 2, 3)] == [base, added[0], windows]
    assert [phases["boosting", s]["rounds"] for s in (1, 2, 3)] == [3, 3, 6]
    assert [phases["boosting", s]["windows"] for s in (1, 2, 3)] == [
        base, base + added[0], windows]
    assert ("mining", 1) in phases and ("mining", 2) in phases
    assert ("window operating point", None) in phases
    assert result.model.document["training"]["phases"] == result.phases
    assert result.scratch_bytes == 0
    assert any(line.startswith("the run: 2 stages of 3 rounds") for line in lines)
    assert sum("the whole run should take about" in line for line in lines) == 3
    assert "from a probe of its speed" in next(line for line in lines
                                               if "should take about" in line)


def test_the_whole_run_is_foreseen_from_the_phases_measured():
    # hand-computed: 0.1 s a window's features, 0.02 s a round per window, 5 s a mining,
    # the operating points a share of the last stage's boosting (20 rounds, 200 windows)
    from facedetect.pipeline._phases import OPERATING_POINTS_PER_FINAL_BOOSTING, Phases, \
        remaining_seconds
    phases = Phases([{"phase": "features", "stage": 1, "windows": 100, "seconds": 10.0},
                     {"phase": "boosting", "stage": 1, "rounds": 10, "windows": 100,
                      "seconds": 20.0},
                     {"phase": "mining", "stage": 1, "seconds": 5.0}])
    config = TrainConfig(rounds=20, stage_rounds=10, bootstrap_rounds=2, bootstrap_limit=50)
    stage_2 = 150 * 0.1 + 0.02 * 10 * 150 + 5.0   # each stage featurises all its windows
    stage_3 = 200 * 0.1 + 0.02 * 20 * 200
    assert remaining_seconds(phases, config, 100, 0, False) == pytest.approx(
        stage_2 + stage_3)
    assert remaining_seconds(phases, config, 100, 0, True) == pytest.approx(
        stage_2 + stage_3 + OPERATING_POINTS_PER_FINAL_BOOSTING * 0.02 * 20 * 200)
    kept = TrainConfig(rounds=20, stage_rounds=10, bootstrap_rounds=2, bootstrap_limit=50,
                       keep_features=True)   # a mining stage featurises its new windows
    assert remaining_seconds(phases, kept, 100, 0, False) == pytest.approx(
        stage_2 - 100 * 0.1 + stage_3)
    assert np.isnan(remaining_seconds(Phases(), config, 100, 0, True))


@pytest.mark.parametrize("available, expected", [(24 * 2**30, 12.0), (2**29, 1.0),
                                                 (1000 * 2**30, 64.0), (None, 3.0)])
def test_the_default_memory_follows_the_machine(monkeypatch, available, expected):
    from facedetect._utils import sysinfo
    from facedetect.pipeline._settings import default_memory
    monkeypatch.setattr(sysinfo, "available_memory_bytes", lambda: available)
    memory, line = default_memory()
    assert memory == int(expected * 2**30)
    assert line.startswith(f"memory: {expected:g}" if available is None
                           else f"memory: {expected:.1f} GiB")
    assert "--memory GIB" in line


def test_the_recipe_bins_every_stages_windows_at_their_own_quantiles(small_cbcl):
    """Without keep_features each stage computes all its windows' features, as the recipe
    trained before they could be kept."""
    from skimage import data as skdata
    pictures = [np.ascontiguousarray(skdata.brick()[:160, :160])]
    config = plain_config((1, 1), 4, bootstrap_rounds=1, bootstrap_limit=30, stage_rounds=2)
    result = train_detector(config, load_cbcl(small_cbcl), negatives=pictures,
                            progress=False)
    windows = result.train_counts["faces"] + result.train_counts["non_faces"]
    added = result.model.document["training"]["bootstrap"]["stages"][0][
        "hard_negatives_added"]
    assert [p["windows"] for p in result.phases if p["phase"] == "features"] == [
        windows - added, windows]


def test_mining_skips_an_unreadable_picture_with_the_line_calibration_gives(tmp_path):
    from skimage import data as skdata

    import facedetect
    from facedetect.detector._calibrate_scan import read_pictures
    from facedetect.pipeline._bootstrap import MiningState, hard_negatives
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"\xff\xd8 not a jpeg")
    picture = np.ascontiguousarray(skdata.brick()[:120, :120])
    mined, calibrated, state = [], [], MiningState()
    found = hard_negatives(facedetect.load_model("haar"), [broken, picture], limit=10**6,
                           seed=0, threshold=-50.0, state=state, warn=mined.append)
    assert state.skipped == [str(broken)] and len(found)   # the readable one still mined
    assert len(read_pictures([broken, picture], calibrated.append)) == 1
    assert mined == calibrated and len(mined) == 1 and str(broken) in mined[0]
