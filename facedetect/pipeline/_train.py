"""The CBCL training workflow behind ``train-detector``: split, features, boost, mine, save.

A run is a sequence of stages (:mod:`._run`): compute the features of the windows so far
(:mod:`._storage`), boost, mine hard negatives (:mod:`._bootstrap`), repeat; then the model is
assembled (:mod:`._assemble`): the window operating point, learnt rejection and the image
operating point (:mod:`facedetect.detector._calibrate`). Every stage can be interrupted and resumed
(:mod:`._checkpoint`). The settings and the data split are in :mod:`._config`.
"""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..data._cbcl import framed_windows
from ..detector._model import HaarDetectorModel
from ..errors import FacedetectError, InterruptedRun, InvalidParameter
from ..haar import haar_feature_pool
from ..training._boosting import TrainingState
from ._augment import degraded_negatives
from ._assemble import Split, assemble_model, with_image_point
from ._checkpoint import RunState, load_checkpoint, remove_checkpoint
from ._config import (TrainConfig, calibration_indices, calibrates_on_wild_faces, check_config,
                     feature_types,
                     split_indices, training_windows, trains_cbcl_faces)
from ._phases import (foreseen_line, foreseen_seconds, remaining_seconds, stage_line,
                      stages_line)
from ._plan import BEFORE_TRAINING, FIND, TrainPlan, plan_training
from ._run import Run, boost_stage, estimator_from_state, mine_stage
from ._settings import RunOptions, default_memory
from ._storage import FeatureSource
from ._wild import split_wild_faces

__all__ = ["TrainConfig", "RunOptions", "TrainResult", "train_detector", "training_windows",
           "split_indices", "calibration_indices"]

# The data a run found, said where the command prints it: at INFO, which a program shows
# with ``logging.basicConfig(level="INFO")`` (quiet by default, as libraries are).
logger = logging.getLogger("facedetect")


@dataclass
class TrainResult:
    """A finished run: the model (saved to ``out`` where one was given), the seconds it
    took, of which computing features, the faces and non-faces of its last stage, its
    phases and the bytes its features wrote to spill files.

    Attributes
    ----------
    model : HaarDetectorModel
    seconds, feature_seconds : float
    train_counts : dict
        ``{"faces": n, "non_faces": n}`` of the last stage.
    phases : list of dict
        Each phase this process ran (:class:`._phases.Phases`): ``phase`` (features,
        boosting, mining, window operating point, image operating point), ``stage``
        (1-based, None after the stages) and ``seconds``, with the ``windows`` and
        ``rounds`` they worked on.
    scratch_bytes : int
        Bytes of compact features written to spill files (0: all in memory).

    See Also
    --------
    facedetect.train_detector : what returns it.

    Examples
    --------
    >>> from facedetect.data import make_toy_windows
    >>> config = TrainConfig(rounds=2, jitter=0, mirror=False, bootstrap_rounds=0)
    >>> result = train_detector(config, make_toy_windows(), faces=None, progress=False)
    >>> result.train_counts, result.seconds > 0
    ({'faces': 24, 'non_faces': 36}, True)
    """

    model: HaarDetectorModel
    seconds: float
    feature_seconds: float
    train_counts: dict = field(default_factory=dict)
    phases: list = field(default_factory=list)
    scratch_bytes: int = 0


# Default of ``negatives`` and ``faces``: found as the command finds them.


