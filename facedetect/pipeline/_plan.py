"""A training run resolved once: the settings with the window and framing filled in, and
the data found, checked and split (:class:`TrainPlan`). ``train_detector`` and
``train-detector`` both make one with :func:`plan_training` and run it, so that nothing is
resolved twice; the command line only parses the flags and prints.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..data import load_cbcl
from ..errors import FacedetectError, InterruptedRun, InvalidParameter
from ._bootstrap import NegativeSet
from ._config import (TrainConfig, calibration_indices, check_config, check_data,
                     resolved_window, split_indices, trains_cbcl_faces)

__all__ = ["FIND", "TrainPlan", "plan_training"]

FIND = "find"   # look where the command looks (flag, variable, ./data/, the user cache)


@dataclass(frozen=True)
class TrainPlan:
    """What a training run is, resolved once.

    Attributes
    ----------
    config : TrainConfig
        Checked, its window and framing filled in, grain and posterisation off where they
        cannot apply (without faces from the wild or mining).
    cbcl : CBCLData
        The CBCL windows.
    faces : WildFaces or None
        Faces from the wild.
    negatives : NegativeSet or None
        Face-free pictures to mine (None without bootstrapping).
    train, held, calibration : arrays
        Indices of the CBCL windows boosted on, held out, and kept for the window
        operating point.

    See Also
    --------
    plan_training : what builds it.

    Examples
    --------
    >>> from facedetect.data import make_toy_windows
    >>> plan = plan_training(TrainConfig(bootstrap_rounds=0), make_toy_windows(),
    ...                      faces=None)
    >>> plan.config.window, len(plan.train) + len(plan.held) + len(plan.calibration)
    ((19, 19), 100)
    """

    config: TrainConfig
    cbcl: object
    faces: object
    negatives: NegativeSet | None
    train: np.ndarray
    held: np.ndarray
    calibration: np.ndarray
    # The config as it was checked: a config changed since (it is a mutable object) is
    # checked again before the run fits its estimators without their own checks.
    checked: dict | None = field(default=None, repr=False, compare=False)

    def is_checked(self) -> bool:
        """Whether ``config`` is still the configuration the plan checked."""
        return self.checked is not None and self.config.as_dict() == self.checked

    def faces_line(self) -> str:
        """What the run does with the faces from the wild, in one line."""
        if self.faces is None:
            return "faces from the wild: none; training on CBCL's faces only"
        from ..data._wild_faces import heldout_mask
        held = int(heldout_mask(self.faces.groups).sum())
        joined = "join CBCL's faces"
        if not trains_cbcl_faces(self.config):
            width, height = self.config.window
            joined = (f"train the {width}x{height} window with CBCL's non-faces (CBCL's "
                      "faces, cut tighter, only measure; the next 5% of the wild subjects "
                      "calibrate)")
        return (f"faces from the wild: {len(self.faces):,} faces from {self.faces.source} "
                f"({held:,} held out) {joined}; --recipe cbcl trains on CBCL's only")


    def negatives_line(self) -> str:
        """Which face-free pictures the run mines and calibrates on, in one line."""
        if self.negatives is None:
            return "face-free pictures: none (no bootstrapping)"
        return (f"face-free pictures: {len(self.negatives.mining):,} to mine and "
                f"{len(self.negatives.calibration):,} to calibrate from "
                f"{self.negatives.source}")


# An interrupt before this run's first checkpoint: it saved nothing, and the message says
# so (a later one says where its checkpoint is; a checkpoint an earlier run left is kept).
BEFORE_TRAINING = ("interrupted while {what}, before training started: this run saved "
                   "nothing; run the same command again")


def plan_training(config: TrainConfig | None = None, data=None, *, faces=FIND,
                  negatives=FIND, warn=None, progress: bool = False,
                  settings_checked: bool = False) -> TrainPlan:
    """Resolve a run: check ``config``, find and check the data, fill in the window and
    split the CBCL windows. Every refusal a run can make before its work is made here.

    Parameters
    ----------
    config : TrainConfig, optional
        Default: the recipe, ``TrainConfig()``.
    data, faces, negatives
        As :func:`~facedetect.pipeline._train.train_detector` takes them.
    warn : callable, optional
        Takes warning lines (default: stderr).
    progress : bool
        A progress bar while the faces from the wild are read.
    settings_checked : bool
        ``config`` was checked just now by the caller (the command checks the settings
        before it looks for the data): checked once, not twice.

    Returns
    -------
    TrainPlan

    Raises
    ------
    FacedetectError
        Bad settings (an ``InvalidParameter``), missing or unusable data, a split that
        leaves a class out.

    See Also
    --------
    facedetect.train_detector : takes the plan or a config.

    Examples
    --------
    >>> from facedetect.data import make_toy_windows
    >>> plan = plan_training(TrainConfig(bootstrap_rounds=0, holdout=0.5),
    ...                      make_toy_windows(), faces=None)
    >>> plan.faces_line()
    "faces from the wild: none; training on CBCL's faces only"
    >>> len(plan.held)
    50
    """
    config = config if config is not None else TrainConfig()
    if not isinstance(config, TrainConfig):
        raise InvalidParameter(f"config must be a TrainConfig, got {type(config).__name__}",
                               "config")
    if not settings_checked:
        check_config(config)
    warn = warn or (lambda line: print(line, file=sys.stderr))
    try:
        cbcl = _cbcl(data)
        check_data(cbcl)
        # the split first: it needs no window, and a bad one is refused before data is sought
        train, held = split_indices(cbcl.labels, config)
        train, calibration = calibration_indices(cbcl.labels, train, config)
        negatives = _negatives(negatives, config, warn)
        faces = _faces(faces, warn, progress)
    except KeyboardInterrupt:
        raise InterruptedRun(BEFORE_TRAINING.format(what="reading the data")) from None
    config = resolved_window(config, faces is not None)
    if (config.grain or config.posterize) and (faces is None or not config.bootstrap_rounds):
        # Grain and levels go on the wild faces and the mined negatives together: on one
        # side alone they would teach that grain tells faces from non-faces.
        config = replace(config, grain=0.0, posterize=0.0)
    if config.bootstrap_rounds and negatives is None:
        raise FacedetectError("bootstrapping needs negative pictures")
    return TrainPlan(config, cbcl, faces, negatives, train, held, calibration,
                     checked=config.as_dict())


def _cbcl(data):
    """The CBCL windows ``data`` names: loaded windows as they are, a folder or archive
    read, None found where the command looks."""
    if data is None or isinstance(data, (str, os.PathLike)):
        return load_cbcl(data)
    if not (hasattr(data, "images") and hasattr(data, "labels")):
        raise InvalidParameter("data must be CBCL windows (facedetect.data.load_cbcl), a "
                               f"folder, an archive or None, got {type(data).__name__}",
                               "data")
    return data


def _negatives(negatives, config: TrainConfig, warn):
    """The negative pictures ``negatives`` names (see :func:`train_detector`)."""
    if isinstance(negatives, list):
        return NegativeSet(negatives, [], "pictures given", "")
    if isinstance(negatives, str) and negatives == FIND:
        return NegativeSet.find(None, warn=warn) if config.bootstrap_rounds else None
    if isinstance(negatives, (str, Path)):
        return NegativeSet.find(negatives, warn=warn)
    return negatives


def _faces(faces, warn, progress: bool = False):
    """The faces from the wild ``faces`` names (see :func:`train_detector`)."""
    from ..data._wild_faces import find_faces_folder, load_wild_faces
    if isinstance(faces, str) and faces == FIND:
        folder = find_faces_folder(None)
        return (load_wild_faces(folder, warn=warn, progress=progress)
                if folder is not None else None)
    if isinstance(faces, (str, Path)):
        return load_wild_faces(find_faces_folder(faces), warn=warn, progress=progress)
    return faces
