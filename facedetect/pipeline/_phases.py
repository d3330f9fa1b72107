"""A training run's phases, timed, and the whole run's length foreseen from those done.

A one-stage run is: features, boosting and mining for each bootstrap stage, then features
and boosting of the last stage, then the operating points. Each phase is recorded with
its seconds (``train-detector --json`` prints them). Before the first stage a probe of a
second or two times this machine's feature step and stump search on a small sample, and
the run says how long the whole should take; after each stage it says so again, scaling
what it has measured: the features by the windows a stage adds, a boosting round by its
windows, mining by the stages' mean.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field

# The image operating point scans the calibration pictures about seven times with the final
# model (the search scan, then the gallop and bisection on detect's scan): this share of
# the last stage's boosting time, as measured on the 2-core Xeon (337 s after 738 s;
# benchmarks/results/training.md).
OPERATING_POINTS_PER_FINAL_BOOSTING = 0.45
# A probe's stump search reads a small store from cache; the run's streams from memory:
# on the idle 2-core Xeon the probe foresaw 705 s of boosting for the 884 s measured.
PROBE_SEARCH_FACTOR = 1.25
PROBE_WINDOWS, PROBE_FEATURES = 4096, 2048
PROBE_SEARCH_WINDOWS, PROBE_SEARCH_FEATURES = 16384, 2048


@dataclass
class Phases:
    """The phases run so far, in order: ``{"phase", "stage", "seconds", ...}`` each.

    Examples
    --------
    >>> phases = Phases()
    >>> with phases.timed("features", stage=1, windows=10):
    ...     pass
    >>> [(p["phase"], p["stage"], p["windows"]) for p in phases.records]
    [('features', 1, 10)]
    """

    records: list = field(default_factory=list)

    @contextlib.contextmanager
    def timed(self, phase: str, stage: int | None = None, **fields):
        """Record ``phase`` with the seconds the block took (also when it is interrupted:
        then with ``"interrupted": True``)."""
        record = {"phase": phase, "stage": stage, **fields}
        start = time.perf_counter()
        try:
            yield record
        except BaseException:
            record["interrupted"] = True
            raise
        finally:
            record["seconds"] = round(time.perf_counter() - start, 3)
            self.records.append(record)

    def of(self, phase: str) -> list[dict]:
        return [r for r in self.records if r["phase"] == phase and not r.get("interrupted")]


def stages_line(config, n_windows: int) -> str:
    """What a one-stage run will do, said before it starts."""
    stages = config.bootstrap_rounds
    if not stages:
        return (f"the run: {config.rounds} rounds on {n_windows:,} windows, then the window "
                "operating point")
    return (f"the run: {stages} stage{'s' if stages > 1 else ''} of "
            f"{config.rounds_at(0)} rounds, each mining up to {config.bootstrap_limit:,} "
            f"hard negatives, from {n_windows:,} windows; then {config.rounds} rounds on "
            "them all, then the operating points")


def _final_boosting(config, n_windows: int, per_round_window: float) -> float:
    windows = n_windows + config.bootstrap_rounds * config.bootstrap_limit
    return per_round_window * config.rounds_at(config.bootstrap_rounds) * windows


def remaining_seconds(phases: Phases, config, n_windows: int, stage: int,
                      image_point: bool) -> float:
    """Seconds the run still needs after stage ``stage`` (0-based, its mining done) of a
    run that started from ``n_windows`` windows, from the phases measured so far."""
    features, boosting, mining = (phases.of(name) for name in ("features", "boosting",
                                                               "mining"))
    if not (features and boosting and mining):
        return float("nan")
    computed = features[-1]
    per_window = computed["seconds"] / max(1, computed["windows"])
    last = boosting[-1]
    per_round_window = last["seconds"] / max(1, last["rounds"] * last["windows"])
    per_mining = sum(r["seconds"] for r in mining) / len(mining)
    left = 0.0
    for later in range(stage + 1, config.bootstrap_rounds + 1):
        windows = n_windows + later * config.bootstrap_limit
        anew = later == config.bootstrap_rounds or not config.keep_features
        left += per_window * (windows if anew else config.bootstrap_limit)
        left += per_round_window * config.rounds_at(later) * windows
        if later < config.bootstrap_rounds:
            left += per_mining
    if image_point:
        left += OPERATING_POINTS_PER_FINAL_BOOSTING * _final_boosting(config, n_windows,
                                                                      per_round_window)
    return left


def foreseen_seconds(config, pool, n_windows: int, image_point: bool) -> dict:
    """The whole run's seconds by phase, foreseen before it starts from a probe of this
    machine on small random samples: a window's integral images, a feature's values and
    bins, and a stump search."""
    import numpy as np

    from ..haar._matrix import PreparedWindows
    from ..training._binned import BinnedFeatures, binned_root_search
    from ..training._boosting import _feature_count
    rng = np.random.default_rng(0)
    windows = rng.integers(0, 256, (PROBE_WINDOWS, pool.height, pool.width), np.uint8)
    part = pool.subset(np.linspace(0, len(pool) - 1, min(len(pool), PROBE_FEATURES))
                       .astype(np.int64))
    timings = []
    for n in (64, PROBE_WINDOWS):   # the first compiles what is not compiled yet
        start = time.perf_counter()
        prepared = PreparedWindows(part).prepare(windows[:n])
        middle = time.perf_counter()
        BinnedFeatures.from_values(prepared.features(0, len(part)))
        timings = [middle - start, time.perf_counter() - middle]
    per_window = timings[0] / PROBE_WINDOWS
    per_window_feature = timings[1] / (PROBE_WINDOWS * len(part))
    # The stump search on random bins of as many windows as a run's first stage holds
    # (per feature, the cuts' cost then weighs as little as in the run), fastest of three.
    n = PROBE_SEARCH_WINDOWS
    sample = BinnedFeatures(rng.integers(0, 256, (PROBE_SEARCH_FEATURES, n), np.uint8),
                            np.tile(np.arange(255, dtype=np.float32),
                                    (PROBE_SEARCH_FEATURES, 1)),
                            np.full(PROBE_SEARCH_FEATURES, 255), dense=True)
    weights, halves = np.full(n, 2.0 / n), np.arange(n) < n // 2
    times = []
    for _ in range(4):   # the first compiles what is not compiled yet
        start = time.perf_counter()
        binned_root_search(sample, weights, halves, (0.5, 0.5, 1.0, 1.0))
        times.append(time.perf_counter() - start)
    per_sample_feature = PROBE_SEARCH_FACTOR * min(times[1:]) / (n * PROBE_SEARCH_FEATURES)

    def round_seconds(windows: int) -> float:
        return searched * per_sample_feature * windows

    searched = _feature_count(config.max_features, len(pool))
    last = n_windows + config.bootstrap_rounds * config.bootstrap_limit
    boosting = sum(config.rounds_at(stage) * round_seconds(
        n_windows + stage * config.bootstrap_limit) for stage in range(
            config.bootstrap_rounds + 1))
    final = config.rounds * round_seconds(last)
    # Each stage's windows (with keep_features: the first stage's, the mining stages' new
    # ones, then the last stage's all).
    featurised = sum(n_windows + stage * config.bootstrap_limit
                     for stage in range(config.bootstrap_rounds + 1))
    if config.keep_features and config.bootstrap_rounds:
        featurised = n_windows + (config.bootstrap_rounds - 1) * config.bootstrap_limit + last
    return {"features": (per_window + per_window_feature * len(pool)) * featurised,
            "boosting": boosting,
            "operating points": OPERATING_POINTS_PER_FINAL_BOOSTING * final if image_point
            else 0.0}


def duration(seconds: float) -> str:
    """``"40 s"``, ``"3.5 min"`` or ``"25 min"``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 600 else f"{seconds / 60:.0f} min"


def foreseen_line(foreseen: dict) -> str:
    """The probe's forecast in one line."""
    parts = ", ".join(f"{name} {duration(seconds)}" for name, seconds in foreseen.items()
                      if seconds)
    return (f"the whole run should take about {duration(sum(foreseen.values()))} on this "
            f"machine ({parts}; from a probe of its speed; said again after each stage)")


def stage_line(phases: Phases, stage_name: str, stage: int, elapsed: float,
               left: float) -> str:
    """A finished stage's seconds by phase, and the whole run's foreseen length."""
    parts = ", ".join(f"{r['phase']} {r['seconds']:.0f} s" for r in phases.records
                      if r["stage"] == stage + 1 and not r.get("interrupted"))
    if left != left:   # nothing measured to foresee from
        return f"{stage_name}: {parts}"
    return (f"{stage_name}: {parts}; the whole run should take about "
            f"{duration(elapsed + left)} ({duration(left)} left)")
