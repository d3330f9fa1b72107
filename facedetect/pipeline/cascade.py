"""Attentional cascades (Viola & Jones), each stage boosted with AdaBoostDB.

Stage k is trained on the training faces the stages so far still accept and on negatives
that they accept too: for the first stage random windows of the negative pictures, then
windows mined from those pictures with the cascade itself (:mod:`.bootstrap`), so the
training set stays the size of one stage. A stage adds stumps until, at the threshold that
keeps ``min_hit_rate`` of the held-out faces, at most ``max_false_alarm_rate`` of its
negatives pass: opencv_traincascade's rule. The cascade stops after ``stages`` stages, once
the false-alarm rates multiply to ``target_false_alarm_rate``, when the negatives run out,
or when a stage cannot reach its rate within ``max_stumps_per_stage``; it is saved with the
stages it has and the reason. A finished stage is checkpointed (the partial cascade is a
model file), and ``resume`` continues after it to the same cascade.
"""

from __future__ import annotations

import math
import resource
import time
from dataclasses import asdict, dataclass

import numpy as np
from tqdm.auto import tqdm

from ..detector.model import haar_values
from ..errors import FacedetectError
from ..interrupts import terminate_as_interrupt
from ..model_file import reseal
from ..training.algorithms import AdaBoostDB
from .assemble import haar_detector_model
from .bootstrap import hard_negatives, random_windows
from .storage import compact_features

# A stage needs this many negatives to measure its false-alarm rate; fewer means the
# negative pictures are exhausted.
MIN_NEGATIVES = 50


@dataclass(frozen=True)
class CascadeConfig:
    """The cascade's stopping rules (opencv_traincascade's names and defaults)."""

    stages: int = 20
    min_hit_rate: float = 0.995
    max_false_alarm_rate: float = 0.5
    max_stumps_per_stage: int = 200
    target_false_alarm_rate: float | None = None   # default: max_false_alarm_rate ** stages
    negatives_per_stage: int | None = None          # default: as many as training faces

    def check(self) -> None:
        """Refuse settings no cascade can meet, naming the parameter."""
        if not (isinstance(self.stages, int) and 1 <= self.stages <= 100):
            raise FacedetectError(f"stages must be 1..100, got {self.stages!r}")
        for name in ("min_hit_rate", "max_false_alarm_rate"):
            if not 0 < getattr(self, name) < 1:
                raise FacedetectError(f"{name} must be in (0, 1), got {getattr(self, name)!r}")
        if not (isinstance(self.max_stumps_per_stage, int)
                and 1 <= self.max_stumps_per_stage <= 10_000):
            raise FacedetectError("max_stumps_per_stage must be 1..10000, got "
                                  f"{self.max_stumps_per_stage!r}")
        target = self.target_false_alarm_rate
        if target is not None and not 0 < target < 1:
            raise FacedetectError(f"target_false_alarm_rate must be in (0, 1), got {target!r}")
        count = self.negatives_per_stage
        if count is not None and not (isinstance(count, int) and MIN_NEGATIVES <= count <= 10 ** 6):
            raise FacedetectError(f"negatives_per_stage must be {MIN_NEGATIVES}..1000000, "
                                  f"got {count!r}")

    @property
    def target(self) -> float:
        if self.target_false_alarm_rate is not None:
            return self.target_false_alarm_rate
        return self.max_false_alarm_rate ** self.stages


@dataclass
class StageData:
    """One stage's windows: training faces and negatives, and the held-out faces that
    set its threshold."""

    faces: np.ndarray
    negatives: np.ndarray
    held_faces: np.ndarray


def stage_threshold(scores: np.ndarray, min_hit_rate: float) -> float:
    """The largest threshold that ``min_hit_rate`` of ``scores`` exceed (a window passes
    a stage when its sum is above the threshold).

    Examples
    --------
    >>> stage_threshold(np.array([3.0, 1.0, 2.0, 4.0]), 0.75)   # three of four pass
    1.9999999999999998
    """
    ordered = np.sort(scores)
    rejectable = int(math.floor((1.0 - min_hit_rate) * len(ordered) + 1e-9))
    return float(np.nextafter(ordered[rejectable], -np.inf))


