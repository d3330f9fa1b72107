"""Propose and verify: the verifier's patches, its scores, its model-file section and the
detector that runs it, each against an independent reference."""

import copy
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import facedetect
from facedetect.detector._api import Detector
from facedetect.detector._model import HaarDetectorModel
from facedetect.detector._verifier import context_patches
from facedetect.errors import FacedetectError
from facedetect.haar import feature_matrix, haar_feature_pool
from facedetect.modelfile._io import load_document, reseal
from facedetect.pipeline._verifier import (choose_operating_point, fit_verifier_model,
                                           lowest_meeting, threshold_meeting)
from facedetect.pipeline._verifier_config import VerifierConfig

from . import test_detector_scan

astronaut = test_detector_scan.astronaut
SIZE = 16
CONFIG = VerifierConfig(size=SIZE, rounds=8, features=300, memory=2 ** 30, context=1.5)


def _toy_patches(n: int, seed: int):
    """Faces-to-be: a dark band across the upper half; the rest noise."""
    rng = np.random.default_rng(seed)
    noise = rng.integers(0, 256, (2 * n, SIZE, SIZE)).astype(np.uint8)
    positives = noise[:n].copy()
    positives[:, 4:7, 2:14] //= 4
    return positives, noise[n:]


@pytest.fixture(scope="module")
def patch_model():
    positives, negatives = _toy_patches(60, 0)
    return fit_verifier_model(positives, negatives, CONFIG, (1.0, 10.0))


@pytest.fixture(scope="module")
def verified(patch_model):
    """The shipped Haar model with a toy verifier: proposes at 15 without learnt
    rejection."""
    document = copy.deepcopy(facedetect.load_model("haar").document)
    nested = reseal({k: v for k, v in patch_model.document.items() if k != "sha256"})
    document["verifier"] = {"proposer": {"threshold": 15.0}, "context": CONFIG.context,
                            "weight": 2.0, "threshold": 22.0, "model": nested,
                            "training": {"toy": True}}
    return HaarDetectorModel.from_document(reseal(document))


def test_a_patch_of_one_window_is_the_window_and_a_wider_one_reflects_the_border():
    grey = np.random.default_rng(1).integers(0, 256, (30, 40)).astype(np.uint8)
    assert (context_patches(grey, [[5, 7, 12, 12]], 1.0, 12)[0] == grey[7:19, 5:17]).all()
    # numpy's "reflect" is OpenCV's BORDER_REFLECT_101; twice the side, shrunk by 2:
    # the mean of each 2x2 block
    padded = np.pad(grey.astype(float), 6, mode="reflect")
    wide = padded[0:24, 0:24]   # a 12-pixel window at (0, 0), 24 pixels of context
    expected = wide.reshape(12, 2, 12, 2).mean(axis=(1, 3))
    found = context_patches(grey, [[0, 0, 12, 12]], 2.0, 12)[0].astype(float)
    assert np.abs(found - expected).max() <= 0.5 + 1e-9


def test_patches_cut_together_are_the_picture_reflected_about_each_border():
    """One padded copy serves every patch: each is numpy's reflection of the picture,
    whichever border (or none) it passes and however far the others pass theirs."""
    grey = np.random.default_rng(2).integers(0, 256, (30, 40)).astype(np.uint8)
    windows = np.array([[-3, 4, 12, 12], [30, 25, 12, 12], [10, 10, 12, 12],
                        [0, -9, 12, 12], [35, 0, 12, 12]])
    padded = np.pad(grey, 40, mode="reflect")
    found = context_patches(grey, windows, 2.0, 24)
    for (x, y, w, h), patch in zip(windows, found):   # side 24 = size: no resizing
        x0, y0 = x + w // 2 - 12 + 40, y + h // 2 - 12 + 40
        assert (patch == padded[y0:y0 + 24, x0:x0 + 24]).all()
    assert context_patches(grey, np.zeros((0, 4)), 2.0, 24).shape == (0, 24, 24)


def test_spilled_features_give_the_same_verifier(monkeypatch):
    """Within 0.5 MiB the patches' features spill to a temporary file: the model is the
    one trained in memory."""
    from facedetect.pipeline import _compact
    spilled = []
    real = _compact.compact_features

    def recorded(*args, **kwargs):
        store = real(*args, **kwargs)
        spilled.append(store.chunk_rows is not None)
        return store
    monkeypatch.setattr(_compact, "compact_features", recorded)
    positives, negatives = _toy_patches(60, 0)
    config = dataclasses.replace(CONFIG, features=6000)   # 0.7 MB of bins
    models = [fit_verifier_model(positives, negatives, dataclasses.replace(config,
                                                                           memory=memory),
                                 (1.0, 10.0)) for memory in (2 ** 30, 2 ** 19)]
    assert spilled == [False, True]
    assert models[0].document == models[1].document