def train_detector(config: TrainConfig | TrainPlan | None = None, data=None, *, out=None,
                   negatives=FIND, faces=FIND, resume: bool = False, progress: bool = True,
                   options: RunOptions | None = None) -> TrainResult:
    """Train a detector and save it to ``out``: ``train-detector`` from Python.

    Parameters
    ----------
    config : TrainConfig or TrainPlan, optional
        What to learn; the default is the command's recipe (``TrainConfig()``). A
        :class:`~facedetect.pipeline._plan.TrainPlan` (:func:`plan_training`) is run as it
        is resolved: ``data``, ``faces`` and ``negatives`` are then its own.
    data : CBCLData, optional
        The CBCL windows (default: :func:`facedetect.data.load_cbcl`, found as the command
        finds them).
    out : path, optional
        Where to save the model (JSON, written atomically); None keeps it in memory.
    negatives : "find", path, NegativeSet, list of arrays or None
        Face-free pictures for hard-negative mining (with ``config.bootstrap_rounds``):
        ``"find"`` looks where ``--negatives`` does ($FACEDETECT_NEGATIVES,
        ./data/negatives, the user cache; else scikit-image's pictures, with a warning).
    faces : "find", path, WildFaces or None
        Faces from the wild: ``"find"`` looks where ``--faces`` does ($FACEDETECT_FACES,
        ./data/faces, the user cache); None trains on CBCL's faces only.
    resume : bool
        Continue from ``out``'s checkpoint, to the model an uninterrupted run gives.
    progress : bool
        Progress bars on stderr.
    options : RunOptions, optional
        Checkpointing, memory, the false-alarm target, logging, a Dask client.

    The faces and face-free pictures found are logged at INFO on the ``facedetect``
    logger, as the command prints them: ``logging.basicConfig(level="INFO")`` shows them.
    The command's recipe is a whole training: about half an hour on 2 cores.

    Returns
    -------
    TrainResult

    Raises
    ------
    FacedetectError
        Bad settings (``InvalidParameter``, also a ``ValueError`` and ``TypeError``), an
        output that cannot or must not be written, missing or unusable data: all before
        the work starts (:func:`~facedetect.pipeline._plan.plan_training`).
    InterruptedRun
        Ctrl-C or SIGTERM, after the checkpoint is saved: ``resume=True`` finishes it.

    See Also
    --------
    plan_training : the run resolved without training.
    AdaBoostDB : the estimator the recipe boosts with.

    References
    ----------
    .. [1] I. Landesa-Vázquez and J. L. Alba-Castro, "Double-Base Asymmetric AdaBoost",
       Neurocomputing 118, 101-114 (2013), doi:10.1016/j.neucom.2013.02.019.
    .. [2] P. Viola and M. J. Jones, "Robust Real-Time Face Detection", International
       Journal of Computer Vision 57(2), 137-154 (2004).

    Notes
    -----
    With ``faces``, every face outside its fixed held-out part joins the training faces
    as one window (:mod:`._wild`); the held-out ones join the held-out CBCL faces that
    bound the image operating point. With ``config.bootstrap_rounds`` K > 0, the model is
    trained K + 1 times: after each training, up to ``bootstrap_limit`` windows it accepts
    on the negatives are added as hard negatives. The calibration pictures of a NegativeSet
    then choose the image operating point (:mod:`facedetect.detector._calibrate`).

    Examples
    --------
    >>> from facedetect.data import make_toy_windows
    >>> config = TrainConfig(cost=(1, 10), rounds=3, jitter=0, mirror=False, bootstrap_rounds=0)
    >>> result = train_detector(config, make_toy_windows(), faces=None, progress=False)
    >>> result.model.window, result.train_counts
    ((19, 19), {'faces': 24, 'non_faces': 36})
    """
    options = options or RunOptions()
    start = time.perf_counter()
    options.check()
    if out is not None:
        check_output(out)   # before hours of training, not after
    plan = config if isinstance(config, TrainPlan) else plan_training(
        config, data, faces=faces, negatives=negatives, warn=options.warn, progress=progress)
    if not plan.is_checked():   # changed since it was planned, or built by hand
        check_config(plan.config)
    if not isinstance(config, TrainPlan):   # a plan's maker has said what it found
        logger.info(plan.faces_line())
        logger.info(plan.negatives_line())
    config, cbcl, faces, negatives = plan.config, plan.cbcl, plan.faces, plan.negatives
    train, held, calibration = plan.train, plan.held, plan.calibration
    run = _new_run(config, cbcl, negatives, faces, out, progress, options)
    state = (load_checkpoint(run.checkpoint, run.run_config) if resume
             else RunState(extra=np.empty((0, *config.window[::-1]), np.uint8)))
    run.started, run.seconds_before = start, state.seconds
    final_rounds = config.rounds_at(state.stage)
    if state.boosting is not None and len(state.boosting.alphas) > final_rounds:
        state.boosting = _first_rounds(state.boosting, final_rounds)
    try:
        framed, base, held_faces, wild = _training_faces(config, cbcl, faces, train, held)
    except KeyboardInterrupt:
        if resume:
            raise run.interrupted(state, "while cutting the training windows") from None
        raise InterruptedRun(BEFORE_TRAINING.format(what="cutting the training windows")) \
            from None
    _check_faces_left(base[1], held_faces, wild, config, bool(
        negatives is not None and negatives.calibration and config.bootstrap_rounds))
    estimator, state, y = _boost_and_mine(run, base, state)
    with run.phases.timed("window operating point"):
        model = assemble_model(run, estimator, state, framed, Split(train, held, calibration),
                               base, wild.calibration if wild is not None and len(
                                   wild.calibration) else None)
    if negatives is not None and negatives.calibration and config.bootstrap_rounds:
        with run.phases.timed("image operating point"):
            model = with_image_point(run, model, state, held_faces,
                                     config.target_false_alarms_per_megapixel,
                                     train_faces=base[0][base[1] == 1])
    seconds = run.seconds()
    record = {"seconds": round(seconds, 2), "phases": run.phases.records,
              "scratch_bytes": int(run.features.scratch_bytes)}
    if wild is not None:
        record["wild_faces"] = wild.record
    # Sealed with everything it records: the checksum matches what is returned.
    model = model.with_training(record)
    if out is not None:
        model = _resave(model, out)
        if run.checkpoint is not None:
            remove_checkpoint(run.checkpoint)
    return TrainResult(model, seconds, run.feature_seconds,
                       {"faces": int(y.sum()), "non_faces": int((y == 0).sum())},
                       run.phases.records, run.features.scratch_bytes)


