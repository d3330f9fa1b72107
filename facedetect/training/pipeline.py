"""The CBCL training workflow behind ``train-detector``: split, features, boost, save.

Everything a run depends on is in :class:`TrainConfig`; the model records it, together with
the held-out file names, so evaluation can refuse to leak.
"""

from __future__ import annotations

import os
import signal
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from ..data import balanced_subset, load_cbcl, stratified_holdout
from ..detector.model import HaarDetectorModel
from ..errors import FacedetectError
from ..haar import feature_matrix, haar_feature_pool
from .boosting import AdaBoost, AdaBoostDB, AsymmetricInitAdaBoost, CostSensitiveAdaBoost
from .checkpoint import load_checkpoint, save_checkpoint
from .operating_point import CALIBRATIONS, check_prior, choose_operating_point
from .stumps import presort

ALGORITHM_CHOICES = ("db", "dbn", "cs", "adaboost", "asym-init")
# threshold_rule -> the operating-point rule behind it
THRESHOLD_RULES = {"calibrated": "probability", "empirical": "expected-cost"}


@dataclass
class TrainConfig:
    cost: tuple[float, float] = (1.0, 1.0)
    rounds: int = 200
    algorithm: str = "db"
    selection: str = "root"
    holdout: float = 0.25
    balanced: bool = False
    seed: int = 0
    mirror: bool = False
    jitter: int = 0
    # The operating point: a stratified fraction of the training part that boosting does
    # not see scores the model; a calibration map is fitted on those scores and the
    # threshold goes where the calibrated probability crosses the Bayes cut for the cost
    # at ``prior`` (default: the data's). threshold_rule "empirical" takes the least
    # empirical expected cost on the same scores instead. 0 keeps the raw threshold 0.
    calibration_split: float = 0.2
    prior: float | None = None
    calibration: str = "sigmoid"        # "sigmoid" (Platt) or "isotonic"
    threshold_rule: str = "calibrated"  # or "empirical"

    def as_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()}


def make_estimator(config: TrainConfig):
    """The estimator for ``--algorithm`` (dbn is AdaBoostDB with the exhaustive search)."""
    if config.algorithm in ("db", "dbn"):
        return AdaBoostDB(config.rounds, config.cost, selection=config.selection,
                          search="exhaustive" if config.algorithm == "dbn" else "conditional",
                          random_state=config.seed)
    if config.algorithm == "cs":
        return CostSensitiveAdaBoost(config.rounds, config.cost, random_state=config.seed)
    if config.algorithm == "adaboost":
        return AdaBoost(config.rounds, random_state=config.seed)
    if config.algorithm == "asym-init":
        return AsymmetricInitAdaBoost(config.rounds, config.cost, random_state=config.seed)
    raise FacedetectError(f"unknown algorithm {config.algorithm!r}; "
                          f"choose from {', '.join(ALGORITHM_CHOICES)}")


def training_windows(images: np.ndarray, labels: np.ndarray, mirror: bool = False,
                     jitter: int = 0, seed: int = 0):
    """The training windows and labels; with ``mirror`` each face also appears flipped
    left to right (a face seen in a mirror is still a face, and frontal faces are near
    symmetric, so this doubles the positives at no labelling cost); with ``jitter`` N,
    N slightly turned, scaled and shifted copies of each of those faces follow
    (:mod:`.augment`). Non-faces are left alone: their count already outnumbers the faces."""
    faces = images[labels == 1]
    if mirror:
        faces = np.concatenate([faces, faces[:, :, ::-1]])
    if jitter:
        from .augment import jittered_faces
        faces = np.concatenate([faces, jittered_faces(faces, jitter, seed)])
    added = faces[int((labels == 1).sum()):]
    return (np.concatenate([images, added]),
            np.concatenate([labels, np.ones(len(added), labels.dtype)]))