def _drawn_pool(config: VerifierConfig, feature_types=None):
    """The seeded subset of the patch's pool that training draws its features from."""
    pool = haar_feature_pool(config.size, config.size, feature_types)
    indices = np.random.default_rng(config.seed).choice(len(pool), config.features,
                                                        replace=False)
    return pool.subset(np.sort(indices))


def _stump_sum(model, patches: np.ndarray, subset) -> np.ndarray:
    """The model's stumps on feature_matrix's values of ``subset``: its decision, by hand."""
    stumps = model.document["stumps"]
    values = feature_matrix(patches, subset, progress=False)[
        :, [s["feature"] for s in stumps]]
    return sum(s["alpha"] * np.where(values[:, t] > s["threshold"], s["polarity"],
                                     -s["polarity"]) for t, s in enumerate(stumps))


def test_the_verifier_scores_what_training_computed(patch_model):
    """Its stumps on the training path's feature values (feature_matrix of the pool)."""
    patches = np.concatenate(_toy_patches(20, 5))
    np.testing.assert_allclose(patch_model.decision_function(patches),
                               _stump_sum(patch_model, patches, _drawn_pool(CONFIG)),
                               atol=1e-9)
    positives, negatives = _toy_patches(40, 9)   # and it learnt the band
    assert (patch_model.decision_function(positives).mean()
            > patch_model.decision_function(negatives).mean())


def test_a_verifier_with_channel_features_scores_what_training_computed():
    """--channels: the features are drawn from the pool with the gradient channels, and the
    verifier's scores are its stumps on feature_matrix's values of that pool."""
    from facedetect.haar import CHANNEL_TYPES, FEATURE_TYPES
    config = dataclasses.replace(CONFIG, channels=True, rounds=30)
    bands, noise = _toy_patches(60, 0)
    # a tenth of each class swapped: no stump separates them, so boosting runs every round
    positives = np.concatenate([bands[6:], noise[:6]])
    negatives = np.concatenate([noise[6:], bands[:6]])
    model = fit_verifier_model(positives, negatives, config, (1.0, 10.0))
    subset = _drawn_pool(config, FEATURE_TYPES + CHANNEL_TYPES)
    chosen = [s["feature"] for s in model.document["stumps"]]
    assert (subset.channels[chosen] >= 0).any()   # some of each kind chosen
    assert (subset.channels[chosen] < 0).any()
    patches = np.concatenate(_toy_patches(20, 5))
    np.testing.assert_allclose(model.decision_function(patches),
                               _stump_sum(model, patches, subset), atol=1e-9)


def test_detect_runs_the_proposer_then_the_verifier(verified, astronaut):
    grey = astronaut
    proposer = Detector(facedetect.load_model("haar").with_detection({"rejection": None}),
                        verifier=False, threshold=15.0)
    proposals = proposer.find(grey)
    verifier = verified.verifier
    patches = context_patches(grey, proposals.windows, verifier.context, SIZE)
    joint = proposals.scores + 2.0 * verifier.model.decision_function(patches)
    found = Detector(verified).detect(astronaut)
    np.testing.assert_array_equal(found.boxes, proposals.boxes[joint > 22.0])
    np.testing.assert_allclose(found.scores, joint[joint > 22.0])
    assert len(proposals) > len(found) > 0
    every = Detector(verified, threshold=-1e6).detect(astronaut)   # the final threshold
    assert len(every) == len(proposals)
    assert len(facedetect.detect(astronaut, verified, threshold=1e6)) == 0


def test_without_the_verifier_it_is_the_one_stage_model(verified, astronaut):
    alone = Detector(verified, verifier=False).detect(astronaut)
    shipped = Detector("haar").detect(astronaut)
    np.testing.assert_array_equal(alone.boxes, shipped.boxes)
    np.testing.assert_array_equal(alone.scores, shipped.scores)
    assert Detector(verified, verifier=False).verifier is None
    with pytest.raises(FacedetectError, match="verifier must be True or False"):
        Detector(verified, verifier="no")


def test_a_verified_model_file_round_trips(verified, tmp_path):
    path = verified.save(tmp_path / "verified.json")
    loaded = facedetect.load_model(path)
    assert loaded.verifier.model.n_stumps == CONFIG.rounds
    assert loaded.verifier.threshold == 22.0 and loaded.verifier.weight == 2.0


