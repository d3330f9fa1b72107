"""The settings objects a command reads its defaults from: how a run reports and saves
(:class:`RunOptions`) and a cascade's stopping rules (:class:`CascadeConfig`), with their
limits. Plain data: the command line imports this without numpy's company (numba, OpenCV,
scikit-learn), so that ``--help`` answers at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import InvalidParameter
from ..limits import check_limited

__all__ = ["CASCADE_LIMITS", "CascadeConfig", "DEFAULT_MEMORY_GB", "RUN_LIMITS", "RunOptions",
           "default_memory"]

# Memory for the training features unless told (--memory): this share of what the machine
# has available when the run starts, within these GiB, or the fallback where that cannot
# be read. The recipe's compact features (244,028 x 40,715 windows, 9.3 GiB) then stay in
# memory on a 24 GB machine; beyond the setting they spill to a file, each segment once.
MEMORY_SHARE = 0.5
MEMORY_BOUNDS_GB = (1.0, 64.0)
DEFAULT_MEMORY_GB = 3.0
# A stage needs this many negatives to measure its false-alarm rate; fewer means the
# negative pictures are exhausted.
MIN_NEGATIVES = 50
# Negatives per stage unless told: as many as the training faces, at most this many
# (opencv_traincascade's default is 1,000 against 2,000 faces).
DEFAULT_NEGATIVES = 5000
# The costs a stage tries with ``search_cost``: even, and misses two and four times dearer.
SEARCHED_COSTS = ((1.0, 1.0), (2.0, 1.0), (4.0, 1.0))

# Each field's kind and range, declared once: the settings' check() and the command's
# flags (cli/common.field_type) read them. (kind, low, high, ends, None allowed)
RUN_LIMITS = {
    "checkpoint_every": ("int", 1, 10 ** 6, "[]", False),
}
CASCADE_LIMITS = {
    "stages": ("int", 1, 100, "[]", False),
    "min_hit_rate": ("float", 0.0, 1.0, "()", False),
    "max_false_alarm_rate": ("float", 0.0, 1.0, "()", False),
    "max_stumps_per_stage": ("int", 1, 10_000, "[]", False),
    "target_false_alarm_rate": ("float", 0.0, 1.0, "()", True),
    "negatives_per_stage": ("int", MIN_NEGATIVES, 10 ** 6, "[]", True),
    "positives_per_stage": ("int", MIN_NEGATIVES, 10 ** 7, "[]", True),
    "heldout_negatives": ("int", MIN_NEGATIVES, 10 ** 6, "[]", True),
}


def default_memory() -> tuple[int, str]:
    """``(bytes, line)``: the memory setting a run takes unless told, and the line that
    says so: :data:`MEMORY_SHARE` of the memory available now, within
    :data:`MEMORY_BOUNDS_GB`.

    Examples
    --------
    >>> memory, line = default_memory()
    >>> 2**30 <= memory <= 64 * 2**30, line.startswith("memory: ")
    (True, True)
    """
    from .._utils.sysinfo import available_memory_bytes
    available = available_memory_bytes()
    low, high = MEMORY_BOUNDS_GB
    if available is None:
        return int(DEFAULT_MEMORY_GB * 2**30), (
            f"memory: {DEFAULT_MEMORY_GB:g} GiB for the training features (the memory "
            "available could not be read; --memory GIB sets it)")
    gigabytes = min(high, max(low, MEMORY_SHARE * available / 2**30))
    return int(gigabytes * 2**30), (
        f"memory: {gigabytes:.1f} GiB for the training features (half of the "
        f"{available / 2**30:.1f} GiB available, within {low:g}..{high:g}; --memory GIB "
        "sets it)")


@dataclass(kw_only=True)
class RunOptions:
    """How a training run reports and saves, as opposed to what it learns (``TrainConfig``).

    ``checkpoint`` defaults to ``<out>.checkpoint.json``; it is written every
    ``checkpoint_every`` rounds, while mining, and when the run is interrupted.
    ``memory`` (bytes, default :func:`default_memory`: half of the memory available at
    the start) bounds the feature storage; compact features beyond it spill to a
    temporary file. ``log`` takes progress lines, ``warn`` warnings (default: stderr). With a
    ``client``, the features are computed and searched on its workers
    (:class:`._storage.FeatureSource`), to the same model.

    Parameters
    ----------
    checkpoint : path, optional
        The checkpoint file.
    checkpoint_every : int
        Rounds between checkpoints.
    memory : int, optional
        Bytes of feature storage before spilling.
    log, warn : callable
        Take progress lines and warnings.
    client : dask.distributed.Client, optional
        Compute and search the features on its workers.
    shards : int, optional
        Feature shards over the workers (default: one per worker).

    See Also
    --------
    facedetect.train_detector : the run it sets.

    Examples
    --------
    >>> RunOptions(checkpoint_every=5).check()
    >>> RunOptions(checkpoint_every=0).check()
    Traceback (most recent call last):
        ...
    facedetect.errors.InvalidParameter: checkpoint_every must be an integer in 1..1000000, got 0
    """

    checkpoint: Path | None = None
    checkpoint_every: int = 10
    memory: int | None = None
    log: object = print
    warn: object = None
    client: object = None        # a dask.distributed.Client: features sharded on its workers
    shards: int | None = None    # with a client: feature shards (default one per worker)

    def check(self) -> None:
        """Refuse options a run cannot honour, naming the parameter."""
        for name in RUN_LIMITS:
            setattr(self, name, check_limited(name, getattr(self, name), RUN_LIMITS))


HIT_RATE_ON = ("held-out", "training")


@dataclass(frozen=True, kw_only=True)
class CascadeConfig:
    """The cascade's stopping rules (opencv_traincascade's names and defaults).

    Parameters
    ----------
    stages : int
        Stages at most, 1..100.
    min_hit_rate : float
        Share of the held-out faces each stage keeps.
    max_false_alarm_rate : float
        A stage grows until it keeps at most this share of its negatives.
    max_stumps_per_stage : int
        A stage stops growing here.
    target_false_alarm_rate : float, optional
        The cascade stops once the product of its stages' rates reaches it (default:
        ``max_false_alarm_rate ** stages``).
    negatives_per_stage : int, optional
        Negatives each stage mines (default: as many as training faces, at most 5,000).
    search_cost : bool
        Each stage tries several costs and keeps the one with the fewest stumps.
    positives_per_stage : int, optional
        Training faces each stage samples (opencv_traincascade's ``numPos``).
    keep_capped_stages : bool
        A stage that reaches ``max_stumps_per_stage`` still above ``max_false_alarm_rate``
        is kept and the next one trained, as opencv_traincascade does at ``maxWeakCount``
        (False: the cascade ends with it).
    acceptance_target : bool
        The cascade stops once the share of the windows mining scans that it accepts
        reaches the target, as opencv_traincascade's acceptance ratio does (False: once the
        product of its stages' rates on their own negatives does).
    heldout_negatives : int, optional
        Fresh negatives each stage mines beside its own and measures its false-alarm rate
        on, as it measures its hit rate on held-out faces (None: on its own negatives, as
        opencv_traincascade does).
    hit_rate_on : {"held-out", "training"}
        The faces whose ``min_hit_rate`` sets each stage's threshold: the held-out ones
        (the rate the scanner meets), or the stage's own training faces, as
        opencv_traincascade sets it (smaller stages and fewer of them, that keep fewer
        faces than the rate says).

    See Also
    --------
    train_cascade : train with it.

    Examples
    --------
    >>> config = CascadeConfig(stages=10)
    >>> config.check()
    >>> config.target
    0.0009765625
    """

    stages: int = 20
    min_hit_rate: float = 0.995
    max_false_alarm_rate: float = 0.5
    max_stumps_per_stage: int = 200
    target_false_alarm_rate: float | None = None   # default: max_false_alarm_rate ** stages
    negatives_per_stage: int | None = None   # default: as many as training faces, <= 5000
    search_cost: bool = False   # each stage tries SEARCHED_COSTS and keeps the fewest stumps
    # Each stage boosts on a seeded sample of at most this many of the training faces it
    # still accepts (opencv_traincascade's numPos; None: all): with 35,000 faces from the
    # wild a stage's features and rounds cost about three times those of 12,000.
    positives_per_stage: int | None = None
    keep_capped_stages: bool = False
    # A stage's rate on its own negatives is lower than on fresh windows (it was trained on
    # them), so their product reaches the target stages before fresh windows do.
    acceptance_target: bool = False
    # A stage that grows until its own negatives pass at max_false_alarm_rate passes
    # fresh windows at a higher rate; measured on negatives it did not learn from, its
    # rate is the one the scanner meets.
    heldout_negatives: int | None = None
    # A stage fits its own training faces, so the threshold that keeps min_hit_rate of
    # them keeps fewer unseen ones, and fewer unseen negatives too: opencv_traincascade's
    # rule, the cause of its smaller stages (measured: docs/cascades.md, the hit-rate rule).
    hit_rate_on: str = "held-out"

    def check(self) -> None:
        """Refuse settings no cascade can meet, naming the parameter."""
        for name in CASCADE_LIMITS:   # frozen: numpy scalars stored as Python numbers
            object.__setattr__(self, name,
                               check_limited(name, getattr(self, name), CASCADE_LIMITS))
        for name in ("search_cost", "keep_capped_stages", "acceptance_target"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidParameter(f"{name} must be True or False, got "
                                       f"{getattr(self, name)!r}", name)
        if self.hit_rate_on not in HIT_RATE_ON:
            raise InvalidParameter(f"hit_rate_on must be one of {', '.join(HIT_RATE_ON)}, "
                                   f"got {self.hit_rate_on!r}", "hit_rate_on")

    def stage_costs(self, cost) -> tuple:
        """The costs each stage is boosted at: ``cost``, or the searched ones."""
        return SEARCHED_COSTS if self.search_cost else (tuple(cost),)

    @property
    def target(self) -> float:
        if self.target_false_alarm_rate is not None:
            return self.target_false_alarm_rate
        return self.max_false_alarm_rate ** self.stages