def _training_faces(config: TrainConfig, cbcl, faces, train, held):
    """``(CBCL framed at the window, (windows, labels) boosted on, held-out face windows,
    the wild faces' split or None)``."""
    framed = replace(cbcl, images=framed_windows(cbcl.images, cbcl.labels, config.window,
                                                 config.framing))
    # CBCL's faces are cut 1.75 eye distances wide: a looser window would be mostly
    # reflected border, so they then only measure (measured:
    # docs/detector-training.md).
    boosted = train if trains_cbcl_faces(config) else train[cbcl.labels[train] == 0]
    base = training_windows(framed.images[boosted], cbcl.labels[boosted], config.mirror,
                            config.jitter, config.seed, config.jitter_shift)
    held_faces = framed.images[held[cbcl.labels[held] == 1]]
    wild = None
    if faces is not None:
        # A window only the wild faces fill is calibrated on wild faces held back from
        # boosting, not on CBCL's faces cut tighter than it.
        wild = split_wild_faces(faces, config.window, config.mirror, config.jitter,
                                config.seed, config.grain, config.posterize, config.framing,
                                calibrate=calibrates_on_wild_faces(config),
                                max_shift=config.jitter_shift)
        base = (np.concatenate([base[0], wild.train]),
                np.concatenate([base[1], np.ones(len(wild.train), base[1].dtype)]))
        held_faces = np.concatenate([held_faces, wild.heldout])
    # Faces first, each class in its order: the stump search then walks two runs of one
    # class (training._binned), and every sum over a class is the same as in any order.
    by_class = np.argsort(base[1] != 1, kind="stable")
    return framed, (base[0][by_class], base[1][by_class]), held_faces, wild


def _new_run(config: TrainConfig, cbcl, negatives, faces, out, progress: bool,
             options: RunOptions) -> Run:
    """What the stages share: settings, the data's fingerprints, checkpoint and memory."""
    run_config = dict(config.as_dict(), data_sha256=cbcl.fingerprint())
    if faces is not None:
        run_config["faces_sha256"] = faces.fingerprint
    if negatives is not None and config.bootstrap_rounds:
        run_config["negatives_sha256"] = negatives.fingerprint
    checkpoint = options.checkpoint
    if checkpoint is None and out is not None:
        checkpoint = Path(str(out) + ".checkpoint.json")
    memory = options.memory
    if memory is None:
        memory, line = default_memory()
        if progress:
            options.log(line)
    pool = haar_feature_pool(*config.window, feature_types(config))
    return Run(config, run_config, pool, checkpoint, options.checkpoint_every, progress,
               options.log,
               FeatureSource(memory, config.uses_exact, options.client, options.shards),
               negatives,
               options.warn or (lambda line: print(line, file=sys.stderr)))