def test_a_proposer_with_its_own_pyramid_step_scans_as_that_step_given(verified, astronaut,
                                                                       tmp_path):
    """A file's ``proposer.scale_factor`` is what ``Detector(scale_factor=...)`` gives the
    same model without it; the one-stage model keeps its own step."""
    document = copy.deepcopy(verified.document)
    document["verifier"]["proposer"]["scale_factor"] = 1.25
    stepped = facedetect.load_model(
        HaarDetectorModel.from_document(reseal(document)).save(tmp_path / "stepped.json"))
    assert stepped.verifier.proposer_scale == 1.25
    assert Detector(stepped).params.scale_factor == 1.25
    assert Detector(stepped, verifier=False).params.scale_factor == 1.1
    found = Detector(stepped).detect(astronaut)
    given = Detector(verified, scale_factor=1.25).detect(astronaut)
    np.testing.assert_array_equal(found.boxes, given.boxes)
    np.testing.assert_array_equal(found.scores, given.scores)


@pytest.mark.parametrize("change, message", [
    (lambda v: v.update(context=0.5), "verifier.context"),
    (lambda v: v.update(weight=-1.0), "verifier.weight"),
    (lambda v: v.update(weight=0), "verifier.weight"),
    (lambda v: v.update(threshold="high"), "verifier.threshold"),
    (lambda v: v.pop("training"), "verifier must hold"),
    (lambda v: v.update(proposer={}), "verifier.proposer"),
    (lambda v: v.update(proposer={"threshold": 15.0, "rejection": {"reference": 0.0}}),
     "verifier.proposer.rejection"),
    (lambda v: v["proposer"].update(scale_factor=1.0), "verifier.proposer.scale_factor"),
    (lambda v: v["proposer"].update(scale_factor="coarse"), "verifier.proposer.scale_factor"),
    (lambda v: v["model"].update(cost=[1.0, -2.0]), "checksum"),
    (lambda v: v.update(model=reseal(dict(v["model"], cost=[1.0, -2.0]))), "cost"),
    (lambda v: v.update(model=reseal(dict(v["model"], verifier={}))), "without a verifier"),
    (lambda v: v.update(model=reseal(dict(v["model"], detection=dict(
        v["model"]["detection"], window=[16, 17])))), "window"),
])
def test_a_broken_verifier_section_is_refused_in_one_line(verified, tmp_path, change,
                                                          message):
    document = copy.deepcopy(verified.document)
    change(document["verifier"])
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(reseal(document)))
    with pytest.raises(FacedetectError, match=message) as refused:
        load_document(path)
    assert "\n" not in str(refused.value)


def test_the_threshold_meets_the_target_as_a_brute_force_sweep_finds():
    rng = np.random.default_rng(3)
    pictures = [(None, rng.normal(20, 5, n), rng.normal(0, 2, n), 0.5)
                for n in rng.integers(0, 30, 12)]
    megapixels = 0.5 * len(pictures)
    for weight in (0.5, 2.0):
        joint = np.concatenate([s + weight * v for _, s, v, _ in pictures])
        candidates = np.sort(np.r_[joint.min() - 1, joint])
        for target in (0.5, 3.0, 20.0):
            # the lowest candidate from which every higher candidate meets the target
            meets = [all((joint > c).sum() / megapixels <= target for c in candidates[i:])
                     for i in range(len(candidates))]
            expected = candidates[meets.index(True)] if any(meets) else candidates[-1]
            found = threshold_meeting(pictures, weight, target)
            assert (joint > found).sum() == (joint > expected).sum()
            assert (joint > found).sum() / megapixels <= target
    assert lowest_meeting(np.array([5.0, 5.0]), 1.0) == 1


def test_the_weight_that_finds_most_calibration_faces_is_kept(monkeypatch):
    import facedetect.pipeline._verifier as module
    monkeypatch.setattr(module, "recall_at", lambda faces, crops, w, t: {2.0: 0.9}.get(w, 0.5))
    pictures = [(None, np.array([20.0, 30.0]), np.array([1.0, -1.0]), 1.0)]
    point = choose_operating_point(None, [], pictures, VerifierConfig().weights, 1.0)
    assert point["weight"] == 2.0 and point["calibration_recall"] == 0.9
    assert (np.array([22.0, 28.0]) > point["threshold"]).sum() <= 1


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "facedetect", *args], capture_output=True,
                          text=True, timeout=600)


