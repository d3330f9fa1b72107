"""Attentional cascades (Viola & Jones), each stage boosted with AdaBoostDB.

Stage k is trained on the training faces the stages so far still accept and on negatives
that they accept too: for the first stage random windows of the negative pictures, then
windows mined from those pictures with the cascade itself (:mod:`._bootstrap`), so the
training set stays the size of one stage. A stage adds stumps until, at the threshold that
keeps ``min_hit_rate`` of the held-out faces (with ``hit_rate_on="training"``, of its own
training faces, as opencv_traincascade keeps them), at most ``max_false_alarm_rate`` of its
negatives pass: opencv_traincascade's rule (with ``heldout_negatives``, of as many more
negatives mined beside them that it does not train on). Each stage records the share of the windows
scanned while its negatives were mined that the stages before it accept (OpenCV's
acceptance ratio). The cascade stops after ``stages`` stages, once the false-alarm rates
multiply to ``target_false_alarm_rate`` (or, with ``acceptance_target``, once the
acceptance ratio reaches it: opencv_traincascade's rule), when the negatives run out, or
when a stage cannot reach its rate within ``max_stumps_per_stage`` (unless
``keep_capped_stages``, opencv_traincascade's rule); it is saved with the stages it has and
the reason. A finished stage is checkpointed (the partial cascade is a
model file), and ``resume`` continues after it to the same cascade.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import numpy as np
from .._utils.progress import progress_bar

from ..detector._model import haar_values
from .._utils.interrupts import terminate_as_interrupt
from ..detector._model import HaarDetectorModel
from ..modelfile._detection import detection_section
from ..modelfile._io import FORMAT, VERSION, reseal
from .._utils.sysinfo import peak_rss_gib
from ..training._algorithms import AdaBoostDB
from ..training._model_io import model_document
from ._assemble import framing_of, haar_features
from ._bootstrap import MiningState, hard_negatives, random_windows
from ._settings import CascadeConfig
from ._stage_features import StageFeatures

# A cascade scans as OpenCV's detectMultiScale does (step "auto": bilinear levels), so its
# negatives are cut from such levels too.
CASCADE_PYRAMID = "linear"


@dataclass
class StageData:
    """One stage's windows: training faces and negatives, the held-out faces that set its
    threshold and, if any, the held-out negatives that measure its false-alarm rate."""

    faces: np.ndarray
    negatives: np.ndarray
    held_faces: np.ndarray
    held_negatives: np.ndarray | None = None


def stage_threshold(scores: np.ndarray, min_hit_rate: float) -> float:
    """A threshold that ``min_hit_rate`` of ``scores`` exceed, midway between the lowest
    score that must pass and the next lower one (a window passes a stage when its sum is
    above the threshold). A stage's sums take few distinct values, many windows share
    each, so a threshold just below one would leave them to rounding: OpenCV sums the
    leaves as float32 and reads the threshold as one.

    Examples
    --------
    >>> stage_threshold(np.array([3.0, 1.0, 2.0, 4.0]), 0.75)   # three of four pass
    1.5
    >>> stage_threshold(np.array([3.0, 2.0, 2.0, 4.0]), 0.75)   # ties pass together
    1.5
    """
    ordered = np.sort(scores)
    # At least one score passes, whatever the rate: a rate of 1e-300 rounds 1 - rate to 1.
    rejectable = min(int(math.floor((1.0 - min_hit_rate) * len(ordered) + 1e-9)),
                     len(ordered) - 1)
    lowest = ordered[rejectable]
    below = ordered[ordered < lowest]
    # With nothing below, half a unit under: as far from the sums as their own spacing.
    return float(0.5 * (lowest + below[-1])) if len(below) else float(lowest - 0.5)


def train_stage(data: StageData, pool, costs, config: CascadeConfig, features: StageFeatures,
                progress: bool, name: str):
    """Boost one stage until its negatives' pass rate at the hit-rate threshold is at most
    ``max_false_alarm_rate`` (the held-out negatives' rate where there are some), once per
    cost in ``costs`` on the same features; the stage of fewest stumps wins (then the
    fewest false alarms, then the first cost). Returns ``(estimator, threshold, hit rate,
    false-alarm rate, its training negatives' false-alarm rate, cost)``."""
    y = np.r_[np.ones(len(data.faces), np.int8), np.zeros(len(data.negatives), np.int8)]
    store = features(data.faces, data.negatives, progress)
    held_values = _HeldValues(data.held_faces, pool)
    held_negatives = (None if data.held_negatives is None
                      else _HeldValues(data.held_negatives, pool))
    best = None
    for cost in costs:
        label = f"{name} boosting" + (f" at cost {cost[0]:g},{cost[1]:g}" if len(costs) > 1
                                      else "")
        found = _boost_stage(store, y, held_values, held_negatives, tuple(cost), config,
                             progress, label)
        if best is None or (found[0].n_rounds_, found[3]) < (best[0].n_rounds_, best[3]):
            best = (*found, tuple(cost))
    return best


class _HeldValues:
    """Held-out windows' values of pool features, computed once per feature as the
    scanner computes them (so their stage sums are the ones the scanner gives them)."""

    def __init__(self, windows: np.ndarray, pool):
        self.windows, self.pool, self.cache = windows, pool, {}

    def __call__(self, feature: int) -> np.ndarray:
        if feature not in self.cache:
            self.cache[feature] = haar_values(self.windows, [self.pool.feature(feature)],
                                              (self.pool.width, self.pool.height),
                                              tilted=[self.pool.tilted[feature]],
                                              channels=[self.pool.channels[feature]])[:, 0]
        return self.cache[feature]

    def votes(self, feature: int, threshold: float, polarity: int) -> np.ndarray:
        """The stump's vote (``polarity`` above ``threshold``, ``-polarity`` below) on each
        window."""
        return np.where(self(feature) > threshold, polarity, -polarity)


def _boost_stage(store, y, held_values, held_negatives, cost, config: CascadeConfig,
                 progress: bool, label: str):
    n_faces = int(y.sum())
    negative_scores = np.zeros(len(y) - n_faces)
    held_scores = np.zeros(len(held_values.windows))
    # The faces whose hit rate sets the threshold: the held-out ones, or (OpenCV's rule)
    # the stage's own training faces.
    own_faces = np.zeros(n_faces) if config.hit_rate_on == "training" else None
    held_negative_scores = (None if held_negatives is None
                            else np.zeros(len(held_negatives.windows)))
    found = {}
    bar = progress_bar(total=config.max_stumps_per_stage, desc=label, unit="stump",
               disable=not progress, leave=False)

    def on_round(model, state):
        f, threshold, polarity = state.stumps[-1]
        alpha = state.alphas[-1]
        votes = store.outputs_at(f, threshold, polarity)
        negative_scores[:] += alpha * votes[n_faces:]
        held_scores[:] += alpha * held_values.votes(f, threshold, polarity)
        if own_faces is not None:
            own_faces[:] += alpha * votes[:n_faces]
        cut = stage_threshold(held_scores if own_faces is None else own_faces,
                              config.min_hit_rate)
        false_alarms = trained = float(np.mean(negative_scores > cut))
        if held_negative_scores is not None:
            held_negative_scores[:] += alpha * held_negatives.votes(f, threshold, polarity)
            false_alarms = float(np.mean(held_negative_scores > cut))
        found.update(threshold=cut, false_alarms=false_alarms, trained=trained,
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
    return (estimator, found["threshold"], found["hits"], found["false_alarms"],
            found["trained"])


def stage_negatives(cascade, negatives, known: np.ndarray, count: int, seed: int,
                    progress: bool, warn, window=(19, 19)) -> tuple[np.ndarray, float | None]:
    """``count`` negatives the cascade so far accepts: the ``known`` ones first (CBCL's
    non-faces that passed every stage), then windows of the negative pictures (random ones
    for the first stage); and the share of the windows scanned in the pictures that the
    cascade accepts (opencv_traincascade's acceptance ratio: None where no picture was
    scanned)."""
    kept = known[:count]
    missing = count - len(kept)
    if missing <= 0:
        return kept, None
    if cascade is None:
        return np.concatenate([kept, random_windows(negatives, missing, seed, window, warn=warn,
                                                    pyramid=CASCADE_PYRAMID)]), None
    state = MiningState()
    found = hard_negatives(cascade, negatives, missing, seed, cascade.window_threshold,
                           state=state, progress=progress, warn=warn, pyramid=CASCADE_PYRAMID)
    acceptance = state.accepted / state.scanned if state.scanned else None
    return np.concatenate([kept, found]), acceptance


def cascade_model(stages, pool, cost, training: dict):
    """The detector model of the stages so far, ``(stumps, threshold)`` each (the stumps as
    a model file lists them): their stumps in order, and ``stages``."""
    stumps = [stump for stage_stumps, _ in stages for stump in stage_stumps]
    document = {"format": FORMAT, "version": VERSION, "algorithm": "db", "selection": "root",
                "search": "conditional", "cost": [float(c) for c in cost], "classes": [0, 1],
                "n_features": len(pool), "stumps": stumps,
                "features": haar_features([s["feature"] for s in stumps], pool),
                "training": training,
                "detection": dict(
                    detection_section((pool.width, pool.height), framing_of(training),
                                      float(stages[-1][1])),
                    stages=[{"stumps": len(stage_stumps), "threshold": float(threshold)}
                            for stage_stumps, threshold in stages])}
    return HaarDetectorModel.from_document(reseal(document))


def config_record(config: CascadeConfig) -> dict:
    return dict(asdict(config), target_false_alarm_rate=config.target)


def run_stage(stage: int, data: StageData, pool, costs, config: CascadeConfig,
              features: StageFeatures, progress: bool):
    """Train stage ``stage`` (0-based) at the best of ``costs`` and return its stumps (as a
    model file lists them), threshold and record."""
    start = time.perf_counter()
    with terminate_as_interrupt():
        estimator, threshold, hits, false_alarms, trained, cost = train_stage(
            data, pool, costs, config, features, progress, f"stage {stage + 1}/{config.stages}")
    record = {"stage": stage + 1, "stumps": int(estimator.n_rounds_), "cost": list(cost),
              "threshold": threshold, "held_out_hit_rate": hits,
              "false_alarm_rate": false_alarms, "faces": int(len(data.faces)),
              "negatives": int(len(data.negatives)),
              "training_false_alarm_rate": trained,
              "heldout_negatives": (0 if data.held_negatives is None
                                    else int(len(data.held_negatives))),
              "boosting_seconds": round(time.perf_counter() - start, 2),
              "peak_rss_gib": round(peak_rss_gib(), 3)}
    return model_document(estimator)["stumps"], threshold, record