def split_indices(labels, config: TrainConfig):
    """(train, held-out) indices into the loaded data, per the config."""
    candidates = (balanced_subset(labels, seed=config.seed) if config.balanced
                  else np.arange(len(labels)))
    if config.holdout == 0:
        return candidates, np.array([], dtype=np.intp)
    train, held = stratified_holdout(labels[candidates], config.holdout, seed=config.seed)
    for part, name in ((held, "held-out"), (train, "training")):
        if len(np.unique(labels[candidates[part]])) < 2:
            raise FacedetectError(f"holdout {config.holdout:g} leaves the {name} part without "
                                  f"both classes ({len(part)} windows); choose a holdout "
                                  "between these extremes, or 0 to train on everything")
    return candidates[train], candidates[held]


def calibration_indices(labels, train, config: TrainConfig):
    """(boosting, calibration) indices: the calibration part is a stratified, seeded
    fraction of the training part (empty without an operating point)."""
    if not config.calibration_split:
        return train, np.array([], dtype=np.intp)
    fit, calibration = stratified_holdout(labels[train], config.calibration_split,
                                          seed=config.seed + 1)
    held = labels[train[calibration]]
    if (held == 1).all() or (held != 1).all():  # checked before any training is spent
        raise FacedetectError(
            f"the calibration split holds one class only ({int((held == 1).sum())} faces, "
            f"{int((held != 1).sum())} non-faces of {len(train)} training windows): use more "
            "data, a larger calibration_split, or calibration_split 0 for the raw threshold")
    return train[fit], train[calibration]


def check_config(config: TrainConfig) -> None:
    """Refuse settings that cannot give a sound model, naming the parameter."""
    if config.holdout != 0 and not 0 < config.holdout < 1:
        raise FacedetectError(f"holdout must be in [0, 1), got {config.holdout}")
    if config.calibration_split != 0 and not 0 < config.calibration_split < 1:
        raise FacedetectError(f"calibration_split must be in [0, 1), got "
                              f"{config.calibration_split}")
    if config.prior is not None:
        check_prior(config.prior)
    if not (isinstance(config.seed, (int, np.integer)) and 0 <= config.seed < 2**32):
        raise FacedetectError(f"seed must be an integer in 0..2^32-1, got {config.seed!r}")
    if config.calibration not in CALIBRATIONS:
        raise FacedetectError(f"calibration must be one of {', '.join(CALIBRATIONS)}, got "
                              f"{config.calibration!r}")
    if config.threshold_rule not in THRESHOLD_RULES:
        raise FacedetectError(f"threshold_rule must be one of {', '.join(THRESHOLD_RULES)}, "
                              f"got {config.threshold_rule!r}")
    if config.prior is not None and not config.calibration_split:
        raise FacedetectError("a prior needs a calibration split (calibration_split > 0)")


def check_memory(n_windows: int, n_features: int) -> None:
    """Refuse a feature matrix (float32 plus its sort order) that this machine cannot hold,
    before allocating it."""
    needed = n_windows * n_features * (4 + (2 if n_windows <= 0x7FFF else 4))
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return
    if needed > 0.8 * total:
        raise FacedetectError(f"{n_windows:,} training windows need {needed / 2**30:.1f} GiB "
                              f"for features, more than this machine's "
                              f"{total / 2**30:.1f} GiB allows: use fewer jittered copies or "
                              "bootstrap windows")


def window_operating_point(model: HaarDetectorModel, images, labels,
                           config: TrainConfig) -> dict:
    """The operating point on the calibration windows, as the model file stores it."""
    point = choose_operating_point(model.decision_function(images), labels == 1, config.cost,
                                   prior=config.prior, calibration=config.calibration,
                                   rule=THRESHOLD_RULES[config.threshold_rule])
    return dict(point.as_dict(), raw_threshold=0.0, applies_to="windows")


@contextmanager
def _terminate_as_interrupt():
    """SIGTERM (a kill) raises KeyboardInterrupt, so it leaves a checkpoint like Ctrl-C."""
    def handler(signum, frame):
        raise KeyboardInterrupt
    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@dataclass
class TrainResult:
    model: HaarDetectorModel
    seconds: float
    feature_seconds: float
    train_counts: dict = field(default_factory=dict)


