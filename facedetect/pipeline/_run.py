"""One training run's shared settings and its boosting stage: features, fit, mine.

:class:`RunOptions` says how a run reports and saves; :class:`Run` is what the stages of
one run share. The boosting stage computes the windows' features (:mod:`._storage`), fits
with a progress bar and checkpoints (:mod:`._checkpoint`), and the mining stage collects
hard negatives with the model so far (:mod:`._bootstrap`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sklearn import config_context

from .._utils.progress import progress_bar

from ..errors import FacedetectError, InterruptedRun
from .._utils.interrupts import terminate_as_interrupt
from ..training._binned import BinnedFeatures
from ..training._boosting import TrainingState
from ..training._sharded import ShardedFeatures
from ._assemble import haar_detector_model
from ._bootstrap import MiningState, NegativeSet, mined_windows, mining_steps
from ._checkpoint import RunState, save_checkpoint
from ._config import TrainConfig
from ._phases import Phases
from ._storage import FeatureSource


def make_estimator(config: TrainConfig, rounds: int | None = None):
    """The estimator ``config.algorithm`` names (:mod:`facedetect.training._algorithms`),
    seeded, for ``rounds`` rounds (default ``config.rounds``). Its parameters come from a
    checked configuration: fit it inside :func:`checked_once`."""
    from ..training._algorithms import ALGORITHMS as ESTIMATORS, AdaBoostDB, make_algorithm
    params = {"random_state": config.seed, "max_features": config.max_features}
    if ESTIMATORS[config.algorithm].estimator is AdaBoostDB:
        params["selection"] = config.selection
    return make_algorithm(config.algorithm, rounds or config.rounds, config.cost, **params)


def checked_once():
    """Fit the run's estimators without checking their parameters again: the plan checked
    the whole configuration they come from (scikit-learn's ``skip_parameter_validation``,
    as its meta-estimators skip their nested estimators' checks)."""
    return config_context(skip_parameter_validation=True)


@dataclass
class Run:
    """What the stages of one training share."""

    config: TrainConfig
    run_config: dict
    pool: object
    checkpoint: Path | None
    checkpoint_every: int
    progress: bool
    log: object
    features: FeatureSource
    negatives: NegativeSet | None
    warn: object
    feature_seconds: float = 0.0
    stages: list = field(default_factory=list)
    phases: Phases = field(default_factory=Phases)
    # When this process started the run, and the seconds earlier processes spent on it
    # (a resumed run's checkpoint says): the run's time is their sum.
    started: float = field(default_factory=time.perf_counter)
    seconds_before: float = 0.0

    def seconds(self) -> float:
        """Seconds spent on the run so far, over every resume."""
        return self.seconds_before + time.perf_counter() - self.started

    def stage_name(self, stage: int) -> str:
        total = self.config.bootstrap_rounds + 1
        return f"stage {stage + 1}/{total}" if total > 1 else "training"

    def save(self, state: RunState) -> None:
        if self.checkpoint is not None:
            state.seconds = self.seconds()
            save_checkpoint(self.checkpoint, state, self.run_config)

    def interrupted(self, state: RunState, what: str):
        if self.checkpoint is None:
            return KeyboardInterrupt()
        self.save(state)
        return InterruptedRun(f"interrupted {what}; checkpoint saved to {self.checkpoint}; "
                               "run again with --resume to finish")


def _features(run: Run, images, edges_from: int | None, stage: int):
    # Room for the windows the mining stages may add (the last stage bins all its windows
    # anew): they are then stored without a copy.
    capacity = (None if edges_from is None else edges_from + max(
        0, run.config.bootstrap_rounds - 1) * run.config.bootstrap_limit)
    with run.phases.timed("features", stage + 1) as record:
        store = run.features(images, run.pool, run.progress, edges_from, capacity)
        record["windows"] = run.features.computed
    run.feature_seconds += record["seconds"]
    if run.progress:
        where = ("exact" if run.config.uses_exact else "compact") + (
            f", on {len(store.bounds)} workers' shards" if isinstance(store, ShardedFeatures)
            else "")
        kept = len(images) - run.features.computed
        run.log(f"features: {len(run.pool):,} x {run.features.computed:,} windows ({where}) "
                f"in {record['seconds']:.1f} s" + (f"; those of {kept:,} windows kept from "
                                                    "the stage before" if kept else ""))
    return store


def boost_stage(run: Run, images, y, state: RunState, edges_from: int | None = None):
    """Boost one stage on ``images``; compact bins take their edges from the first
    ``edges_from`` windows (:class:`._storage.FeatureSource`)."""
    try:
        store = _features(run, images, edges_from, state.stage)
    except KeyboardInterrupt:
        raise run.interrupted(state, "while computing features") from None
    rounds = run.config.rounds_at(state.stage)
    estimator = make_estimator(run.config, rounds)
    done = len(state.boosting.alphas) if state.boosting is not None else 0
    with run.phases.timed("boosting", state.stage + 1, rounds=rounds - done,
                          windows=len(y)):
        _fit_with_checkpoints(run, estimator, store, y, state)
    state.boosting = estimator.training_state_
    state.mining = MiningState()
    run.save(state)
    return estimator


def _fit_with_checkpoints(run: Run, estimator, store, y, state: RunState):
    """Fit with a progress bar, periodic checkpoints and a checkpoint on interruption."""
    decision = np.zeros(len(y))
    resumed = state.boosting
    if resumed is not None and (len(resumed.weights) != len(y) or any(
            not 0 <= f < len(run.pool) for f, _, _ in resumed.stumps)):
        raise FacedetectError(f"{run.checkpoint}: the checkpoint does not match these "
                              "training windows; train again without --resume")
    if resumed is not None:
        for (f, threshold, polarity), alpha in zip(resumed.stumps, resumed.alphas):
            decision += alpha * _outputs(store, f, threshold, polarity)
    bar = progress_bar(total=run.config.rounds_at(state.stage),
                       initial=len(resumed.alphas) if resumed else 0,
                       desc=f"{run.stage_name(state.stage)} boosting", unit="round",
                       disable=not run.progress)
    snapshot = {}

    def on_round(model, run_state):
        f, threshold, polarity = run_state.stumps[-1]
        decision[:] += run_state.alphas[-1] * _outputs(store, f, threshold, polarity)
        predicted = decision > 0
        history = run_state.history[-1]
        bar.update(1)
        bar.set_postfix(s=f"{history['seconds']:.2f}", roots=history["roots"],
                        FN=f"{np.mean(~predicted[y == 1]):.3f}",
                        FP=f"{np.mean(predicted[y == 0]):.3f}")
        snapshot["state"] = _copy_state(run_state)
        if len(run_state.alphas) % run.checkpoint_every == 0:
            run.save(RunState(state.stage, state.extra, snapshot["state"]))

    try:
        with terminate_as_interrupt(), checked_once():
            if isinstance(store, ShardedFeatures):
                estimator.fit_sharded(store, y, callback=on_round, state=resumed)
            elif isinstance(store, BinnedFeatures):
                estimator.fit_binned(store, y, callback=on_round, state=resumed)
            else:
                estimator.fit(store[0], y, order=store[1], callback=on_round, state=resumed)
    except KeyboardInterrupt:
        bar.close()
        raise _stopped(run, state, snapshot, "") from None
    except Exception as error:
        # Workers Dask could not recover (killed again and again, the scheduler gone):
        # the rounds so far are kept, and --resume finishes on any number of workers.
        if not isinstance(store, ShardedFeatures) or isinstance(error, (FacedetectError,
                                                                        ValueError)):
            raise
        bar.close()
        raise _stopped(run, state, snapshot,
                       f" (the Dask workers failed: {type(error).__name__})") from None
    bar.close()


def _stopped(run: Run, state: RunState, snapshot: dict, why: str):
    if "state" not in snapshot:
        return run.interrupted(state, "before the first round" + why)
    rounds = len(snapshot["state"].alphas)
    return run.interrupted(RunState(state.stage, state.extra, snapshot["state"]),
                           f"after {rounds} rounds{why}")


def _outputs(store, f, threshold, polarity):
    if isinstance(store, (BinnedFeatures, ShardedFeatures)):
        return store.outputs_at(f, threshold, polarity)
    X = store[0]
    return np.where(X[:, f] > threshold, polarity, -polarity)


def _copy_state(state):
    return TrainingState(state.weights.copy(), state.log_acc_pos, state.log_acc_neg,
                         list(state.stumps), list(state.alphas), list(state.history),
                         state.finished)


def estimator_from_state(config: TrainConfig, state, y, n_features: int):
    """The estimator a finished boosting state describes, without any features."""
    estimator = make_estimator(config, len(state.alphas))
    placeholder = np.broadcast_to(np.uint8(0), (n_features, len(y)))
    with checked_once():
        estimator.fit_binned(BinnedFeatures(placeholder, None, None), y, state=state)
    return estimator


def mine_stage(run: Run, estimator, faces, state: RunState):
    config = run.config
    current = haar_detector_model(estimator, run.pool).with_rejection(faces)
    saved_at = state.mining.position
    try:
        with terminate_as_interrupt(), run.phases.timed("mining", state.stage + 1):
            for mining in mining_steps(current, run.negatives.mining, config.bootstrap_limit,
                                       config.seed + state.stage, config.bootstrap_threshold,
                                       state=state.mining, progress=run.progress,
                                       warn=run.warn):
                if mining.position - saved_at >= 25:
                    run.save(state)
                    saved_at = mining.position
            return mined_windows(current, state.mining)
    except KeyboardInterrupt:
        raise run.interrupted(state, f"while mining ({run.stage_name(state.stage)})") from None
