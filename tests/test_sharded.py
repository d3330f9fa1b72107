"""Feature-sharded boosting on Dask: the same model as one process, bit for bit, with a
worker killed mid-training too; connection and input errors."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from facedetect.errors import FacedetectError
from facedetect.haar import haar_feature_pool
from facedetect.pipeline._storage import HaarColumns, compact_features, exact_features
from facedetect.training import AdaBoost, AdaBoostDB, CostSensitiveAdaBoost
from facedetect.training._cluster import check_versions
from facedetect.training._sharded import (ShardedFeatures, max_shards,
                                         merge_shards, shard_bounds)

distributed = pytest.importorskip("distributed", reason="Dask is the optional extra "
                                  "'facedetect[distributed]'")

POOL = haar_feature_pool(10, 10)   # 5,025 features: up to 19 shards


@pytest.fixture(scope="module")
def client():
    from facedetect.training._cluster import connect, disconnect
    client = connect(workers=2)
    yield client
    disconnect(client)


@pytest.fixture(scope="module")
def windows():
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (400, 10, 10), dtype=np.uint8)
    labels = (images[:, 3:7, 2:8].mean((1, 2)) + rng.normal(0, 12, 400) > 128).astype(int)
    return images, labels


def fitted(estimator):
    return (estimator.features_, estimator.thresholds_, estimator.polarities_,
            estimator.alphas_)


def assert_same_model(one, many):
    for a, b in zip(fitted(one), fitted(many)):
        np.testing.assert_array_equal(a, b)
    assert one.n_rounds_ == many.n_rounds_


@pytest.mark.slow
@pytest.mark.parametrize("make", [lambda: AdaBoostDB(12, cost=(1, 4)),
                                  lambda: AdaBoostDB(5, cost=(3, 1), search="exhaustive"),
                                  lambda: AdaBoost(8),
                                  lambda: CostSensitiveAdaBoost(3, cost=(1, 3))],
                         ids=["db", "dbn", "adaboost", "cs"])
@pytest.mark.parametrize("shards", [2, 7])   # 5,025 features divide evenly into neither
def test_exact_shards_give_the_one_process_model_bit_for_bit(client, windows, make, shards):
    images, y = windows
    X, order = exact_features(images, POOL, progress=False)
    one = make().fit(X, y, order=order)
    sharded = ShardedFeatures(client, HaarColumns(POOL, True, 2**30), len(POOL), shards)
    many = make().fit_sharded(sharded.set_windows(images), y)
    assert_same_model(one, many)


@pytest.mark.parametrize("shards", [2, 5])
def test_compact_shards_give_the_one_process_model_bit_for_bit(client, windows, shards):
    images, y = windows
    one = AdaBoostDB(12, cost=(1, 4)).fit_binned(compact_features(images, POOL, 2**30,
                                                                  progress=False), y)
    sharded = ShardedFeatures(client, HaarColumns(POOL, False, 2**30), len(POOL), shards)
    many = AdaBoostDB(12, cost=(1, 4)).fit_sharded(sharded.set_windows(images), y)
    assert_same_model(one, many)


def test_new_windows_extend_the_shards(client, windows):
    """A bootstrap stage appends windows: the shards then hold the features of all."""
    images, y = windows
    sharded = ShardedFeatures(client, HaarColumns(POOL, True, 2**30), len(POOL), 2)
    sharded.set_windows(images[:300]).set_windows(images)
    X, order = exact_features(images, POOL, progress=False)
    assert_same_model(AdaBoostDB(6, cost=(1, 2)).fit(X, y, order=order),
                      AdaBoostDB(6, cost=(1, 2)).fit_sharded(sharded, y))


def test_a_stage_extends_compact_shards_with_the_new_windows_features_alone(client, windows):
    """With the first windows setting the edges, the shards compute the features of the
    windows a stage adds and nothing else: the one process's store of all, bit for bit."""
    images, y = windows
    one = AdaBoostDB(8, cost=(1, 4)).fit_binned(
        compact_features(images, POOL, 2**30, progress=False, edges_from=300), y)
    sharded = ShardedFeatures(client, HaarColumns(POOL, False, 2**30), len(POOL), 2)
    assert sharded.set_windows(images[:300], edges_from=300).computed == 300
    assert sharded.set_windows(images, edges_from=300).computed == len(images) - 300
    assert_same_model(one, AdaBoostDB(8, cost=(1, 4)).fit_sharded(sharded, y))


