"""``train-detector --stages N``: an attentional cascade on CBCL faces (:mod:`._cascade`).

The data split, augmentation and seed are :class:`._config.TrainConfig`'s; the stopping
rules :class:`._cascade.CascadeConfig`'s. The training faces and CBCL's training non-faces
feed the stages; the held-out faces set each stage's threshold; the negative pictures'
mining part supplies the rest of the negatives.
"""

from __future__ import annotations

import hashlib
import math
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..data import load_cbcl
from ..data._positives import PositiveSet
from ..detector._model import HaarDetectorModel
from ..errors import FacedetectError, InterruptedRun
from ..haar import haar_feature_pool
from ._bootstrap import NegativeSet
from ._cascade_checkpoint import load_cascade_checkpoint
from ._cascade import (StageData, cascade_model, config_record,
                      run_stage, stage_negatives)
from ._config import (CBCL_JITTER_SHIFT, TrainConfig, check_config, check_data,
                      feature_types, split_indices, training_windows)
from ._settings import (DEFAULT_NEGATIVES, MIN_NEGATIVES, CascadeConfig, default_memory,
                       RunOptions)
from ._stage_features import StageFeatures
from ._storage import FeatureSource
from ._wild import split_wild_faces

# What detect scans a cascade with unless told otherwise: OpenCV's detectMultiScale rule.
SAMPLE_SEED_OFFSET = 777
CASCADE_SCAN = {"scale_factor": 1.1, "step": "auto", "min_size": 19, "min_neighbors": 3,
                "neighbor_margin": 0.0, "pyramid": "linear", "applies_to": "images",
                "source": "a cascade: OpenCV's detectMultiScale rule at the last stage"}


@dataclass
class _CascadeSamples:
    """The windows a cascade learns from: training and held-out positives (augmented
    alike), negatives known beforehand (CBCL's non-faces; none for other objects)."""

    faces: np.ndarray
    held: np.ndarray
    negatives: np.ndarray
    window: tuple[int, int]
    fingerprint: str
    source: str
    held_names: list
    boxes_are_windows: bool = False
    wild_faces: dict | None = None    # the record of the faces from the wild trained on


def cascade_samples(data, config: TrainConfig, wild_faces=None) -> _CascadeSamples:
    """The samples of CBCL data (split as ``config`` says) or of a :class:`PositiveSet`
    (a seeded ``config.holdout`` share held out). With ``faces`` from the wild
    (:mod:`._wild`), their training windows join the training faces and their held-out
    part the held-out faces."""
    if isinstance(data, PositiveSet):
        images = data.images
        held = np.random.default_rng(config.seed).permutation(len(images))
        held = np.sort(held[:int(round(config.holdout * len(images)))])
        train = np.setdiff1d(np.arange(len(images)), held)
        negatives = np.empty((0, *images.shape[1:]), np.uint8)
        digest = hashlib.sha256(images.tobytes() + "\n".join(data.names).encode())
        fingerprint, source = digest.hexdigest(), data.source
        held_names = [data.names[i] for i in held]
    else:
        check_data(data)
        train, held = split_indices(data.labels, config)
        images = data.images
        negatives = images[train][data.labels[train] == 0]
        held_names = [data.names[i] for i in held]     # faces and non-faces: evaluate's split
        train, held = train[data.labels[train] == 1], held[data.labels[held] == 1]
        fingerprint, source = data.fingerprint(), str(data.source)
    if len(held) == 0:
        raise FacedetectError("a cascade sets its stage thresholds on held-out positives: "
                              f"holdout {config.holdout:g} holds out none of the "
                              f"{len(train) + len(held)} positives; raise it")
    if len(train) == 0:
        raise FacedetectError(f"holdout {config.holdout:g} holds out all {len(held)} "
                              "positives and leaves none to train the stages on: lower "
                              "holdout, or add positives")
    ones = np.ones(len(images), np.int8)
    faces, _ = training_windows(images[train], ones[train], config.mirror, config.jitter,
                                config.seed, config.jitter_shift)
    # The held-out positives as the scanner meets them: an object is seen by windows up
    # to a pixel and a scale step off, so they get the training ones' mirror and jitter.
    held_faces, _ = training_windows(images[held], ones[held], config.mirror, config.jitter,
                                     config.seed + 1, config.jitter_shift)
    window = (images.shape[2], images.shape[1])
    wild = None
    if wild_faces is not None:
        wild = split_wild_faces(wild_faces, window, config.mirror, config.jitter, config.seed,
                                max_shift=config.jitter_shift)
        faces = np.concatenate([faces, wild.train])
        held_faces = np.concatenate([held_faces, wild.heldout])
    return _CascadeSamples(faces, held_faces, negatives, (images.shape[2], images.shape[1]),
                          fingerprint, source, held_names, isinstance(data, PositiveSet),
                          wild.record if wild is not None else None)