def test_the_commands_run_or_leave_out_the_verifier(verified, tmp_path, astronaut):
    model = verified.save(tmp_path / "verified.json")
    Image.fromarray(astronaut).save(tmp_path / "a.png")
    both = run_cli("detect", str(tmp_path / "a.png"), "--model", str(model), "--json")
    alone = run_cli("detect", str(tmp_path / "a.png"), "--model", str(model), "--json",
                    "--no-verifier")
    shipped = run_cli("detect", str(tmp_path / "a.png"), "--json", "--model", "haar")
    assert both.returncode == alone.returncode == shipped.returncode == 0, both.stderr
    faces = [len(json.loads(r.stdout)[0]["faces"]) for r in (both, alone, shipped)]
    assert faces[0] == len(Detector(verified).detect(astronaut))
    assert json.loads(alone.stdout)[0]["faces"] == json.loads(shipped.stdout)[0]["faces"]
    exported = run_cli("export-opencv", str(model), str(tmp_path / "v.xml"))
    assert exported.returncode == 0, exported.stderr
    assert "cannot hold the verifier" in exported.stdout
    refused = run_cli("train-verifier", str(model), "--out", str(tmp_path / "again.json"),
                      "--mine-at", "30")
    assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1


def test_the_positives_come_from_training_crops_only(monkeypatch):
    """Held-out and calibration faces are never cut into positives; a proposal that does
    not hold both eyes is no positive; each positive comes with its mirror."""
    from types import SimpleNamespace

    from facedetect.data._wild_faces import calibration_mask, heldout_mask
    from facedetect.detector._detections import Detections
    from facedetect.pipeline._verifier import positive_patches
    groups = [f"person{k}" for k in range(400)]
    crops = [np.full((48, 48), k % 256, np.uint8) for k in range(400)]
    sources = ["mtfl" if k % 3 else "utkface" for k in range(400)]
    faces = SimpleNamespace(groups=groups, crops=crops, sources=np.array(sources),
                            eyes=np.tile([18.0, 20.0, 30.0, 20.0], (400, 1)))
    seen = []

    class Proposer:
        def find(self, grey):
            seen.append(int(grey[0, 0]))
            boxes = np.array([[10.0, 10.0, 28.0, 28.0], [0.0, 0.0, 8.0, 8.0]])
            return Detections(boxes, np.array([20.0, 30.0]), np.array([3, 3]),
                              np.array([[12, 12, 24, 24], [0, 0, 8, 8]]), 2, 10, 0.0)
    patches = positive_patches(Proposer(), faces, CONFIG, lambda items, what: items)
    excluded = heldout_mask(groups) | calibration_mask(groups)
    expected = [k for k in range(400) if not excluded[k] and sources[k] == "mtfl"]
    assert seen == [k % 256 for k in expected]
    assert len(patches) == 2 * len(expected)
    assert (patches[1::2] == patches[0::2][:, :, ::-1]).all()


def test_hard_negatives_are_the_windows_the_verifier_scores_highest():
    """A bootstrap pass keeps, of each picture's windows and groups, the ``per_picture``
    whose patches ``hardness`` scores highest (brute force: every patch cut and ranked);
    without it, a seeded random draw of as many."""
    from types import SimpleNamespace

    from facedetect.pipeline._verifier import negative_patches
    rng = np.random.default_rng(3)
    pictures = [rng.integers(0, 256, (60, 80)).astype(np.uint8) for _ in range(3)]
    rects = np.array([[x, y, 16, 16] for x in range(0, 60, 6) for y in (2, 30)])

    class Miner:
        params = SimpleNamespace(min_neighbors=0)   # groups of one: each window too

        def raw_windows(self, grey):
            return rects, np.linspace(1, 2, len(rects)), None
    config = dataclasses.replace(CONFIG, per_picture=5)
    brightness = lambda patches: patches.reshape(len(patches), -1).mean(axis=1)  # noqa: E731
    hard = negative_patches(Miner(), pictures, config, lambda items, what: items, brightness)
    drawn = negative_patches(Miner(), pictures, config, lambda items, what: items)
    assert hard.shape == drawn.shape == (15, SIZE, SIZE)
    for k, grey in enumerate(pictures):
        every = context_patches(grey, np.concatenate([rects, rects]), CONFIG.context, SIZE)
        expected = np.sort(brightness(every))[::-1][:5]
        np.testing.assert_allclose(np.sort(brightness(hard[5 * k:5 * k + 5]))[::-1],
                                   expected)
    assert brightness(hard).mean() > brightness(drawn).mean()


