"""The CBCL training workflow behind ``train-detector``: split, features, boost, mine, save.

A run is a sequence of stages: compute the features of the windows so far (:mod:`.storage`),
boost, mine hard negatives (:mod:`.bootstrap`), repeat; then the window operating point
(:mod:`.operating_point`), learnt rejection and the image operating point
(:mod:`.image_point`). Every stage can be interrupted and resumed (:mod:`.checkpoint`).
The settings and the data split are in :mod:`.config`.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from ..data import load_cbcl
from ..detector.model import HaarDetectorModel
from ..errors import FacedetectError, InterruptedRun
from ..interrupts import terminate_as_interrupt
from ..haar import haar_feature_pool
from .binned import BinnedFeatures
from .boosting import TrainingState
from .bootstrap import MiningState, NegativeSet, hard_negatives
from .checkpoint import RunState, load_checkpoint, remove_checkpoint, save_checkpoint
from .config import (THRESHOLD_RULES, TrainConfig, calibration_indices, check_config,
                     check_data, make_estimator, split_indices, training_windows)
from .image_point import TARGET_FALSE_ALARMS_PER_MPX, image_operating_point
from .model_io import haar_detector_model
from .operating_point import choose_operating_point
from .storage import (DEFAULT_MEMORY_GB, check_memory_setting, compact_features,
                      exact_features, memory_bytes)


def window_operating_point(model: HaarDetectorModel, images, labels,
                           config: TrainConfig) -> dict:
    """The operating point on the calibration windows, as the model file stores it."""
    point = choose_operating_point(model.decision_function(images), labels == 1, config.cost,
                                   prior=config.prior, calibration=config.calibration,
                                   rule=THRESHOLD_RULES[config.threshold_rule])
    return dict(point.as_dict(), raw_threshold=0.0, applies_to="windows")



@dataclass
class TrainResult:
    model: HaarDetectorModel
    seconds: float
    feature_seconds: float
    train_counts: dict = field(default_factory=dict)


@dataclass
class _Run:
    """What the stages of one training share."""

    config: TrainConfig
    run_config: dict
    pool: object
    checkpoint: Path | None
    checkpoint_every: int
    progress: bool
    log: object
    memory: int
    negatives: NegativeSet | None
    warn: object
    feature_seconds: float = 0.0
    stages: list = field(default_factory=list)

    def stage_name(self, stage: int) -> str:
        total = self.config.bootstrap_rounds + 1
        return f"stage {stage + 1}/{total}" if total > 1 else "training"

    def save(self, state: RunState) -> None:
        if self.checkpoint is not None:
            save_checkpoint(self.checkpoint, state, self.run_config)

    def interrupted(self, state: RunState, what: str):
        if self.checkpoint is None:
            return KeyboardInterrupt()
        self.save(state)
        return InterruptedRun(f"interrupted {what}; checkpoint saved to {self.checkpoint}; "
                               "run again with --resume to finish")


@dataclass
class RunOptions:
    """How a training run reports and saves, as opposed to what it learns (``TrainConfig``).

    ``checkpoint`` defaults to ``<out>.checkpoint.json``; it is written every
    ``checkpoint_every`` rounds, while mining, and when the run is interrupted.
    ``memory`` (bytes, default :data:`.storage.DEFAULT_MEMORY_GB` GiB) bounds the feature
    storage; compact features beyond it spill to a temporary file. The image operating
    point allows ``false_alarm_target`` false alarms per megapixel on the held-out negative
    pictures. ``log`` takes progress lines, ``warn`` warnings (default: stderr).
    """

    checkpoint: Path | None = None
    checkpoint_every: int = 10
    memory: int | None = None
    false_alarm_target: float = TARGET_FALSE_ALARMS_PER_MPX
    log: object = print
    warn: object = None

    def check(self) -> None:
        """Refuse options a run cannot honour, naming the parameter."""
        if not (isinstance(self.checkpoint_every, int) and self.checkpoint_every >= 1):
            raise FacedetectError("checkpoint_every must be at least 1, got "
                                  f"{self.checkpoint_every!r}")
        if not 0 < self.false_alarm_target < float("inf"):
            raise FacedetectError("false_alarm_target must be a positive rate per megapixel, "
                                  f"got {self.false_alarm_target!r}")


def train_detector(config: TrainConfig, data=None, *, out=None, negatives=None,
                   resume: bool = False, progress: bool = True,
                   options: RunOptions | None = None) -> TrainResult:
    """Train a detector on CBCL windows and save it to ``out``.

    With ``resume`` the run continues from its checkpoint (:class:`RunOptions`) and yields
    the model an uninterrupted run would.

    With ``config.bootstrap_rounds`` K > 0, the model is trained K + 1 times: after each
    training, up to ``bootstrap_limit`` windows it accepts on the ``negatives`` (a
    :class:`.bootstrap.NegativeSet`, or a list of grey pictures) join the training
    negatives. The held-out pictures of a NegativeSet then choose the image operating
    point (:mod:`.image_point`).
    """
    options = options or RunOptions()
    start = time.perf_counter()
    check_config(config)
    options.check()
    cbcl = data if data is not None else load_cbcl()
    check_data(cbcl)
    if isinstance(negatives, list):
        negatives = NegativeSet(negatives, [], "pictures given", "")
    if config.bootstrap_rounds and negatives is None:
        raise FacedetectError("bootstrapping needs negative pictures")
    train, held = split_indices(cbcl.labels, config)
    train, calibration = calibration_indices(cbcl.labels, train, config)
    run_config = dict(config.as_dict(), data_sha256=cbcl.fingerprint())
    if negatives is not None and config.bootstrap_rounds:
        run_config["negatives_sha256"] = negatives.fingerprint
    checkpoint = options.checkpoint
    if checkpoint is None and out is not None:
        checkpoint = Path(str(out) + ".checkpoint.json")
    memory = options.memory if options.memory is not None else memory_bytes(DEFAULT_MEMORY_GB)
    run = _Run(config, run_config, haar_feature_pool(19, 19), checkpoint,
               options.checkpoint_every, progress, options.log, memory, negatives,
               options.warn or (lambda line: print(line, file=sys.stderr)))
    state = load_checkpoint(checkpoint, run_config) if resume else RunState()
    if state.boosting is not None and len(state.boosting.alphas) > config.rounds:
        state.boosting = _first_rounds(state.boosting, config.rounds)
    base = training_windows(cbcl.images[train], cbcl.labels[train], config.mirror,
                            config.jitter, config.seed)
    estimator, state, y = _boost_and_mine(run, base, state)
    model = _assemble(run, estimator, state, y, cbcl, train, held, calibration, base)
    if negatives is not None and negatives.held_out and config.bootstrap_rounds:
        model = _with_image_point(run, model, state, cbcl.images[held[cbcl.labels[held] == 1]],
                                  options.false_alarm_target)
    seconds = time.perf_counter() - start
    model.document["training"]["seconds"] = round(seconds, 2)
    if out is not None:
        model = _resave(model, out)
        if checkpoint is not None:
            remove_checkpoint(checkpoint)
    return TrainResult(model, seconds, run.feature_seconds,
                       {"faces": int(y.sum()), "non_faces": int((y == 0).sum())})


def _boost_and_mine(run: _Run, base, state: RunState):
    """The stages: boost on the windows so far, mine hard negatives, repeat."""
    base_images, base_labels = base
    while True:
        images = np.concatenate([base_images, state.extra])
        y = np.concatenate([base_labels, np.zeros(len(state.extra), base_labels.dtype)])
        if state.mining is None:
            estimator = _boost(run, images, y, state)
        else:  # this stage's boosting finished before the interruption
            estimator = estimator_from_state(run.config, state.boosting, y, len(run.pool))
        if state.stage == run.config.bootstrap_rounds:
            return estimator, state, y
        found = _mine(run, estimator, base_images[base_labels == 1], state)
        run.stages.append({"stage": state.stage + 1, "hard_negatives_added": int(len(found))})
        if run.progress:
            run.log(f"{run.stage_name(state.stage)}: {len(found)} hard negatives mined")
        if len(found) == 0:
            return estimator, state, y
        state = RunState(state.stage + 1, np.concatenate([state.extra, found]))
        run.save(state)


def _features(run: _Run, images):
    feature_start = time.perf_counter()
    check_memory_setting(run.memory, len(images), len(run.pool), run.config.uses_exact)
    try:
        if run.config.uses_exact:
            X, order = exact_features(images, run.pool, progress=run.progress)
            store = (X, order)
        else:
            store = compact_features(images, run.pool, run.memory, progress=run.progress)
    finally:
        run.feature_seconds += time.perf_counter() - feature_start
    if run.progress:
        run.log(f"features: {len(run.pool):,} x {len(images):,} windows "
                f"({'exact' if run.config.uses_exact else 'compact'}) in "
                f"{time.perf_counter() - feature_start:.1f} s")
    return store


def _boost(run: _Run, images, y, state: RunState):
    try:
        store = _features(run, images)
    except KeyboardInterrupt:
        raise run.interrupted(state, "while computing features") from None
    estimator = make_estimator(run.config)
    _fit_with_checkpoints(run, estimator, store, y, state)
    state.boosting = estimator.training_state_
    state.mining = MiningState()
    run.save(state)
    return estimator


def _mine(run: _Run, estimator, faces, state: RunState):
    config = run.config
    current = haar_detector_model(estimator, run.pool).with_rejection(faces)
    saved = {"at": state.mining.position}

    def on_picture(mining):
        if mining.position - saved["at"] >= 25:
            run.save(state)
            saved["at"] = mining.position
    try:
        with terminate_as_interrupt():
            return hard_negatives(current, run.negatives.mining, config.bootstrap_limit,
                                  config.seed + state.stage, config.bootstrap_threshold,
                                  state=state.mining, progress=run.progress,
                                  warn=run.warn, on_picture=on_picture)
    except KeyboardInterrupt:
        raise run.interrupted(state, f"while mining ({run.stage_name(state.stage)})") from None


def _assemble(run: _Run, estimator, state: RunState, y, cbcl, train, held, calibration,
              base) -> HaarDetectorModel:
    config = run.config
    training = {
        "config": run.run_config, "data_source": str(cbcl.source),
        "train_size": int(len(train)), "heldout_names": [cbcl.names[i] for i in held],
        "calibration_size": int(len(calibration)),
        "rounds": estimator.n_rounds_,
        "storage": "exact" if config.uses_exact else "compact",
        "diagnostics": {"roots": estimator.roots_solved_.tolist(),
                        "e_pos": estimator.errors_[:, 0].tolist(),
                        "e_neg": estimator.errors_[:, 1].tolist(),
                        "bound": estimator.bounds_.tolist(),
                        "seconds": estimator.round_seconds_.round(4).tolist()},
        "feature_seconds": round(run.feature_seconds, 3),
    }
    if config.bootstrap_rounds:
        training["bootstrap"] = {"rounds": config.bootstrap_rounds,
                                 "limit": config.bootstrap_limit,
                                 "threshold": config.bootstrap_threshold,
                                 "negatives": run.negatives.source,
                                 "stages": run.stages,
                                 "extra_negatives": int(len(state.extra))}
    point = None
    if len(calibration):
        point_start = time.perf_counter()
        model = haar_detector_model(estimator, run.pool)
        point = window_operating_point(model, cbcl.images[calibration],
                                       cbcl.labels[calibration], config)
        training["operating_point_seconds"] = round(time.perf_counter() - point_start, 3)
    model = haar_detector_model(estimator, run.pool, training, point, config.cost)
    # Learnt rejection thresholds for the scanner, from the faces it was trained on only.
    base_images, base_labels = base
    return model.with_rejection(base_images[base_labels == 1])


def _with_image_point(run: _Run, model, state: RunState, held_faces, target):
    point_start = time.perf_counter()
    try:
        with terminate_as_interrupt():
            detection = image_operating_point(model, run.negatives.held_out, held_faces,
                                              target, progress=run.progress, warn=run.warn)
    except KeyboardInterrupt:
        raise run.interrupted(state, "while choosing the image operating point") from None
    detection["seconds"] = round(time.perf_counter() - point_start, 2)
    if run.progress:
        run.log(f"image operating point: threshold {detection['threshold']:.3g}, "
                f"{detection['false_alarms_per_megapixel']:.3g} false alarms/Mpx on "
                f"{detection['source']}")
    return model.with_detection(detection)


def estimator_from_state(config: TrainConfig, state, y, n_features: int):
    """The estimator a finished boosting state describes, without any features."""
    estimator = make_estimator(config)
    placeholder = np.broadcast_to(np.uint8(0), (n_features, len(y)))
    estimator.fit_binned(BinnedFeatures(placeholder, None, None), y, state=state)
    return estimator


def _outputs(store, f, threshold, polarity):
    if isinstance(store, BinnedFeatures):
        return store.outputs_at(f, threshold, polarity)
    X = store[0]
    return np.where(X[:, f] > threshold, polarity, -polarity)


def _fit_with_checkpoints(run: _Run, estimator, store, y, state: RunState):
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
    bar = tqdm(total=run.config.rounds, initial=len(resumed.alphas) if resumed else 0,
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
        with terminate_as_interrupt():
            if isinstance(store, BinnedFeatures):
                estimator.fit_binned(store, y, callback=on_round, state=resumed)
            else:
                estimator.fit(store[0], y, order=store[1], callback=on_round, state=resumed)
    except KeyboardInterrupt:
        bar.close()
        if "state" not in snapshot:
            raise run.interrupted(state, "before the first round") from None
        rounds = len(snapshot["state"].alphas)
        raise run.interrupted(RunState(state.stage, state.extra, snapshot["state"]),
                              f"after {rounds} rounds") from None
    bar.close()


def _resave(model: HaarDetectorModel, out) -> HaarDetectorModel:
    model.save(out)
    return HaarDetectorModel.load(out)


def _first_rounds(state, rounds: int):
    """A finished state holding the first ``rounds`` stumps: what a run of that length
    would have ended with (boosting never looks ahead). Its weights are not used again."""
    return TrainingState(state.weights, state.log_acc_pos, state.log_acc_neg,
                         list(state.stumps[:rounds]), list(state.alphas[:rounds]),
                         list(state.history[:rounds]), True)


def _copy_state(state):
    return TrainingState(state.weights.copy(), state.log_acc_pos, state.log_acc_neg,
                         list(state.stumps), list(state.alphas), list(state.history),
                         state.finished)
