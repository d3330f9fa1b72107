"""Cascade training: every stage meets its hit rate on held-out faces, stops by the rules,
resumes to the same cascade, and refuses what it cannot do."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from facedetect.data import load_cbcl
from facedetect.errors import FacedetectError, InterruptedRun
from facedetect.pipeline._bootstrap import NegativeSet, skimage_negatives
from facedetect.pipeline._cascade import stage_threshold
from facedetect.pipeline._settings import CascadeConfig
from facedetect.pipeline._cascade_train import train_cascade
from facedetect.pipeline._config import TrainConfig, split_indices
from facedetect.pipeline._settings import RunOptions

CONFIG = TrainConfig(cost=(2, 1), jitter=0, mirror=True)
RULES = CascadeConfig(stages=3, min_hit_rate=0.95, max_false_alarm_rate=0.5,
                      max_stumps_per_stage=25, negatives_per_stage=150)


@pytest.fixture(scope="module")
def data(small_cbcl):
    return load_cbcl(small_cbcl)


@pytest.fixture(scope="module")
def negatives():
    images, names = skimage_negatives()
    return NegativeSet(images, [], "scikit-image", "skimage:" + ",".join(names))


@pytest.fixture(scope="module")
def trained(data, negatives, tmp_path_factory):
    out = tmp_path_factory.mktemp("cascade") / "cascade.json"
    result = train_cascade(CONFIG, RULES, data, negatives=negatives, out=out, progress=False)
    from facedetect.modelfile._schema import digest
    assert result.model.document["sha256"] == digest(result.model.document)
    return result, out


def test_stage_threshold_keeps_the_hit_rate():
    rng = np.random.default_rng(0)
    for n in (20, 200, 1001):
        scores = np.round(rng.normal(size=n), 1)          # many ties
        for rate in (0.9, 0.95, 0.995):
            cut = stage_threshold(scores, rate)
            assert np.mean(scores > cut) >= rate
            # and no threshold above it would: the next distinct score loses too many
            above = scores[scores > cut].min()
            assert np.mean(scores > above) < rate


@pytest.mark.slow
def test_every_stage_keeps_its_hit_rate_on_the_held_out_faces(trained, data):
    result, _ = trained
    model = result.model
    stages = model.document["training"]["cascade_stages"]
    assert 1 <= len(stages) == len(model.stages) <= 3
    _, held = split_indices(data.labels, CONFIG)
    held_faces = data.images[held][data.labels[held] == 1]
    scores = model.running_scores(held_faces)
    alive = np.ones(len(held_faces), bool)
    for end, (_, threshold), record in zip(model.stage_ends(), model.stages, stages):
        passed = scores[:, end] > threshold
        assert np.mean(passed[alive]) >= RULES.min_hit_rate       # of those still alive
        assert np.mean(passed[alive]) == pytest.approx(record["held_out_hit_rate"])
        assert record["false_alarm_rate"] <= RULES.max_false_alarm_rate or record is stages[-1]
        alive &= passed
    assert np.array_equal(alive, model.decision_function(held_faces) > model.window_threshold)
    assert result.stop_reason


@pytest.mark.slow
def test_an_interrupted_cascade_resumes_to_the_same_model(trained, data, negatives, tmp_path,
                                                         stop_in_stage):
    result, _ = trained
    if len(result.model.stages) < 2:
        pytest.skip("the cascade stopped after one stage")
    out = tmp_path / "c.json"
    stop_in_stage(2)
    with pytest.raises(InterruptedRun, match="resume"):
        train_cascade(CONFIG, RULES, data, negatives=negatives, out=out, progress=False)
    stop_in_stage(None)
    resumed = train_cascade(CONFIG, RULES, data, negatives=negatives, out=out, resume=True,
                            progress=False).model
    assert resumed.document["stumps"] == result.model.document["stumps"]
    assert resumed.detection["stages"] == result.model.detection["stages"]
    assert not (tmp_path / "c.json.checkpoint.json").exists()


def test_a_stage_that_cannot_reach_its_rate_stops_the_cascade(data, negatives):
    rules = CascadeConfig(stages=4, min_hit_rate=0.95, max_false_alarm_rate=0.01,
                          max_stumps_per_stage=2, negatives_per_stage=150)
    result = train_cascade(CONFIG, rules, data, negatives=negatives, progress=False)
    assert len(result.model.stages) == 1
    assert "after 2 stumps" in result.stop_reason


def test_a_capped_stage_is_kept_and_the_next_trained_as_opencv_does(data, negatives):
    """opencv_traincascade keeps a stage at -maxWeakCount and goes on to -numStages."""
    rules = CascadeConfig(stages=3, min_hit_rate=0.95, max_false_alarm_rate=0.01,
                          max_stumps_per_stage=2, negatives_per_stage=150,
                          keep_capped_stages=True)
    result = train_cascade(CONFIG, rules, data, negatives=negatives, progress=False)
    records = result.model.document["training"]["cascade_stages"]
    assert [r["stumps"] for r in records] == [2, 2, 2]
    assert all(r["false_alarm_rate"] > 0.01 for r in records)
    assert result.stop_reason == "all 3 stages trained"
    assert result.model.document["training"]["config"]["cascade"]["keep_capped_stages"]


def test_mining_counts_every_window_it_scans():
    """The acceptance ratio's denominator, against the window positions counted by hand:
    a picture of fewer than FEW_PICTURES is scanned in its 8 orientations, at step 2."""
    import math
    import facedetect
    from facedetect.pipeline._bootstrap import MiningState, hard_negatives
    model = facedetect.load_model()
    picture = np.random.default_rng(0).integers(0, 256, (50, 60), np.uint8)
    state = MiningState()
    found = hard_negatives(model, [picture], 10**9, 0, -np.inf, state=state, pyramid="linear")
    win_w, win_h = model.window
    positions = 0
    for height, width in ((50, 60), (60, 50)):       # as it is, and turned a quarter
        scale = 1.0
        while win_w * scale <= width and win_h * scale <= height:
            level_w, level_h = round(width / scale), round(height / scale)
            positions += (math.ceil((level_h - win_h + 1) / 2)
                          * math.ceil((level_w - win_w + 1) / 2))
            scale *= 1.25
    assert state.scanned == 4 * positions == state.accepted == len(found)
    state = MiningState()
    hard_negatives(model, [picture], 10**9, 0, model.window_threshold, state=state,
                   pyramid="linear")
    assert state.scanned == 4 * positions and state.accepted < state.scanned


def test_mined_windows_are_the_crops_the_model_accepts():
    """Every window mining cuts scores above the threshold when the model scores its
    pixels again (a crop off by a pixel or a level would not)."""
    import facedetect
    from facedetect.pipeline._bootstrap import MiningState, hard_negatives
    model = facedetect.load_model()
    picture = np.random.default_rng(1).integers(0, 256, (70, 90), np.uint8)
    everything = hard_negatives(model, [picture], 10**9, 0, -np.inf, pyramid="linear")
    threshold = float(np.median(model.decision_function(everything)))
    state = MiningState()
    found = hard_negatives(model, [picture], 10**9, 0, threshold, state=state,
                           pyramid="linear")
    scores = model.decision_function(found)
    assert 0 < len(found) == state.accepted < len(everything)
    assert scores.min() > threshold - 1e-4


def test_the_acceptance_target_stops_where_fresh_windows_reach_it(data, negatives, tmp_path,
                                                                 monkeypatch):
    """opencv_traincascade's rule: the stages so far accept at most the target of the
    windows mining scans (measured again here), the stages before them more; a run
    interrupted once its last stage is saved resumes to the same stop."""
    from facedetect.pipeline import _cascade_train as cascade_train
    from facedetect.pipeline._bootstrap import MiningState, hard_negatives
    from facedetect.pipeline._cascade import CASCADE_PYRAMID
    rules = CascadeConfig(stages=8, min_hit_rate=0.95, max_false_alarm_rate=0.5,
                          max_stumps_per_stage=25, negatives_per_stage=150,
                          target_false_alarm_rate=0.05, acceptance_target=True)
    out = tmp_path / "c.json"
    real = cascade_train._finished

    def interrupted_while_saving(*args):
        raise KeyboardInterrupt
    monkeypatch.setattr(cascade_train, "_finished", interrupted_while_saving)
    with pytest.raises(KeyboardInterrupt):
        train_cascade(CONFIG, rules, data, negatives=negatives, out=out, progress=False)
    monkeypatch.setattr(cascade_train, "_finished", real)
    result = train_cascade(CONFIG, rules, data, negatives=negatives, out=out, resume=True,
                           progress=False)
    fresh = train_cascade(CONFIG, rules, data, negatives=negatives, progress=False)
    assert result.model.document["stumps"] == fresh.model.document["stumps"]
    assert result.stop_reason == fresh.stop_reason
    records = result.model.document["training"]["cascade_stages"]
    assert records[0]["acceptance_ratio"] is None
    assert all(r["acceptance_ratio"] > 0.05 for r in records[1:])
    assert "accept" in result.stop_reason and len(records) < 8, result.stop_reason
    state = MiningState()
    hard_negatives(result.model, negatives.mining, 150, CONFIG.seed + len(records),
                   result.model.window_threshold, state=state, pyramid=CASCADE_PYRAMID)
    assert state.accepted / state.scanned <= 0.05
    assert f"{state.accepted / state.scanned:.3g} of the windows" in result.stop_reason


def _record_stage_data(monkeypatch) -> list:
    """The StageData of every stage the next training runs, in order."""
    from facedetect.pipeline import _cascade_train as cascade_train
    seen = []
    real = cascade_train.run_stage

    def recording(stage, stage_data, *args):
        seen.append(stage_data)
        return real(stage, stage_data, *args)
    monkeypatch.setattr(cascade_train, "run_stage", recording)
    return seen


def test_held_out_negatives_measure_each_stage_as_the_scanner_does(data, negatives,
                                                                   monkeypatch):
    """Each stage mines its negatives and as many again from later pictures, trains on the
    first and grows until the held-out ones pass at most the rate: the model's own stage
    sums give both recorded rates."""
    seen = _record_stage_data(monkeypatch)
    rules = CascadeConfig(stages=3, min_hit_rate=0.95, max_false_alarm_rate=0.5,
                          max_stumps_per_stage=25, negatives_per_stage=150,
                          heldout_negatives=120)
    result = train_cascade(CONFIG, rules, data, negatives=negatives, progress=False)
    model, records = result.model, result.model.document["training"]["cascade_stages"]
    assert len(records) == len(seen) >= 2
    for k, (record, used) in enumerate(zip(records, seen)):
        assert (len(used.negatives), len(used.held_negatives)) == (150, 120)
        assert record["heldout_negatives"] == 120
        assert not set(map(bytes, used.held_negatives)) & set(map(bytes, used.negatives))
        rates = [float(np.mean(model.stage_sums(w, k) > record["threshold"]))
                 for w in (used.held_negatives, used.negatives)]
        assert rates == pytest.approx([record["false_alarm_rate"],
                                       record["training_false_alarm_rate"]], abs=1e-12)
        assert record["false_alarm_rate"] <= 0.5 or record["stumps"] == 25
    # the same seed, without held-out negatives: the first stage trains on the same ones
    plain = train_cascade(CONFIG, replace(rules, heldout_negatives=None), data,
                          negatives=negatives, progress=False)
    assert plain.model.document["training"]["cascade_stages"][0]["heldout_negatives"] == 0
    assert np.array_equal(seen[len(records)].negatives, seen[0].negatives)


def test_opencvs_hit_rate_rule_sets_each_threshold_on_the_stages_own_faces(data, negatives,
                                                                           monkeypatch):
    """With ``hit_rate_on="training"`` each stage's threshold is the one that keeps
    ``min_hit_rate`` of the faces it trained on (recomputed from the model's own stage
    sums), as opencv_traincascade sets it from its numPos; the held-out faces' rate is
    still recorded, and a threshold differs from the one the held-out faces would set."""
    seen = _record_stage_data(monkeypatch)
    rules = replace(RULES, hit_rate_on="training")
    result = train_cascade(CONFIG, rules, data, negatives=negatives, progress=False)
    model, records = result.model, result.model.document["training"]["cascade_stages"]
    assert len(records) == len(seen) >= 2
    held_cuts = []
    for k, (record, used) in enumerate(zip(records, seen)):
        own = model.stage_sums(used.faces, k)
        assert record["threshold"] == stage_threshold(own, rules.min_hit_rate)
        assert np.mean(own > record["threshold"]) >= rules.min_hit_rate
        held = model.stage_sums(used.held_faces, k)
        assert np.mean(held > record["threshold"]) == pytest.approx(
            record["held_out_hit_rate"])
        held_cuts.append(stage_threshold(held, rules.min_hit_rate))
    # the rule matters: some stage's threshold is not the held-out faces' one
    assert any(r["threshold"] != cut for r, cut in zip(records, held_cuts))
    assert model.document["training"]["config"]["cascade"]["hit_rate_on"] == "training"
    with pytest.raises(FacedetectError, match="hit_rate_on must be one of held-out, "
                                              "training"):
        replace(RULES, hit_rate_on="all").check()


def test_exhausted_negatives_stop_the_cascade(data):
    few = data.labels == 1
    few[np.flatnonzero(data.labels == 0)[:40]] = True      # 40 non-faces only
    small = type(data)(data.images[few], data.labels[few],
                       [n for n, keep in zip(data.names, few) if keep], data.source)
    tiny = NegativeSet([np.full((19, 19), 128, np.uint8)], [], "one flat picture", "flat")
    rules = CascadeConfig(stages=5, min_hit_rate=0.95, max_stumps_per_stage=25,
                          negatives_per_stage=100)
    result = train_cascade(CONFIG, rules, small, negatives=tiny, progress=False)
    assert "negatives exhausted" in result.stop_reason
    assert len(result.model.stages) >= 1


def test_too_few_held_out_faces_for_the_hit_rate_is_refused(data, negatives):
    with pytest.raises(FacedetectError, match="positives cannot measure a hit rate of 0.995"):
        train_cascade(CONFIG, CascadeConfig(stages=2), data, negatives=negatives,
                      progress=False)


@pytest.mark.parametrize("field, value", [("stages", 0), ("min_hit_rate", 1.0),
                                          ("max_false_alarm_rate", 0.0),
                                          ("max_stumps_per_stage", 0),
                                          ("negatives_per_stage", 3)])
def test_cascade_settings_are_checked_by_name(field, value):
    with pytest.raises(FacedetectError, match=field):
        CascadeConfig(**{field: value}).check()


def test_options_are_checked_before_training(data, negatives):
    with pytest.raises(FacedetectError, match="checkpoint_every"):
        train_cascade(CONFIG, RULES, data, negatives=negatives, progress=False,
                      options=RunOptions(checkpoint_every=0))


@pytest.mark.slow
def test_a_searched_stage_cost_keeps_the_fewest_stumps(data, negatives):
    from facedetect.pipeline._settings import SEARCHED_COSTS
    rules = CascadeConfig(stages=1, min_hit_rate=0.95, max_stumps_per_stage=25,
                          negatives_per_stage=150, search_cost=True)
    searched = train_cascade(CONFIG, rules, data, negatives=negatives, progress=False)
    record = searched.model.document["training"]["cascade_stages"][0]
    assert tuple(record["cost"]) in SEARCHED_COSTS
    for cost in SEARCHED_COSTS:
        given = train_cascade(TrainConfig(cost=cost, jitter=0, mirror=True),
                              CascadeConfig(stages=1, min_hit_rate=0.95,
                                            max_stumps_per_stage=25, negatives_per_stage=150),
                              data, negatives=negatives, progress=False)
        assert record["stumps"] <= given.model.n_stumps


# --- positives of any object -----------------------------------------------------------------

def test_info_file_boxes_are_cut_and_resized(tmp_path):
    from PIL import Image

    from facedetect.data._positives import load_positives_info
    picture = np.zeros((60, 80), np.uint8)
    picture[10:30, 20:40] = 200                       # a bright 20x20 square
    Image.fromarray(picture).save(tmp_path / "p.png")
    (tmp_path / "info.dat").write_text("# comment\np.png 1 20 10 20 20\n\n")
    found = load_positives_info(tmp_path / "info.dat", (10, 10))
    assert found.images.shape == (1, 10, 10) and (found.images == 200).all()


@pytest.mark.parametrize("line, message", [
    ("p.png 2 0 0 10 10", ":1: 2 boxes need 8 numbers"),
    ("p.png x 0 0 10 10", ":1: expected 'path count"),
    ("p.png 1 0 0 0 10", ":1: boxes need"),
    ("p.png 1 70 0 20 20", ":1: box 1 (70 0 20 20) lies outside"),
    ("missing.png 1 0 0 5 5", "missing.png: no such file"),
])
def test_bad_info_lines_are_refused_with_their_line_number(tmp_path, line, message):
    from PIL import Image

    from facedetect.data._positives import load_positives_info
    Image.fromarray(np.zeros((60, 80), np.uint8)).save(tmp_path / "p.png")
    (tmp_path / "info.dat").write_text(line + "\n")
    with pytest.raises(FacedetectError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_positives_info(tmp_path / "info.dat", (24, 24))


def test_a_stretched_sample_is_warned_about(tmp_path):
    from PIL import Image

    from facedetect.data._positives import load_positive_folder
    Image.fromarray(np.zeros((20, 40), np.uint8)).save(tmp_path / "wide.png")
    Image.fromarray(np.zeros((24, 26), np.uint8)).save(tmp_path / "fine.png")
    lines = []
    found = load_positive_folder(tmp_path, (24, 24), warn=lines.append)
    assert found.images.shape == (2, 24, 24)
    assert len(lines) == 1 and "wide.png" in lines[0] and "100% off" in lines[0]


@pytest.mark.slow
@pytest.mark.parametrize("args, message", [
    (["--positives", "x"], "--recipe object"),
    (["--stages", "2", "--window", "20x20"], "--window needs --positives"),
    (["--stages", "2", "--window", "4x4"], "window sides must be 8..256"),
    (["--stages", "2", "--positives", "/nonexistent"], "no such folder"),
    (["--stages", "2", "--positives", "/nonexistent", "--data", "."], "two sources"),
    (["--stages", "2", "--rounds", "5"], "--rounds is for one-stage training"),
    (["--stages", "2", "--algorithm", "cs"], "--algorithm is for one-stage training"),
    (["--stages", "2", "--exact"], "--exact is for one-stage training"),
    (["--stages", "2", "--grain", "5"], "--grain is for one-stage training"),
    (["--stages", "2", "--posterize", "0.5"], "--posterize is for one-stage training"),
    # 0 is what a cascade does, yet refused as --grain 0 is: the flag has no use there
    (["--stages", "2", "--posterize", "0"], "--posterize is for one-stage training"),
    (["--stages", "2", "--prior", "0.1"], "--prior is for one-stage training"),
    (["--stages", "2", "--no-bootstrap"], "--no-bootstrap / --bootstrap-rounds is for"),
])
def test_cascade_flags_are_checked_on_the_command_line(args, message, toy_cbcl_dir):
    import subprocess
    import sys
    data = [] if "--positives" in args else ["--data", str(toy_cbcl_dir)]
    done = subprocess.run([sys.executable, "-m", "facedetect", "train-detector", *data,
                           "--quiet", *args], capture_output=True, text=True)
    assert done.returncode != 0
    assert message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) <= 2


def test_a_cascade_is_evaluated_on_its_held_out_split(trained, data, recwarn):
    from facedetect.pipeline._heldout import evaluate
    result, _ = trained
    report = evaluate(result.model, data)
    _, held = split_indices(data.labels, CONFIG)
    assert report["n_positive"] + report["n_negative"] == len(held)
    assert report["threshold"] == result.model.window_threshold
    assert report["threshold_source"] == "the cascade's last stage"
    thresholds = [p["threshold"] for p in report["roc"]]
    assert all(np.isfinite(thresholds))
    assert not [w for w in recwarn if "invalid value" in str(w.message)]


@pytest.mark.slow
def test_resuming_a_cascade_that_had_stopped_adds_no_stage(trained, data, negatives, tmp_path,
                                                          monkeypatch):
    from facedetect.pipeline import _cascade_train as cascade_train
    result, _ = trained
    out = tmp_path / "c.json"
    real = cascade_train._finished

    def interrupted_while_saving(*args):
        raise KeyboardInterrupt
    monkeypatch.setattr(cascade_train, "_finished", interrupted_while_saving)
    with pytest.raises(KeyboardInterrupt):
        train_cascade(CONFIG, RULES, data, negatives=negatives, out=out, progress=False)
    monkeypatch.setattr(cascade_train, "_finished", real)
    resumed = train_cascade(CONFIG, RULES, data, negatives=negatives, out=out, resume=True,
                            progress=False)
    assert resumed.model.detection["stages"] == result.model.detection["stages"]
    assert resumed.stop_reason == result.stop_reason


@pytest.mark.slow
def test_a_cascade_on_dask_workers_is_the_cascade_of_stages_computed_anew(
        trained, data, negatives, monkeypatch):
    """Each stage's features sharded over two workers (other windows every stage, each
    stage at its own windows' quantiles): the same stumps and stage thresholds as one
    process that computes every stage anew. One process keeps the first stage's edges and
    its positives' bins, which trains another cascade."""
    pytest.importorskip("distributed", reason="Dask is the optional extra "
                        "'facedetect[distributed]'")
    from facedetect.pipeline._stage_features import StageFeatures
    from facedetect.training._cluster import connect, disconnect
    client = connect(workers=2)
    try:
        spread = train_cascade(CONFIG, RULES, data, negatives=negatives, progress=False,
                               options=RunOptions(client=client))
    finally:
        disconnect(client)
    monkeypatch.setattr(StageFeatures, "reuses", property(lambda self: False))
    anew = train_cascade(CONFIG, RULES, data, negatives=negatives, progress=False)
    assert spread.model.document["stumps"] == anew.model.document["stumps"]
    assert spread.model.detection["stages"] == anew.model.detection["stages"]
    assert anew.model.document["stumps"] != trained[0].model.document["stumps"]


def test_a_cascade_refuses_the_one_stage_flags_given_and_only_those():
    import argparse
    from facedetect.cli._cascade_cmd import ONE_STAGE_FLAGS, _check_cascade_flags
    from facedetect.cli._train_cmd import configure
    parser = argparse.ArgumentParser()
    configure(parser)
    nothing_given = parser.parse_args([])
    _check_cascade_flags(nothing_given)   # the recipe's values are not refused
    for flag, (name, _) in ONE_STAGE_FLAGS.items():
        # any value given, even the recipe's own (0 posterised), is a flag with no use
        given = argparse.Namespace(**{**vars(nothing_given), name: 0})
        with pytest.raises(FacedetectError, match="is for one-stage training"):
            _check_cascade_flags(given)