@pytest.mark.parametrize("bootstrap", [-1, 6])
def test_a_bootstrap_outside_0_to_5_passes_is_refused(bootstrap):
    with pytest.raises(FacedetectError, match="bootstrap"):
        dataclasses.replace(CONFIG, bootstrap=bootstrap).validate()


@pytest.mark.parametrize("target", [0.0, -1.0, float("nan"), float("inf"), 1e7])
def test_a_target_that_is_no_rate_is_refused_before_the_work(target):
    with pytest.raises(FacedetectError, match="target must be"):
        dataclasses.replace(CONFIG, target=target).validate()
    dataclasses.replace(CONFIG, target=None).validate()   # the model's own


_EVERY_90TH: dict = {}


@pytest.fixture
def small_verifier_data(monkeypatch):
    """``(faces folder, negatives folder)``, their data cut small wherever it is read
    (every 90th face, 6 mining and 4 calibration pictures), and no proposer rejection
    (the default's training faces need all the data)."""
    import dataclasses

    from facedetect.data import _wild_faces
    from facedetect.pipeline import _bootstrap, _recalibrate

    from .conftest import needs_data
    folders = needs_data("faces"), needs_data("negatives")
    load = _wild_faces.load_wild_faces

    def every_90th(folder, *args, **kwargs):
        # read once per test process: the 26,980 crops take about 20 s to read
        key = str(Path(folder).resolve())
        if key not in _EVERY_90TH:
            faces = load(folder, *args, **kwargs)
            _EVERY_90TH[key] = faces.subset(np.arange(len(faces.crops)) % 90 == 0)
        return _EVERY_90TH[key]
    monkeypatch.setattr(_wild_faces, "load_wild_faces", every_90th)
    find = _bootstrap.NegativeSet.find
    monkeypatch.setattr(_bootstrap.NegativeSet, "find", classmethod(
        lambda cls, *a, **k: (lambda n: dataclasses.replace(
            n, mining=n.mining[:6], calibration=n.calibration[:4]))(find(*a, **k))))
    monkeypatch.setattr(_recalibrate, "training_faces_of", lambda *a: (None, None))
    return folders


@pytest.mark.parametrize("flags, scale", [([], 1.25),
                                          (["--propose-scale", "1.1", "--channels",
                                            "--false-alarms", "3"], 1.1)])
def test_train_verifier_command_end_to_end(tmp_path, capsys, cbcl_dir, small_verifier_data,
                                           flags, scale):
    """The command on the shipped default, its data cut small (a few hundred faces and
    pictures): it writes a model whose verifier detect runs (its proposer at the pyramid
    step asked for, its pool with channel features where asked, its joint point chosen at
    the false-alarm rate asked for)."""
    from facedetect.cli._main import main
    faces_dir, negatives_dir = small_verifier_data
    out = tmp_path / "verified.json"
    code = main(["train-verifier", "default", "--out", str(out), "--faces", str(faces_dir),
                 "--negatives", str(negatives_dir), "--data", str(cbcl_dir), "--rounds", "5",
                 "--features", "500", "--max-features", "300", "--quiet", *flags])
    assert code == 0, capsys.readouterr().err
    assert f"wrote {out}" in capsys.readouterr().out
    model = facedetect.load_model(out)
    assert model.verifier.model.n_stumps == 5 and model.verifier.weight in (0.5, 1, 2, 4)
    assert model.document["verifier"]["training"]["config"]["max_features"] == 300
    assert model.verifier.proposer_scale == scale
    assert model.document["verifier"]["training"]["config"].get("propose_scale") == scale
    assert model.document["verifier"]["training"]["config"]["channels"] == (
        "--channels" in flags)
    record = model.document["verifier"]["training"]
    assert record["target_false_alarms_per_megapixel"] == (3.0 if "--false-alarms" in flags
                                                           else 0.1)
    found = facedetect.detect(np.full((64, 64), 128, np.uint8), out)
    assert len(found) == 0


@pytest.mark.parametrize("flags, verified", [([], True), (["--verifier"], True),
                                             (["--no-verifier"], False),
                                             (["--memory", "1.5", "--false-alarms",
                                               "0.75"], True)])