def train_detector(config: TrainConfig, data=None, *, out=None, checkpoint=None,
                   checkpoint_every: int = 10, resume: bool = False, progress: bool = True,
                   log=print, negatives=None, bootstrap_rounds: int = 0,
                   bootstrap_limit: int = 2000,
                   bootstrap_threshold: float = 0.0) -> TrainResult:
    """Train a detector on CBCL windows and save it to ``out``.

    ``checkpoint`` (default ``<out>.checkpoint.json``) is written every
    ``checkpoint_every`` rounds and when the run is interrupted (Ctrl-C or SIGTERM); with
    ``resume`` the run continues from it and yields the model an uninterrupted run would.

    With ``bootstrap_rounds`` K > 0, the model is trained K + 1 times: after each training,
    the windows it accepts on the face-free ``negatives`` (a list of grey images; at most
    ``bootstrap_limit`` per stage, drawn with the seed) join the training negatives. A
    window is taken when it scores above ``bootstrap_threshold``; below 0 that includes
    near misses, which pushes the boundary away from texture with a margin.
    """
    start = time.perf_counter()
    check_config(config)
    if bootstrap_rounds and resume:
        raise FacedetectError("--resume does not combine with --bootstrap-rounds yet: "
                              "train again without --resume")
    cbcl = data if data is not None else load_cbcl()
    if len(np.unique(cbcl.labels)) < 2:
        raise FacedetectError(f"{cbcl.source}: the data has only one class "
                              f"({'faces' if cbcl.labels[0] == 1 else 'non-faces'}); "
                              f"training needs faces and non-faces")
    train, held = split_indices(cbcl.labels, config)
    train, calibration = calibration_indices(cbcl.labels, train, config)
    run_config = dict(config.as_dict(), data_sha256=cbcl.fingerprint())
    if checkpoint is None and out is not None:
        checkpoint = Path(str(out) + ".checkpoint.json")
    state = load_checkpoint(checkpoint, run_config) if resume else None
    pool = haar_feature_pool(19, 19)
    faces = int((cbcl.labels[train] == 1).sum())
    mirrored = faces * 2 if config.mirror else faces   # the faces jitter copies
    check_memory(len(train) + (mirrored - faces) + mirrored * config.jitter
                 + bootstrap_rounds * bootstrap_limit, len(pool))
    base_images, base_labels = training_windows(cbcl.images[train], cbcl.labels[train],
                                                config.mirror, config.jitter, config.seed)
    extra = np.empty((0, 19, 19), np.uint8)
    bootstrap_log, feature_seconds = [], 0.0
    for stage in range(bootstrap_rounds + 1):
        images = np.concatenate([base_images, extra])
        y = np.concatenate([base_labels, np.zeros(len(extra), base_labels.dtype)])
        check_memory(len(images), len(pool))
        feature_start = time.perf_counter()
        X = feature_matrix(images, pool, progress=progress)
        order = presort(X.T)
        feature_seconds += time.perf_counter() - feature_start
        if progress:
            log(f"features: {X.shape[1]:,} x {X.shape[0]:,} windows in "
                f"{time.perf_counter() - feature_start:.1f} s")
        estimator = make_estimator(config)
        _fit_with_checkpoints(estimator, X, y, order, config, run_config, state,
                              checkpoint if not bootstrap_rounds else None, checkpoint_every,
                              progress)
        del X, order
        if stage == bootstrap_rounds:
            break
        from .bootstrap import hard_negatives
        current = HaarDetectorModel.from_estimator(estimator, pool)
        found = hard_negatives(current, negatives, bootstrap_limit, config.seed + stage,
                               bootstrap_threshold)
        bootstrap_log.append({"stage": stage + 1, "hard_negatives_added": int(len(found))})
        if progress:
            log(f"bootstrap {stage + 1}/{bootstrap_rounds}: {len(found)} false-positive "
                f"windows added to the negatives")
        if len(found) == 0:
            break
        extra = np.concatenate([extra, found])

    training = {
        "config": run_config, "data_source": str(cbcl.source),
        "train_size": int(len(train)), "heldout_names": [cbcl.names[i] for i in held],
        "calibration_size": int(len(calibration)),
        "rounds": estimator.n_rounds_,
        "diagnostics": {"roots": estimator.roots_solved_.tolist(),
                        "e_pos": estimator.errors_[:, 0].tolist(),
                        "e_neg": estimator.errors_[:, 1].tolist(),
                        "bound": estimator.bounds_.tolist(),
                        "seconds": estimator.round_seconds_.round(4).tolist()},
        "feature_seconds": round(feature_seconds, 3),
    }
    if bootstrap_rounds:
        training["bootstrap"] = {"rounds": bootstrap_rounds, "limit": bootstrap_limit,
                                 "threshold": bootstrap_threshold,
                                 "stages": bootstrap_log,
                                 "extra_negatives": int(len(extra))}
    model = HaarDetectorModel.from_estimator(estimator, pool, training, cost=config.cost)
    if len(calibration):
        point_start = time.perf_counter()
        point = window_operating_point(model, cbcl.images[calibration],
                                       cbcl.labels[calibration], config)
        training["operating_point_seconds"] = round(time.perf_counter() - point_start, 3)
        model = HaarDetectorModel.from_estimator(estimator, pool, training, point, config.cost)
    # Learnt rejection thresholds for the scanner, from the faces it was trained on only.
    model = model.with_rejection(base_images[base_labels == 1])
    seconds = time.perf_counter() - start
    model.document["training"]["seconds"] = round(seconds, 2)
    if out is not None:
        model = _resave(model, out)
        if checkpoint is not None:
            Path(checkpoint).unlink(missing_ok=True)
    return TrainResult(model, seconds, feature_seconds,
                       {"faces": int(y.sum()), "non_faces": int((y == 0).sum())})


