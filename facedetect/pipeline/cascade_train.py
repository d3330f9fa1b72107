"""``train-detector --stages N``: an attentional cascade on CBCL faces (:mod:`.cascade`).

The data split, augmentation and seed are :class:`.config.TrainConfig`'s; the stopping
rules :class:`.cascade.CascadeConfig`'s. The training faces and CBCL's training non-faces
feed the stages; the held-out faces set each stage's threshold; the negative pictures'
mining part supplies the rest of the negatives.
"""

from __future__ import annotations

import copy
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..data import load_cbcl
from ..detector.model import HaarDetectorModel
from ..errors import FacedetectError, InterruptedRun
from ..haar import haar_feature_pool
from ..model_file import load_document, reseal
from ..training.model_io import estimator_from_document
from .bootstrap import NegativeSet
from .cascade import (MIN_NEGATIVES, CascadeConfig, StageData, cascade_model, config_record,
                      run_stage, stage_negatives)
from .config import TrainConfig, check_config, check_data, split_indices, training_windows
from .run import RunOptions
from .storage import DEFAULT_MEMORY_GB, memory_bytes

# What detect scans a cascade with unless told otherwise: OpenCV's detectMultiScale rule.
CASCADE_SCAN = {"scale_factor": 1.1, "step": "auto", "min_size": 19, "min_neighbors": 3,
                "neighbor_margin": 0.0, "applies_to": "images",
                "source": "a cascade: OpenCV's detectMultiScale rule at the last stage"}


@dataclass
class CascadeResult:
    model: HaarDetectorModel
    seconds: float
    stop_reason: str


def train_cascade(config: TrainConfig, cascade: CascadeConfig, data=None, *,
                  negatives: NegativeSet, out=None, resume: bool = False,
                  progress: bool = True, options: RunOptions | None = None) -> CascadeResult:
    """Train an attentional cascade and save it to ``out`` (see :mod:`.cascade`).

    With ``resume`` the run continues after the last stage its checkpoint holds and gives
    the cascade an uninterrupted run would.
    """
    options = options or RunOptions()
    check_config(config)
    cascade.check()
    options.check()
    if negatives is None or not negatives.mining:
        raise FacedetectError("a cascade needs negative pictures to mine its negatives")
    start = time.perf_counter()
    cbcl = data if data is not None else load_cbcl()
    check_data(cbcl)
    train, held = split_indices(cbcl.labels, config)
    if len(held) == 0:
        raise FacedetectError("a cascade sets its stage thresholds on held-out faces: "
                              "holdout must be above 0")
    faces, _ = training_windows(cbcl.images[train][cbcl.labels[train] == 1],
                                np.ones((cbcl.labels[train] == 1).sum(), np.int8),
                                config.mirror, config.jitter, config.seed)
    held_faces = cbcl.images[held][cbcl.labels[held] == 1]
    _check_hit_rate(len(held_faces), cascade.min_hit_rate)
    cbcl_negatives = cbcl.images[train][cbcl.labels[train] == 0]
    run_config = dict(config.as_dict(), cascade=config_record(cascade),
                      data_sha256=cbcl.fingerprint(), negatives_sha256=negatives.fingerprint)
    checkpoint = options.checkpoint or (Path(str(out) + ".checkpoint.json") if out else None)
    pool = haar_feature_pool(19, 19)
    stages, records = _resumed(checkpoint, run_config) if resume else ([], [])
    memory = options.memory if options.memory is not None else memory_bytes(DEFAULT_MEMORY_GB)
    count = cascade.negatives_per_stage or len(faces)
    warn = options.warn or (lambda line: print(line, file=sys.stderr))
    reason = f"all {cascade.stages} stages trained"
    model = _model(stages, pool, config, run_config, records, cbcl) if stages else None
    for stage in range(len(stages), cascade.stages):
        if model is not None:
            faces = faces[model.decision_function(faces) > model.threshold]
            held_faces = held_faces[model.decision_function(held_faces) > model.threshold]
            _check_hit_rate(len(held_faces), cascade.min_hit_rate)
        try:
            found = stage_negatives(model, negatives.mining, cbcl_negatives, count,
                                    config.seed + stage, progress, warn)
            if len(found) < MIN_NEGATIVES:
                reason = (f"negatives exhausted: the pictures gave {len(found)} windows the "
                          f"{stage} stages accept, fewer than {MIN_NEGATIVES}")
                break
            estimator, threshold, record = run_stage(
                stage, StageData(faces, found, held_faces), pool, config.cost, cascade,
                memory, progress)
        except KeyboardInterrupt:
            raise _interrupted(checkpoint, stage) from None
        stages.append((estimator, threshold))
        records.append(record)
        model = _model(stages, pool, config, run_config, records, cbcl)
        if checkpoint is not None:
            model.save(checkpoint)
        if progress:
            options.log(f"stage {stage + 1}: {record['stumps']} stumps, hit rate "
                        f"{record['held_out_hit_rate']:.4f}, false alarms "
                        f"{record['false_alarm_rate']:.3f}, {record['seconds']:.0f} s")
        reached = math.prod(r["false_alarm_rate"] for r in records)
        if record["false_alarm_rate"] > cascade.max_false_alarm_rate:
            reason = (f"stage {stage + 1} kept {record['false_alarm_rate']:.3f} of its "
                      f"negatives after {cascade.max_stumps_per_stage} stumps, above "
                      f"{cascade.max_false_alarm_rate}")
            break
        if reached <= cascade.target:
            reason = f"target false-alarm rate {cascade.target:.3g} reached ({reached:.3g})"
            break
    if model is None:
        raise FacedetectError(f"no stage could be trained: {reason}")
    model = _finished(model, reason, time.perf_counter() - start)
    if out is not None:
        model.save(out)
        model = HaarDetectorModel.load(out)
        if checkpoint is not None:
            checkpoint.unlink(missing_ok=True)
    return CascadeResult(model, time.perf_counter() - start, reason)