def test_other_windows_of_more_rows_are_sent_whole(client, windows):
    """A cascade's next stage has other windows, maybe more: never taken for an extension."""
    images, y = windows
    sharded = ShardedFeatures(client, HaarColumns(POOL, True, 2**30), len(POOL), 2)
    sharded.set_windows(images[::-1][:300]).set_windows(images)
    X, order = exact_features(images, POOL, progress=False)
    assert_same_model(AdaBoostDB(6, cost=(1, 2)).fit(X, y, order=order),
                      AdaBoostDB(6, cost=(1, 2)).fit_sharded(sharded, y))


@pytest.mark.slow
def test_a_worker_killed_mid_training_changes_nothing(windows):
    """Dask recomputes the lost shard from the windows on a worker left (or the one the
    nanny restarts) and the round runs again: the model is still the one process's."""
    from facedetect.training._cluster import connect, disconnect
    images, y = windows
    X, order = exact_features(images, POOL, progress=False)
    one = AdaBoostDB(10, cost=(1, 4)).fit(X, y, order=order)
    client = connect(workers=2)
    try:
        sharded = ShardedFeatures(client, HaarColumns(POOL, True, 2**30), len(POOL), 2)
        sharded.set_windows(images)
        before = set(client.scheduler_info()["workers"])
        killed = []

        def kill_one(model, state):
            if len(state.alphas) == 4:
                victim = sorted(before)[0]
                os.kill(client.run(os.getpid, workers=[victim])[victim], signal.SIGKILL)
                killed.append(victim)
                time.sleep(1.0)

        many = AdaBoostDB(10, cost=(1, 4)).fit_sharded(sharded, y, callback=kill_one)
        assert killed and killed[0] not in client.scheduler_info()["workers"]
        assert_same_model(one, many)
    finally:
        disconnect(client)


def test_the_pipeline_on_workers_saves_the_same_model(client, small_cbcl, tmp_path):
    from facedetect.data import load_cbcl
    from facedetect.pipeline._train import RunOptions, TrainConfig, train_detector
    config = TrainConfig(cost=(1, 5), rounds=8, jitter=0, mirror=False, bootstrap_rounds=0)
    data = load_cbcl(small_cbcl)
    alone = train_detector(config, data, progress=False, out=tmp_path / "one.json")
    spread = train_detector(config, data, progress=False, out=tmp_path / "many.json",
                            options=RunOptions(client=client))
    assert len(alone.model.document["stumps"]) == 8
    assert alone.model.document["stumps"] == spread.model.document["stumps"]
    assert alone.model.operating_point == spread.model.operating_point


@pytest.mark.slow
def test_a_checkpoint_resumes_on_workers_to_the_same_model(client, small_cbcl, tmp_path,
                                                          monkeypatch):
    """Interrupted in one process, finished on two workers: the uninterrupted model."""
    from facedetect.data import load_cbcl
    from facedetect.pipeline._train import RunOptions, TrainConfig, train_detector
    config = TrainConfig(cost=(1, 5), rounds=8, jitter=0, mirror=False, bootstrap_rounds=0)
    data = load_cbcl(small_cbcl)
    whole = train_detector(config, data, progress=False, out=tmp_path / "whole.json").model
    assert whole.n_stumps == 8
    original = AdaBoostDB._boost_once
    calls = {"n": 0}

    def interrupted(self, *args):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return original(self, *args)

    monkeypatch.setattr(AdaBoostDB, "_boost_once", interrupted)
    out = tmp_path / "resumed.json"
    with pytest.raises(FacedetectError, match="interrupted after 4 rounds"):
        train_detector(config, data, out=out, progress=False,
                       options=RunOptions(checkpoint_every=2))
    monkeypatch.setattr(AdaBoostDB, "_boost_once", original)
    resumed = train_detector(config, data, out=out, resume=True, progress=False,
                             options=RunOptions(client=client)).model
    assert resumed.document["stumps"] == whole.document["stumps"]