def _fit_with_checkpoints(estimator, X, y, order, config, run_config, state, checkpoint,
                          checkpoint_every, progress):
    """Fit with a progress bar, periodic checkpoints and a checkpoint on interruption."""
    decision = np.zeros(len(y))
    if state is not None:
        for (f, threshold, polarity), alpha in zip(state.stumps, state.alphas):
            decision += alpha * np.where(X[:, f] > threshold, polarity, -polarity)
    bar = tqdm(total=config.rounds, initial=len(state.alphas) if state else 0,
               desc="boosting", unit="round", disable=not progress)
    snapshot = {}

    def on_round(model, run_state):
        f, threshold, polarity = run_state.stumps[-1]
        decision[:] += run_state.alphas[-1] * np.where(X[:, f] > threshold, polarity, -polarity)
        predicted = decision > 0
        history = run_state.history[-1]
        bar.update(1)
        bar.set_postfix(s=f"{history['seconds']:.2f}", roots=history["roots"],
                        FN=f"{np.mean(~predicted[y == 1]):.3f}",
                        FP=f"{np.mean(predicted[y == 0]):.3f}")
        snapshot["state"] = _copy_state(run_state)
        if checkpoint is not None and len(run_state.alphas) % checkpoint_every == 0:
            save_checkpoint(checkpoint, run_state, run_config)

    try:
        with _terminate_as_interrupt():
            estimator.fit(X, y, order=order, callback=on_round, state=state)
    except KeyboardInterrupt:
        bar.close()
        if checkpoint is not None and "state" in snapshot:
            save_checkpoint(checkpoint, snapshot["state"], run_config)
            raise FacedetectError(
                f"interrupted after {len(snapshot['state'].alphas)} rounds; checkpoint "
                f"saved to {checkpoint}; run again with --resume to finish") from None
        raise
    bar.close()


def _resave(model: HaarDetectorModel, out) -> HaarDetectorModel:
    model.save(out)
    return HaarDetectorModel.load(out)


def _copy_state(state):
    from .boosting import TrainingState
    return TrainingState(state.weights.copy(), state.log_acc_pos, state.log_acc_neg,
                         list(state.stumps), list(state.alphas), list(state.history),
                         state.finished)