def test_train_detector_verifier_trains_the_verifier_on_the_plans_data(
        tmp_path, monkeypatch, capsys, cbcl_dir, small_verifier_data, flags, verified):
    """The faces recipe (or ``--verifier``): the model it trains (here the shipped
    default, as the boosting itself is tested elsewhere) gets a verifier from the data the
    run found, written over ``--out``, and the summary says so; ``--no-verifier`` keeps
    the one-stage model."""
    from types import SimpleNamespace

    from facedetect.cli._main import main
    from facedetect.pipeline import _train, _verifier
    faces_dir, negatives_dir = small_verifier_data
    seen = {}

    def trained(plan, out, **kwargs):
        seen["faces"] = len(plan.faces.crops)
        model = facedetect.load_model("default").one_stage()
        model.save(out)
        return SimpleNamespace(model=model, train_counts={"faces": 1, "non_faces": 1},
                               seconds=1.0, feature_seconds=0.0, phases=[],
                               scratch_bytes=0)
    monkeypatch.setattr(_train, "train_detector", trained)
    real = _verifier.train_verifier

    def small(*args, config, **kwargs):
        seen["memory"], seen["target"] = config.memory, config.target
        return real(*args, config=dataclasses.replace(config, rounds=5, features=500),
                    **kwargs)
    monkeypatch.setattr(_verifier, "train_verifier", small)
    out = tmp_path / "both.json"
    code = main(["train-detector", *flags, "--out", str(out), "--faces", str(faces_dir),
                 "--negatives", str(negatives_dir), "--data", str(cbcl_dir), "--quiet"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert ("verifier: " in printed.out and "detect runs both" in printed.out) == verified
    model = facedetect.load_model(out)
    assert (model.verifier.model.n_stumps == 5) if verified else model.verifier is None
    assert 0 < seen["faces"] < 1000   # the plan's faces: every 90th of 26,980
    if verified:   # the run's --memory bounds the verifier's features too
        assert seen["memory"] == (int(1.5 * 2**30) if "--memory" in flags else None)
        # --false-alarms, where given, is the verifier's point too: what detect uses
        assert seen["target"] == (0.75 if "--false-alarms" in flags else
                                  VerifierConfig().target)


def test_one_stage_is_the_model_without_its_verifier(verified):
    assert verified.one_stage().document == facedetect.load_model("haar").document
    assert verified.one_stage().verifier is None
    plain = facedetect.load_model("haar")
    assert plain.one_stage() is plain


@pytest.mark.parametrize("target, given", [(0.5, True), (20.0, False)])
def test_calibrate_chooses_a_verified_models_joint_point_again(
        verified, tmp_path, capsys, monkeypatch, small_verifier_data, target, given):
    """``calibrate`` on a model with a verifier: the joint score's threshold it writes
    keeps what ``Detector`` raises on the calibration pictures at most at the target (the
    rate given, else the verifier's own recorded one, not the one-stage model's), and
    the verifier's stumps and proposer stay as they were."""
    from facedetect.cli import _calibrate_cmd
    from facedetect.cli._main import main
    from facedetect.images import read_grey
    faces_dir, negatives_dir = small_verifier_data
    real = _calibrate_cmd._calibration_pictures
    pictures = []
    monkeypatch.setattr(_calibrate_cmd, "_calibration_pictures",
                        lambda explicit: pictures.extend(real(explicit)[:4]) or pictures)
    if not given:   # the verifier's recorded target, apart from the one-stage model's
        document = copy.deepcopy(verified.document)
        document["verifier"]["training"] = {"target_false_alarms_per_megapixel": target}
        verified = HaarDetectorModel.from_document(reseal(document))
    image_target = verified.calibration["image"]["target_false_alarms_per_megapixel"]
    assert image_target != target
    source, out = verified.save(tmp_path / "v.json"), tmp_path / "c.json"
    code = main(["calibrate", str(source), "--negatives", str(negatives_dir), "--faces",
                 str(faces_dir), *(["--false-alarms", str(target)] if given else []),
                 "--out", str(out), "--quiet"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "with the verifier (what detect uses)" in printed.out
    assert f"at {target:g} false alarms per megapixel)" in printed.out
    model = facedetect.load_model(out)
    assert model.calibration["image"]["target_false_alarms_per_megapixel"] == (
        target if given else image_target)
    section, before = model.document["verifier"], verified.document["verifier"]
    assert section["model"] == before["model"] and section["proposer"] == before["proposer"]
    assert section["training"]["target_false_alarms_per_megapixel"] == target
    detector = Detector(model, max_pixels=None)
    raised = sum(len(detector.detect(read_grey(p))) for p in pictures)
    megapixels = sum(read_grey(p).size for p in pictures) / 1e6
    assert raised / megapixels <= target