def test_workers_dask_cannot_recover_leave_a_checkpoint(client, small_cbcl, tmp_path,
                                                       monkeypatch):
    """Dask giving up (a worker killed again and again, the scheduler gone) stops the run
    with its rounds so far in the checkpoint, for --resume."""
    from facedetect.data import load_cbcl
    from facedetect.errors import InterruptedRun
    from facedetect.pipeline._train import RunOptions, TrainConfig, train_detector
    config = TrainConfig(cost=(1, 5), rounds=8, jitter=0, mirror=False, bootstrap_rounds=0)
    original = ShardedFeatures.select
    calls = {"n": 0}

    def failing(self, estimator, state):
        calls["n"] += 1
        if calls["n"] == 4:
            raise OSError("Timed out trying to connect to tcp://127.0.0.1:8786")
        return original(self, estimator, state)

    monkeypatch.setattr(ShardedFeatures, "select", failing)
    out = tmp_path / "m.json"
    with pytest.raises(InterruptedRun, match=r"after 3 rounds \(the Dask workers failed: "
                                              r"OSError\); checkpoint saved"):
        train_detector(config, load_cbcl(small_cbcl), out=out, progress=False,
                       options=RunOptions(client=client, checkpoint_every=100))
    assert (tmp_path / "m.json.checkpoint.json").exists()


def test_shard_bounds_cover_every_feature_once():
    for n_features, n_shards in [(5025, 1), (5025, 19), (63960, 249), (1000, 7)]:
        bounds = shard_bounds(n_features, n_shards)
        assert bounds[0][0] == 0 and bounds[-1][1] == n_features
        assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
        assert min(stop - start for start, stop in bounds) >= n_features // n_shards
    assert max_shards(63960) == 249 and max_shards(100) == 1


def test_merge_keeps_the_first_of_equal_scores_and_the_smallest_loss():
    choices = [None, {"score": 3.0, "feature": 10, "roots": 1},
               {"score": 3.0, "feature": 900, "roots": 2}, {"score": 1.0, "feature": 2000,
                                                             "roots": 0}]
    assert merge_shards(choices)["feature"] == 10
    assert merge_shards(choices)["roots"] == 3
    assert merge_shards(choices, larger_is_better=False)["feature"] == 2000
    assert merge_shards([None, None]) is None


def test_too_many_shards_are_refused(client):
    with pytest.raises(FacedetectError, match="choose 1 to 19"):
        ShardedFeatures(client, HaarColumns(POOL, True, 2**30), len(POOL), 20)
    with pytest.raises(FacedetectError, match="choose 1 to 19"):
        ShardedFeatures(client, HaarColumns(POOL, True, 2**30), len(POOL), 0)


def test_workers_of_another_version_are_refused():
    import importlib.metadata

    class OtherVersions:
        def __init__(self, answer):
            self.answer = answer

        def run(self, function, *args, on_error="raise"):
            return {"tcp://10.0.0.2:4000": self.answer}
    ours = importlib.metadata.version("facedetect")
    with pytest.raises(FacedetectError, match=r"tcp://10.0.0.2:4000 runs facedetect 0.0.9, "
                                              f"this process {ours}"):
        check_versions(OtherVersions("0.0.9"))
    missing = importlib.metadata.PackageNotFoundError("facedetect")
    with pytest.raises(FacedetectError, match=r"runs facedetect none \(PackageNotFoundError"):
        check_versions(OtherVersions(missing))
    check_versions(OtherVersions(ours))


def test_the_workers_of_a_real_cluster_pass_the_version_check(client):
    check_versions(client)


def cli(*arguments, timeout=120):
    return subprocess.run([sys.executable, "-m", "facedetect.cli._train_cmd", *arguments],
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_an_unreachable_scheduler_is_one_line_within_the_timeout(tmp_path, toy_cbcl_dir):
    start = time.perf_counter()
    done = cli("--recipe", "cbcl", "--scheduler", "tcp://127.0.0.1:9", "--rounds", "2",
               "--no-bootstrap",
               "--data", str(toy_cbcl_dir), "--out", str(tmp_path / "m.json"))
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in lines[0]
    assert time.perf_counter() - start < 60


@pytest.mark.parametrize("flags, message", [(["--workers", "0"], "expected an integer in 1..256"),
                                            (["--workers", "257"], "1..256"),
                                            (["--workers", "2", "--scheduler", "tcp://x:1"],
                                             "give one of them")])
def test_bad_worker_flags_are_one_line(tmp_path, flags, message):
    done = cli(*flags, "--rounds", "2", "--no-bootstrap", "--out", str(tmp_path / "m.json"))
    assert done.returncode != 0
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_dask_is_not_imported_without_workers():
    code = ("import sys; import facedetect.cli._train_cmd, facedetect.pipeline._train, "
            "facedetect.pipeline._cascade_train; print('dask' in sys.modules or "
            "'distributed' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "False"