@dataclass
class CascadeResult:
    """A finished cascade run.

    Attributes
    ----------
    model : HaarDetectorModel
        The cascade (saved to ``out`` where one was given).
    seconds : float
        Time taken.
    stop_reason : str
        Why it has the stages it has.

    See Also
    --------
    train_cascade : what returns it.

    Examples
    --------
    >>> from facedetect.detector._model import HaarDetectorModel
    >>> CascadeResult(None, 1.5, "all 20 stages trained").stop_reason
    'all 20 stages trained'
    """

    model: HaarDetectorModel
    seconds: float
    stop_reason: str


@dataclass
class _CascadeRun:
    """What the stages of one cascade run share."""

    config: TrainConfig
    cascade: CascadeConfig
    samples: _CascadeSamples
    negatives: NegativeSet
    pool: object
    run_config: dict
    checkpoint: Path | None
    features: StageFeatures
    progress: bool
    options: RunOptions
    start: float = 0.0      # time.perf_counter() when the run started

    def model(self, stages, records):
        return _model(stages, self.pool, self.config, self.run_config, records, self.samples)


def train_cascade(config: TrainConfig, cascade: CascadeConfig, data=None, *,
                  negatives: NegativeSet, faces=None, out=None, resume: bool = False,
                  progress: bool = True, options: RunOptions | None = None) -> CascadeResult:
    """Train an attentional cascade and save it to ``out`` (see :mod:`._cascade`).

    With ``resume`` the run continues after the last stage its checkpoint holds and gives
    the cascade an uninterrupted run would.

    Parameters
    ----------
    config : TrainConfig
        The data split, augmentation, seed and cost (its boosting fields are not used).
    cascade : CascadeConfig
        The stopping rules.
    data : CBCLData or PositiveSet, optional
        The positives (default: CBCL, found as the command finds it).
    negatives : NegativeSet
        Face-free pictures to mine each stage's negatives from.
    faces : WildFaces, optional
        Faces from the wild to join CBCL's.
    out : path, optional
        Where to save the cascade (and its checkpoint, ``out.checkpoint.json``).
    resume, progress, options
        As for :func:`facedetect.pipeline._train.train_detector`.

    Returns
    -------
    CascadeResult

    Raises
    ------
    FacedetectError
        Settings out of range, no negative pictures, too few held-out positives for the hit
        rate, or a resume without a checkpoint.

    See Also
    --------
    facedetect.train_detector : a one-stage detector with soft rejection.

    Examples
    --------
    >>> import numpy as np
    >>> from facedetect.data import make_toy_windows
    >>> from facedetect.pipeline import CascadeConfig, TrainConfig
    >>> from facedetect.pipeline._bootstrap import NegativeSet
    >>> noise = [np.random.default_rng(k).integers(0, 256, (60, 60), np.uint8)
    ...          for k in range(4)]
    >>> result = train_cascade(TrainConfig(jitter=0, mirror=False),
    ...                        CascadeConfig(stages=2, min_hit_rate=0.9),
    ...                        make_toy_windows(200, 200), progress=False,
    ...                        negatives=NegativeSet(noise, [], "noise", "noise"))
    >>> len(result.model.stages) >= 1
    True
    """
    options = options or RunOptions()
    check_config(config)
    # A cascade's faces are not grained nor posterised, so its record says none whatever
    # the one-stage recipe's default is; its pool is the basic one unless tilted or channel
    # features are asked for, and its faces move as CBCL's recipe moves them unless a
    # shift is asked for.
    shift = CBCL_JITTER_SHIFT if config.jitter_shift is None else config.jitter_shift
    config = replace(config, grain=0.0, posterize=0.0, tilted=bool(config.tilted),
                     channels=bool(config.channels), jitter_shift=float(shift))
    cascade.check()
    options.check()
    if negatives is None or not negatives.mining:
        raise FacedetectError("a cascade needs negative pictures to mine its negatives")
    start = time.perf_counter()
    samples = cascade_samples(data if data is not None else load_cbcl(), config, faces)
    _check_hit_rate(_rated_faces(cascade, samples.faces, samples.held), cascade.min_hit_rate,
                    cascade.hit_rate_on)
    run_config = dict(config.as_dict(), cascade=config_record(cascade),
                      data_sha256=samples.fingerprint, negatives_sha256=negatives.fingerprint)
    if faces is not None:
        run_config["faces_sha256"] = faces.fingerprint
    checkpoint = options.checkpoint or (Path(str(out) + ".checkpoint.json") if out else None)
    memory = options.memory
    if memory is None:
        memory, line = default_memory()
        if progress:
            options.log(line)
    pool = haar_feature_pool(*samples.window, feature_types(config))
    run = _CascadeRun(config, cascade, samples, negatives, pool, run_config, checkpoint,
                      StageFeatures(FeatureSource(memory, client=options.client,
                                                  shards=options.shards), pool,
                                    positives=len(samples.faces)),
                      progress, options, start)
    if resume and checkpoint is None:
        raise FacedetectError("resume needs a checkpoint: give out (or options.checkpoint)")
    stages, records = (load_cascade_checkpoint(checkpoint, run_config, len(run.pool))
                       if resume else ([], []))
    model, reason = _grow(run, stages, records)
    model = _finished(model, reason, time.perf_counter() - start)
    if out is not None:
        model.save(out)
        model = HaarDetectorModel.load(out)
        if checkpoint is not None:
            checkpoint.unlink(missing_ok=True)
    return CascadeResult(model, time.perf_counter() - start, reason)