def _check_hit_rate(n_faces: int, hit_rate: float) -> None:
    """A hit rate needs enough held-out faces to be told from 1: at least one may fail."""
    needed = math.ceil(1.0 / (1.0 - hit_rate))
    if n_faces < needed:
        raise FacedetectError(f"{n_faces} held-out faces cannot measure a hit rate of "
                              f"{hit_rate} (at least {needed} are needed): raise holdout "
                              "or lower min_hit_rate")


def _model(stages, pool, config: TrainConfig, run_config: dict, records, cbcl):
    training = {"config": run_config, "data_source": str(cbcl.source),
                "cascade_stages": records, "rounds": int(sum(e.n_rounds_ for e, _ in stages))}
    model = cascade_model([e for e, _ in stages], [t for _, t in stages], pool, config.cost,
                          training)
    document = copy.deepcopy(model.document)
    document["detection"] = dict(CASCADE_SCAN, threshold=float(stages[-1][1]))
    return HaarDetectorModel.from_document(reseal(document))


def _finished(model, reason: str, seconds: float):
    document = copy.deepcopy(model.document)
    document["training"].update(stop_reason=reason, seconds=round(seconds, 2))
    return HaarDetectorModel.from_document(reseal(document))


def _resumed(checkpoint, run_config):
    """The stages of a checkpointed cascade, if it was trained with these settings."""
    if checkpoint is None or not Path(checkpoint).exists():
        return [], []
    document = load_document(checkpoint)
    if document.get("training", {}).get("config") != run_config:
        raise FacedetectError(f"{checkpoint}: the checkpoint was written with other settings "
                              "or data; train again without --resume")
    stages, begin = [], 0
    for stage in document["stages"]:
        part = dict(document, stumps=document["stumps"][begin:begin + stage["stumps"]])
        stages.append((estimator_from_document(part), float(stage["threshold"])))
        begin += stage["stumps"]
    return stages, list(document["training"]["cascade_stages"])


def _interrupted(checkpoint, stage: int):
    if checkpoint is None or not Path(checkpoint).exists():
        return KeyboardInterrupt()
    return InterruptedRun(f"interrupted in stage {stage + 1}; the {stage} finished stages "
                          f"are saved in {checkpoint}; run again with --resume to finish")