def train_stage(data: StageData, pool, cost, config: CascadeConfig, memory: int,
                progress: bool, name: str):
    """Boost one stage until its negatives' pass rate at the hit-rate threshold is at most
    ``max_false_alarm_rate``. Returns ``(estimator, threshold, hit rate, false-alarm rate)``."""
    images = np.concatenate([data.faces, data.negatives])
    y = np.r_[np.ones(len(data.faces), np.int8), np.zeros(len(data.negatives), np.int8)]
    store = compact_features(images, pool, memory, progress=progress)
    negative_scores = np.zeros(len(data.negatives))
    held_scores = np.zeros(len(data.held_faces))
    window = (pool.width, pool.height)
    found = {}
    bar = tqdm(total=config.max_stumps_per_stage, desc=f"{name} boosting", unit="stump",
               disable=not progress, leave=False)

    def on_round(model, state):
        f, threshold, polarity = state.stumps[-1]
        alpha = state.alphas[-1]
        outputs = store.outputs_at(f, threshold, polarity)
        negative_scores[:] += alpha * outputs[len(data.faces):]
        values = haar_values(data.held_faces, [pool.feature(f)], window)[:, 0]
        held_scores[:] += alpha * np.where(values > threshold, polarity, -polarity)
        cut = stage_threshold(held_scores, config.min_hit_rate)
        false_alarms = float(np.mean(negative_scores > cut))
        found.update(threshold=cut, false_alarms=false_alarms,
                     hits=float(np.mean(held_scores > cut)))
        bar.update(1)
        bar.set_postfix(FA=f"{false_alarms:.3f}", hit=f"{found['hits']:.3f}")
        if false_alarms <= config.max_false_alarm_rate:
            state.finished = True   # the stage meets its targets: no more stumps
    estimator = AdaBoostDB(n_rounds=config.max_stumps_per_stage, cost=cost)
    try:
        estimator.fit_binned(store, y, callback=on_round)
    finally:
        bar.close()
    return estimator, found["threshold"], found["hits"], found["false_alarms"]


def stage_negatives(cascade, negatives, cbcl_negatives, count: int, seed: int,
                    progress: bool, warn) -> np.ndarray:
    """``count`` negatives the cascade so far accepts: CBCL's non-faces first, then
    windows of the negative pictures (random ones for the first stage)."""
    if cascade is None:
        kept = cbcl_negatives
    else:
        kept = cbcl_negatives[cascade.decision_function(cbcl_negatives) > cascade.threshold]
    kept = kept[:count]
    missing = count - len(kept)
    if missing <= 0:
        return kept
    if cascade is None:
        found = random_windows(negatives, missing, seed, (19, 19), warn=warn)
    else:
        found = hard_negatives(cascade, negatives, missing, seed, cascade.threshold,
                               progress=progress, warn=warn)
    return np.concatenate([kept, found])


def cascade_model(estimators, thresholds, pool, cost, training: dict):
    """The detector model of the stages so far: their stumps in order, and ``stages``."""
    stacked = AdaBoostDB(n_rounds=sum(e.n_rounds_ for e in estimators), cost=cost)
    for name in ("features_", "thresholds_", "polarities_", "alphas_"):
        setattr(stacked, name, np.concatenate([getattr(e, name) for e in estimators]))
    stacked.n_rounds_ = len(stacked.alphas_)
    stacked.classes_ = estimators[0].classes_
    stacked.n_features_in_ = estimators[0].n_features_in_
    model = haar_detector_model(stacked, pool, training)
    document = dict(model.document)
    document["stages"] = [{"stumps": int(e.n_rounds_), "threshold": float(t)}
                          for e, t in zip(estimators, thresholds)]
    return type(model).from_document(reseal(document))


def peak_rss_gib() -> float:
    """Peak resident memory of this process so far, in GiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20


def config_record(config: CascadeConfig) -> dict:
    return dict(asdict(config), target_false_alarm_rate=config.target)


def run_stage(stage: int, data: StageData, pool, cost, config: CascadeConfig, memory: int,
              progress: bool):
    """Train stage ``stage`` (0-based) and return its estimator, threshold and record."""
    start = time.perf_counter()
    with terminate_as_interrupt():
        estimator, threshold, hits, false_alarms = train_stage(
            data, pool, cost, config, memory, progress, f"stage {stage + 1}/{config.stages}")
    record = {"stage": stage + 1, "stumps": int(estimator.n_rounds_),
              "threshold": threshold, "held_out_hit_rate": hits,
              "false_alarm_rate": false_alarms, "faces": int(len(data.faces)),
              "negatives": int(len(data.negatives)),
              "seconds": round(time.perf_counter() - start, 2),
              "peak_rss_gib": round(peak_rss_gib(), 3)}
    return estimator, threshold, record