def _boost_and_mine(run: Run, base, state: RunState):
    """The stages: boost on the windows so far, mine hard negatives, repeat."""
    base_images, base_labels = base
    if run.progress:
        run.log(stages_line(run.config, len(base_images)))
        if state.stage == 0 and state.boosting is None and not run.config.uses_exact:
            run.log(foreseen_line(foreseen_seconds(run.config, run.pool, len(base_images),
                                                   _image_point_follows(run))))
    while True:
        images = np.concatenate([base_images, state.extra])
        y = np.concatenate([base_labels, np.zeros(len(state.extra), base_labels.dtype)])
        if state.mining is None:
            # Every stage bins its windows at their own quantiles; with keep_features the
            # first stage's windows set the edges and the mining stages after it add the
            # features of their hard negatives alone (the last stage, whose rounds make
            # the model, bins all its windows anew either way).
            kept = run.config.keep_features and state.stage < run.config.bootstrap_rounds
            estimator = boost_stage(run, images, y, state,
                                    edges_from=len(base_images) if kept else None)
        else:  # this stage's boosting finished before the interruption
            estimator = estimator_from_state(run.config, state.boosting, y, len(run.pool))
        if state.stage == run.config.bootstrap_rounds:
            run.features.release()
            return estimator, state, y
        found = degraded_negatives(mine_stage(run, estimator, base_images[base_labels == 1],
                                              state), run.config.grain,
                                   run.config.posterize, run.config.seed, state.stage)
        run.stages.append({"stage": state.stage + 1, "hard_negatives_added": int(len(found))})
        if run.progress:
            left = remaining_seconds(run.phases, run.config, len(base_images), state.stage,
                                     _image_point_follows(run))
            run.log(f"{run.stage_name(state.stage)}: {len(found)} hard negatives mined")
            run.log(stage_line(run.phases, run.stage_name(state.stage), state.stage,
                               run.seconds(), left))
        if len(found) == 0:
            if run.config.rounds_at(state.stage) == run.config.rounds:
                run.features.release()
                return estimator, state, y
            # A short mining stage is no final model: the last stage boosts its full rounds
            # on the same windows.
            state = RunState(run.config.bootstrap_rounds, state.extra)
            run.save(state)
            continue
        state = RunState(state.stage + 1, np.concatenate([state.extra, found]))
        run.save(state)


def _image_point_follows(run: Run) -> bool:
    """Whether the run ends with an image operating point (calibration pictures)."""
    return bool(run.negatives is not None and run.negatives.calibration
                and run.config.bootstrap_rounds)


def _check_faces_left(labels: np.ndarray, held_faces: np.ndarray, wild, config: TrainConfig,
                      image_point: bool) -> None:
    """Refuse, before any boosting, a run that has no face (or no non-face) left to train
    on, or no held-out face to set its image operating point, saying where the faces went
    and what to change."""
    record = wild.record if wild is not None else None
    where = ("" if record is None else
             f"; of the {record['faces']:,} faces from the wild {record['train_faces']:,} "
             f"give training windows, {record['heldout_faces']:,} held out, "
             f"{record['windows_off_crop']:,} windows leave their crops at framing "
             f"{config.framing:g}")
    if not (labels == 1).any():
        cbcl = ("CBCL's faces only measure at this framing" if not trains_cbcl_faces(config)
                else "no CBCL face is in the training part")
        raise FacedetectError(f"no face left to train on: {cbcl}{where} (a narrower "
                              "--framing keeps more inside their crops; more faces help)")
    if not (labels == 0).any():
        raise FacedetectError("no non-face left to train on: the training part of the CBCL "
                              "data holds none (a lower --holdout keeps more)")
    if image_point and not len(held_faces):
        raise FacedetectError(f"no held-out face to set the image operating point with "
                              f"(--holdout {config.holdout:g}{where}): keep a held-out "
                              "part (--holdout), give faces from the wild, or "
                              "--no-bootstrap")


def check_output(out) -> None:
    """Refuse a model file that cannot be written: a folder, or in a folder that does not
    exist (the checkpoint beside it, too, would land where it should not)."""
    path = Path(out)
    if path.is_dir():
        raise InvalidParameter(f"out: {path} is a folder; give a file name for the model",
                               "out")
    if not path.parent.is_dir():
        raise InvalidParameter(f"out: the folder {path.parent} does not exist", "out")
    if path.is_file() and not _is_model_file(path):
        # A run replaces an old model; never a file of the data (faces.csv, an image).
        raise InvalidParameter(f"out: {path} exists and is not a facedetect model file; "
                               "refusing to replace it", "out")


def _is_model_file(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return b'"facedetect-model"' in head or not head.strip()


def _resave(model: HaarDetectorModel, out) -> HaarDetectorModel:
    model.save(out)
    return HaarDetectorModel.load(out)


def _first_rounds(state, rounds: int):
    """A finished state holding the first ``rounds`` stumps: what a run of that length
    would have ended with (boosting never looks ahead). Its weights are not used again."""
    return TrainingState(state.weights, state.log_acc_pos, state.log_acc_neg,
                         list(state.stumps[:rounds]), list(state.alphas[:rounds]),
                         list(state.history[:rounds]), True)