def _grow(run: _CascadeRun, stages: list, records: list):
    """Add stages until a stopping rule holds; ``(model, the reason it stopped)``."""
    cascade, samples = run.cascade, run.samples
    faces, held, known = samples.faces, samples.held, samples.negatives
    # As many negatives as faces, within bounds: a stage measures its false-alarm rate
    # on at least MIN_NEGATIVES, however few the faces.
    count = cascade.negatives_per_stage or max(MIN_NEGATIVES,
                                               min(len(faces), DEFAULT_NEGATIVES))
    warn = run.options.warn or (lambda line: print(line, file=sys.stderr))
    model = run.model(stages, records) if stages else None
    if model is not None:   # resumed: the windows the stages so far accept
        if _stop_reason(cascade, records):   # it had stopped after its last stage
            return model, _stop_reason(cascade, records)
        _prime(run)
        faces, held, known = (w[model.decision_function(w) > model.window_threshold]
                              for w in (faces, held, known))
    for stage in range(len(stages), cascade.stages):
        rated = _rated_faces(cascade, faces, held)
        if rated < _needed(cascade.min_hit_rate):
            return model, (f"{rated} {cascade.hit_rate_on} positives are left, too few to "
                           f"measure a hit rate of {cascade.min_hit_rate}")
        stage_start = time.perf_counter()
        try:
            held_count = cascade.heldout_negatives or 0
            found, acceptance = stage_negatives(model, run.negatives.mining, known,
                                                count + held_count, run.config.seed + stage,
                                                run.progress, warn, samples.window)
            if (cascade.acceptance_target and acceptance is not None
                    and acceptance <= cascade.target):
                return model, (f"target false-alarm rate {cascade.target:.3g} reached: the "
                               f"{stage} stages accept {acceptance:.3g} of the windows mining "
                               "scanned")
            needed = MIN_NEGATIVES * (2 if held_count else 1)   # to train on, to measure
            if len(found) < needed:
                return _trained(model, f"negatives exhausted: the pictures gave {len(found)} "
                                       f"windows the {stage} stages accept, fewer than "
                                       f"{needed}")
            found, held_negatives = _split_negatives(found, count, held_count)
            stumps, threshold, record = run_stage(
                stage, StageData(_sample(faces, cascade.positives_per_stage,
                                         run.config.seed + stage), found, held,
                                 held_negatives), run.pool,
                cascade.stage_costs(run.config.cost), cascade, run.features, run.progress)
        except KeyboardInterrupt:
            raise _interrupted(run.checkpoint, stage) from None
        record["acceptance_ratio"] = acceptance   # of the stages before this one
        record["seconds"] = round(time.perf_counter() - stage_start, 2)
        record["mining_seconds"] = round(record["seconds"] - record["boosting_seconds"], 2)
        # When the run had this stage: what a run of this many stages would have taken.
        record["elapsed_seconds"] = round(time.perf_counter() - run.start, 2)
        stages.append((stumps, threshold))
        records.append(record)
        model = run.model(stages, records)
        # Only the new stage can reject what passed the others.
        faces, held, known = (w[model.stage_sums(w, stage) > threshold]
                              for w in (faces, held, known))
        if run.checkpoint is not None:
            model.save(run.checkpoint)
        if run.progress:
            run.options.log(f"stage {stage + 1}: {record['stumps']} stumps, hit rate "
                            f"{record['held_out_hit_rate']:.4f}, false alarms "
                            f"{record['false_alarm_rate']:.3f}{_accepted(acceptance)}, "
                            f"{record['seconds']:.0f} s")
        reason = _stop_reason(cascade, records)
        if reason:
            return model, reason
    return _trained(model, f"all {cascade.stages} stages trained")


