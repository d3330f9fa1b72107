"""A training run's settings, and how they split the data: what ``train-detector`` records.

Everything a run depends on is in :class:`TrainConfig`; the model records it, together with
the held-out file names, so evaluation can refuse to leak.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from ..costs import check_cost
from ..errors import FacedetectError, InvalidParameter
from ..modelfile._detection import CBCL_FRAMING as FRAMING
from ..modelfile._schema import CALIBRATIONS, CBCL_WINDOW
from ..modelfile._registry import ALGORITHMS
from ..limits import check_limited
from ..training._splits import balanced_subset, stratified_holdout
from ._jitter import CBCL_JITTER_SHIFT, WILD_JITTER_SHIFT

# The estimators, OpenCV and scikit-learn load when a run needs them, not when a
# command reads its flags (TrainConfig's defaults are the command's).
ALGORITHM_CHOICES = tuple(ALGORITHMS)
# threshold_rule -> the operating-point rule behind it
THRESHOLD_RULES = {"calibrated": "probability", "empirical": "expected-cost"}
# The recipe's window with faces from the wild: framed as OpenCV's frontal-face cascades
# frame theirs (the faces folder's PROVENANCE.md), measured against CBCL's 19x19.
WILD_WINDOW = (24, 24)
WILD_FRAMING = 2.2
# The share of wild-face windows and mined negatives posterised with faces from the wild
# and channel features: at equal false alarms it keeps the clean held-out crops and finds
# posterised ones far more often (docs/detector-training.md); larger shares cost clean recall.
WILD_POSTERIZE = 0.02
# The image operating point's false alarms per megapixel on the calibration pictures. On
# the held-out fifth of the shared negatives (scale 1.1, 3 neighbours) OpenCV's
# haarcascade_frontalface_default.xml raises 1.22 false alarms per Mpx and
# haarcascade_frontalface_alt2.xml 0.465; the recipe aims at 0.25.
TARGET_FALSE_ALARMS_PER_MEGAPIXEL = 0.25


@dataclass(kw_only=True)
class TrainConfig:
    """What ``train-detector`` learns: the learner, the data split, augmentation, the
    operating point and bootstrapping. The defaults are the settings the recipes share;
    the window, framing, feature pool, jitter shift and posterised share left None are
    filled in for the data a run is given (:func:`resolved_window`), whereas
    :func:`~facedetect.pipeline._recipes.recipe_config` gives a whole named recipe, every
    field fixed, as ``train-detector --recipe NAME`` trains it. ``train-detector --help``
    describes each field. How a run reports and saves is :class:`._run.RunOptions`.

    Parameters
    ----------
    cost : (float, float)
        Cost of a missed face, then of a false alarm.
    rounds : int
        Boosting rounds of the final model (``--rounds``).
    algorithm : str
        A name of :data:`facedetect.training._algorithms.ALGORITHMS` (``db``: AdaBoostDB).
    selection : {"root", "loss"}
        AdaBoostDB's weak-learner selection.
    holdout : float
        Stratified fraction of CBCL held out from training, in [0, 1).
    balanced : bool
        Train on the class-balanced subset (the paper's CBCL experiment).
    seed : int
        Seeds the split, augmentation and mining.
    mirror, jitter : bool, int
        Also train on every face mirrored, and on ``jitter`` turned, scaled and shifted
        copies of each.
    jitter_shift : float or None
        The jitter's largest shift, in window pixels either way along each axis (None:
        :data:`WILD_JITTER_SHIFT` with faces from the wild and no channel features,
        else :data:`CBCL_JITTER_SHIFT`, and for a cascade; :func:`resolved_window`).
    calibration_split, prior, calibration, threshold_rule
        The window operating point (see the comments below).
    exact : bool
        The paper's float32 search instead of compact uint8 bins.
    max_features : float, int or None
        The Haar features each boosting round searches, a seeded subset per round: a
        fraction of the pool, or a count (None: all, the paper's search).
    window, framing : (int, int) or None, float or None
        The window (width, height) and how many eye distances wide it frames a face
        (None: the recipe's, :func:`resolved_window`).
    grain, posterize : float, float or None
        Grain on the wild-face windows and the mined negatives, and the share of them
        posterised (None: :data:`WILD_POSTERIZE` with faces from the wild and channel
        features, else 0; :func:`resolved_window`).
    tilted : bool or None
        Add Lienhart and Maydt's tilted features (OpenCV's ``-mode ALL``) to the five
        basic types (None: with faces from the wild, :func:`resolved_window`; a cascade's
        None is off).
    channels : bool or None
        Add channel features over the gradient channels (Dollár's integral channel
        features, :mod:`facedetect.haar._channels`): our scanner runs them, OpenCV's
        cascade format cannot hold them (None: with faces from the wild,
        :func:`resolved_window`; a cascade's None is off).
    bootstrap_rounds, bootstrap_limit, bootstrap_threshold, stage_rounds
        Hard-negative bootstrapping (see the comments below).
    keep_features : bool
        Compute each window's features once over the mining stages (faster, and measured
        to find fewer held-out faces: see the comment below).

    See Also
    --------
    facedetect.train_detector : train with it.
    facedetect.pipeline.plan_training : resolve it against the data once.

    Examples
    --------
    >>> config = TrainConfig(cost=(1, 10), rounds=50)
    >>> config.algorithm, config.uses_exact, config.as_dict()["cost"]
    ('db', False, [1, 10])
    >>> TrainConfig().rounds, TrainConfig().bootstrap_rounds   # the command's recipe
    (1500, 4)
    >>> resolved_window(TrainConfig(), wild_faces=True).window
    (24, 24)
    """

    cost: tuple[float, float] = (1.0, 1.0)
    rounds: int = 1500
    algorithm: str = "db"
    selection: str = "root"
    holdout: float = 0.25
    balanced: bool = False
    seed: int = 0
    mirror: bool = True
    jitter: int = 3
    jitter_shift: float | None = None
    # Gaussian grain on the windows of the faces from the wild and on the mined negatives
    # alike, each window its own sd up to this many grey levels; 0: none. Measured on
    # grainy held-out crops (docs/detector-training.md); not used without wild faces or mining.
    grain: float = 10.0
    # The fraction of those same windows (wild faces, mined negatives) posterised to 4..8
    # grey levels (pipeline/_augment.py); 0: none. None: WILD_POSTERIZE with faces from
    # the wild and channel features, else 0 (on Haar features alone, 19x19 and 24x24,
    # every share tried cost more clean recall than the bar allowed;
    # docs/detector-training.md).
    posterize: float | None = None
    # The operating point: a stratified fraction of the training part that boosting does
    # not see scores the model; a calibration map is fitted on those scores and the
    # threshold goes where the calibrated probability crosses the Bayes cut for the cost
    # at ``prior`` (default: the data's). threshold_rule "empirical" takes the least
    # empirical expected cost on the same scores instead. 0 keeps the raw threshold 0.
    calibration_split: float = 0.2
    # The image operating point (``detect``'s threshold): the lowest whose false alarms per
    # megapixel on the calibration pictures are at most this (facedetect calibrate).
    target_false_alarms_per_megapixel: float = TARGET_FALSE_ALARMS_PER_MEGAPIXEL
    prior: float | None = None
    calibration: str = "sigmoid"        # "sigmoid" (Platt) or "isotonic"
    threshold_rule: str = "calibrated"  # or "empirical"
    # Feature storage: compact uint8 bins (default) or the paper's exact float32 search.
    exact: bool = False
    # A seeded subset of the features per round: a tenth of the 24x24 pool (a quarter of
    # the 19x19 one), so a round is 3x faster than over every feature at 19x19, spent on
    # twice the rounds and twice the hard negatives (docs/detector-training.md).
    max_features: float | int | None = 16_234
    # The window and its framing; None: 24x24 framing 2.2 eye distances (OpenCV's) with
    # faces from the wild, CBCL's 19x19 at 1.75 without (measured: docs/detector-training.md).
    window: tuple[int, int] | None = None
    framing: float | None = None
    # Tilted features beside the five basic types; None: with faces from the wild (the
    # photograph recipe: measured, docs/detector-training.md), not on CBCL alone, whose
    # experiments keep the paper's pool.
    tilted: bool | None = None
    # Channel features over the gradient channels beside the Haar features; None: with
    # faces from the wild (found by a probe, notebook-2026-12:benchmarks/channel_probe.py;
    # measured on held-out data:
    # docs/detector-training.md), not on CBCL alone (the paper's pool) nor for a cascade,
    # which is trained to export to OpenCV.
    channels: bool | None = None
    # Hard-negative bootstrapping: K retrainings, each after mining up to ``limit`` windows
    # scoring above ``threshold`` on the negative pictures.
    bootstrap_rounds: int = 4
    bootstrap_limit: int = 4000
    bootstrap_threshold: float = 0.0
    # Rounds of each bootstrap stage before the last (None: ``rounds``): those models only
    # mine hard negatives, and a shorter one finds them sooner.
    stage_rounds: int | None = 100
    # Keep each window's features from one mining stage to the next, the mined windows
    # binned at the first stage's edges, instead of binning every stage's windows at their
    # own quantiles: the features of 24,715 + 3 x 4,000 windows instead of 122,860, 26.7
    # instead of about 34 minutes on the 2-core Xeon, but 0.950 of the held-out crops
    # instead of 0.960 (docs/detector-training.md), so not the recipe's.
    keep_features: bool = False

    def rounds_at(self, stage: int) -> int:
        """Boosting rounds of ``stage`` (0-based; the last stage is ``bootstrap_rounds``):
        ``stage_rounds`` (at most ``rounds``) before the last, ``rounds`` in it.

        Examples
        --------
        >>> config = TrainConfig(rounds=300, stage_rounds=100, bootstrap_rounds=2)
        >>> [config.rounds_at(stage) for stage in range(3)]
        [100, 100, 300]
        >>> TrainConfig(rounds=50, stage_rounds=100, bootstrap_rounds=1).rounds_at(0)
        50
        """
        if self.stage_rounds is not None and stage < self.bootstrap_rounds:
            return min(self.stage_rounds, self.rounds)
        return self.rounds

    @property
    def uses_exact(self) -> bool:
        """Exact storage: asked for, or needed (minimum-loss selection has no binned search)."""
        return self.exact or self.algorithm == "cs" or self.selection == "loss"

    def as_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()}


def resolved_window(config: TrainConfig, wild_faces: bool) -> TrainConfig:
    """``config`` with its window, framing, feature pool, jitter shift and posterised share
    filled in (the recipe's where None), refused where no training face fits them:
    CBCL's faces span 1.75 eye distances, so a window framing more of the head needs
    faces from the wild.

    Examples
    --------
    >>> config = resolved_window(TrainConfig(), wild_faces=False)
    >>> config.window, config.framing
    ((19, 19), 1.75)
    >>> resolved_window(TrainConfig(window=(20, 20)), wild_faces=True).framing
    2.2
    >>> config.tilted, resolved_window(TrainConfig(), wild_faces=True).tilted
    (False, True)
    >>> config.channels, resolved_window(TrainConfig(), wild_faces=True).channels
    (False, True)
    >>> config.jitter_shift, resolved_window(TrainConfig(), wild_faces=True).jitter_shift
    (0.75, 0.75)
    >>> resolved_window(TrainConfig(channels=False), wild_faces=True).jitter_shift
    1.5
    >>> config.posterize, resolved_window(TrainConfig(), wild_faces=True).posterize
    (0.0, 0.02)
    >>> resolved_window(TrainConfig(channels=False), wild_faces=True).posterize
    0.0
    """
    window = tuple(config.window or (WILD_WINDOW if wild_faces else (CBCL_WINDOW,) * 2))
    if window[0] != window[1]:
        raise FacedetectError(f"a one-stage window must be square (its framing is its width "
                              f"in eye distances), got {window[0]}x{window[1]}")
    framing = config.framing or (FRAMING if window == (CBCL_WINDOW,) * 2 else WILD_FRAMING)
    if framing > FRAMING and not wild_faces:
        raise FacedetectError(f"a window framing {framing!r} eye distances needs faces from "
                              f"the wild: CBCL's faces span {FRAMING:g} (use a 19x19 window "
                              "or give the faces)")
    tilted = wild_faces if config.tilted is None else config.tilted
    channels = wild_faces if config.channels is None else config.channels
    shift = config.jitter_shift
    if shift is None:
        shift = WILD_JITTER_SHIFT if wild_faces and not channels else CBCL_JITTER_SHIFT
    posterize = config.posterize
    if posterize is None:
        posterize = WILD_POSTERIZE if wild_faces and channels else 0.0
    return replace(config, window=window, framing=float(framing), tilted=bool(tilted),
                   channels=bool(channels), jitter_shift=float(shift),
                   posterize=float(posterize))


def feature_types(config: TrainConfig) -> tuple[str, ...]:
    """The feature types a run trains on: the five basic Haar types, the tilted ones
    where ``config.tilted``, and the channel features where ``config.channels`` (None
    counts as off for both)."""
    from ..haar._channels import CHANNEL_TYPES
    from ..haar._features import ALL_FEATURE_TYPES, FEATURE_TYPES
    types = ALL_FEATURE_TYPES if config.tilted else FEATURE_TYPES
    return types + CHANNEL_TYPES if config.channels else types


def trains_cbcl_faces(config: TrainConfig) -> bool:
    """Whether CBCL's faces can be cut at the config's framing: not beyond their crop."""
    return config.framing is None or config.framing <= FRAMING


def calibrates_on_wild_faces(config: TrainConfig) -> bool:
    """Whether the window operating point is calibrated on held-back faces from the wild
    (where they are given): when CBCL's faces are not boosted on, being cut tighter than
    the window, and there is a calibration split."""
    return not trains_cbcl_faces(config) and bool(config.calibration_split)


def training_windows(images: np.ndarray, labels: np.ndarray, mirror: bool = False,
                     jitter: int = 0, seed: int = 0, max_shift: float = CBCL_JITTER_SHIFT):
    """The training windows and labels; with ``mirror`` each face also appears flipped
    left to right (a face seen in a mirror is still a face, and frontal faces are near
    symmetric, so this doubles the positives at no labelling cost); with ``jitter`` N,
    N slightly turned, scaled and shifted (up to ``max_shift`` pixels) copies of each of
    those faces follow (:mod:`._augment`). Non-faces are left alone: their count already
    outnumbers the faces."""
    faces = images[labels == 1]
    if mirror:
        faces = np.concatenate([faces, faces[:, :, ::-1]])
    if jitter:
        from ._augment import jittered_faces
        faces = np.concatenate([faces, jittered_faces(faces, jitter, seed, max_shift)])
    added = faces[int((labels == 1).sum()):]
    return (np.concatenate([images, added]),
            np.concatenate([labels, np.ones(len(added), labels.dtype)]))


def check_data(cbcl) -> None:
    """Refuse data with one class only."""
    if len(np.unique(cbcl.labels)) < 2:
        raise FacedetectError(f"{cbcl.source}: the data has only one class "
                              f"({'faces' if cbcl.labels[0] == 1 else 'non-faces'}); "
                              f"training needs faces and non-faces")


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
    # Checked before any training is spent: each part needs both classes.
    for part, name, change in ((calibration, "calibration", "a larger calibration_split"),
                               (fit, "boosting", "a smaller calibration_split or holdout")):
        held = labels[train[part]]
        if len(held) < 2 or (held == 1).all() or (held != 1).all():
            raise FacedetectError(
                f"calibration_split {config.calibration_split:g} leaves the {name} part "
                f"{int((held == 1).sum())} faces and {int((held != 1).sum())} non-faces of "
                f"{len(train)} training windows, and it needs both: use more data, "
                f"{change}, or calibration_split 0 for the "
                "raw threshold")
    return train[fit], train[calibration]


# Each numeric field's kind and range, declared once: check_config reads it and the
# command's flags are typed from it (cli/_train_cmd.py). (kind, low, high, open ends,
# None allowed); "[)" is [low, high).
FIELD_LIMITS = {
    "rounds": ("int", 1, 100_000, "[]", False),
    "stage_rounds": ("int", 1, 100_000, "[]", True),
    "holdout": ("float", 0.0, 1.0, "[)", False),
    "calibration_split": ("float", 0.0, 1.0, "[)", False),
    "target_false_alarms_per_megapixel": ("float", 0.0, 1e6, "(]", False),
    # Nearer 0 or 1 the probability cut rounds to 0 or 1 in floating point.
    "prior": ("float", 1e-12, 1.0 - 1e-12, "[]", True),
    "seed": ("int", 0, 2 ** 32 - 1, "[]", False),
    "jitter": ("int", 0, 100, "[]", False),
    "jitter_shift": ("float", 0.0, 4.0, "[]", True),
    "grain": ("float", 0.0, 100.0, "[]", False),
    "posterize": ("float", 0.0, 1.0, "[]", True),
    "framing": ("float", 1.0, 3.0, "[]", True),
    "bootstrap_rounds": ("int", 0, 20, "[]", False),
    "bootstrap_limit": ("int", 1, 10 ** 6, "[]", False),
    "bootstrap_threshold": ("float", -1e6, 1e6, "[]", False),
}
FIELD_CHOICES = {"algorithm": ALGORITHM_CHOICES, "selection": ("root", "loss"),
                 "calibration": CALIBRATIONS, "threshold_rule": tuple(THRESHOLD_RULES)}
FIELD_FLAGS = ("balanced", "mirror", "exact", "tilted", "channels", "keep_features")
OPTIONAL_FLAGS = ("tilted", "channels")   # None: the recipe chooses


def check_field(name: str, value):
    """``value`` as the field ``name`` takes it (numpy scalars as Python numbers), or an
    :class:`~facedetect.errors.InvalidParameter` naming it.

    Examples
    --------
    >>> check_field("jitter", np.int64(3))
    3
    >>> check_field("holdout", "x")
    Traceback (most recent call last):
        ...
    facedetect.errors.InvalidParameter: holdout must be a number in [0, 1), got 'x'
    """
    if name in FIELD_CHOICES:
        if not isinstance(value, str) or value not in FIELD_CHOICES[name]:
            raise InvalidParameter(f"{name} must be one of "
                                   f"{', '.join(FIELD_CHOICES[name])}, got {value!r}", name)
        return value
    if name in FIELD_FLAGS:
        if value is None and name in OPTIONAL_FLAGS:
            return None
        if not isinstance(value, (bool, np.bool_)):
            raise InvalidParameter(f"{name} must be True or False, got {value!r}", name)
        return bool(value)
    return check_limited(name, value, FIELD_LIMITS)


def check_config(config: TrainConfig) -> None:
    """Refuse settings that cannot give a sound model, naming the parameter (an
    :class:`~facedetect.errors.InvalidParameter`, also a ``ValueError``)."""
    from ..training._boosting import check_max_features
    check_cost(config.cost)
    for name in (*FIELD_LIMITS, *FIELD_CHOICES, *FIELD_FLAGS):
        setattr(config, name, check_field(name, getattr(config, name)))   # numpy scalars too
    try:
        check_max_features(config.max_features)    # the estimators' own rule
    except ValueError as error:
        raise InvalidParameter(str(error), "max_features") from None
    _check_window(config.window, config.framing)
    if config.prior is not None and not config.calibration_split:
        raise InvalidParameter("a prior needs a calibration split (calibration_split > 0)",
                               "prior")


def _check_window(window, framing) -> None:
    from ..data._positives import parse_window
    if window is not None:
        if not (isinstance(window, (tuple, list)) and len(window) == 2
                and all(isinstance(side, (int, np.integer)) and not isinstance(side, bool)
                        for side in window)):
            raise FacedetectError(f"window must be two integer sides, got {window!r}")
        parse_window(f"{window[0]}x{window[1]}")   # sides and pool size, as --window
    check_field("framing", framing)