def _prime(run: _CascadeRun) -> None:
    """Set the features' edges from the first stage's positives, as the first stage set them
    (a resumed run's later stages then bin their windows as an uninterrupted run did); its
    negatives set none, so none is mined again."""
    if not run.features.reuses:
        return
    faces = _sample(run.samples.faces, run.cascade.positives_per_stage, run.config.seed)
    run.features.prime(faces, run.samples.negatives[:0], run.progress)


def _accepted(acceptance: float | None) -> str:
    """The log's words for the share of scanned windows the stages before accepted."""
    return "" if acceptance is None else f" (the stages before accepted {acceptance:.3g})"


def _split_negatives(found: np.ndarray, count: int, held_count: int):
    """``(training, held-out)`` negatives: the first ``count`` of ``found`` and the rest
    (None where none are held out); fewer windows than asked for split in the asked-for
    proportion. Mining takes a few windows from each picture in turn, so the held-out
    ones come from other pictures than the training ones (one picture may straddle)."""
    if not held_count:
        return found, None
    cut = min(count, int(round(len(found) * count / (count + held_count))))
    return found[:cut], found[cut:]


def _sample(faces: np.ndarray, count: int | None, seed: int) -> np.ndarray:
    """At most ``count`` of ``faces``, drawn without replacement, in their order."""
    if count is None or len(faces) <= count:
        return faces
    chosen = np.random.default_rng(SAMPLE_SEED_OFFSET + seed).choice(len(faces), count,
                                                                     replace=False)
    return faces[np.sort(chosen)]


def _trained(model, reason: str):
    if model is None:
        raise FacedetectError(f"no stage could be trained: {reason}")
    return model, reason


def _stop_reason(cascade: CascadeConfig, records: list) -> str | None:
    """Why the cascade ends after its last stage, or None to go on."""
    last = records[-1]
    if (last["false_alarm_rate"] > cascade.max_false_alarm_rate
            and not cascade.keep_capped_stages):
        return (f"stage {last['stage']} kept {last['false_alarm_rate']:.3f} of its negatives "
                f"after {cascade.max_stumps_per_stage} stumps, above "
                f"{cascade.max_false_alarm_rate}")
    reached = math.prod(r["false_alarm_rate"] for r in records)
    if reached <= cascade.target and not cascade.acceptance_target:
        return f"target false-alarm rate {cascade.target:.3g} reached ({reached:.3g})"
    return None


def _needed(hit_rate: float) -> int:
    """Held-out positives a hit rate needs to be told from 1: one of them may fail."""
    return math.ceil(1.0 / (1.0 - hit_rate) - 1e-9)


def _rated_faces(cascade: CascadeConfig, faces: np.ndarray, held: np.ndarray) -> int:
    """How many faces a stage's hit rate is measured on: the held-out ones, or the
    training faces it samples."""
    if cascade.hit_rate_on == "held-out":
        return len(held)
    return min(len(faces), cascade.positives_per_stage or len(faces))


def _check_hit_rate(n_faces: int, hit_rate: float, which: str = "held-out") -> None:
    more = "raise holdout" if which == "held-out" else "add positives"
    if n_faces < _needed(hit_rate):
        raise FacedetectError(f"{n_faces} {which} positives cannot measure a hit rate of "
                              f"{hit_rate} (at least {_needed(hit_rate)} are needed): "
                              f"{more} or lower min_hit_rate")
    if math.floor(hit_rate * n_faces + 1e-9) < 1:
        raise FacedetectError(f"a hit rate of {hit_rate:g} keeps no {which} positive of "
                              f"{n_faces}: raise min_hit_rate to at least {1 / n_faces:.3g}")


def _model(stages, pool, config: TrainConfig, run_config: dict, records, samples):
    training = {"config": run_config, "data_source": samples.source,
                "heldout_names": samples.held_names,
                "cascade_stages": records, "rounds": sum(len(stumps) for stumps, _ in stages)}
    if samples.wild_faces is not None:
        training["wild_faces"] = samples.wild_faces
    scan = dict(CASCADE_SCAN, min_size=max(pool.width, pool.height))
    if samples.boxes_are_windows:   # crops of the object itself: its box is the window
        scan.update(box_scale=1.0, box_shift=0.0)
    return cascade_model(stages, pool, config.cost, training).with_detection(scan)


def _finished(model, reason: str, seconds: float):
    return model.with_training({"stop_reason": reason, "seconds": round(seconds, 2)})


def _interrupted(checkpoint, stage: int):
    if checkpoint is None or not Path(checkpoint).exists():
        return KeyboardInterrupt()
    return InterruptedRun(f"interrupted in stage {stage + 1}; the {stage} finished stages "
                          f"are saved in {checkpoint}", "run again with --resume to finish")
