"""A verifier's training settings: plain data, read by ``train-verifier --help`` without
numpy (the training itself: :mod:`._verifier`)."""

from __future__ import annotations

import dataclasses

from ..errors import FacedetectError

__all__ = ["ROOMY_SOURCES", "VerifierConfig"]

ROOMY_SOURCES = ("mtfl", "mtfl-sun2013", "caltech-webfaces")   # crops >= 3 eye distances


@dataclasses.dataclass(frozen=True)
class VerifierConfig:
    """How a verifier is trained (``train-verifier``'s flags; the defaults measured in
    ``benchmarks/results/verifier.md``)."""

    propose_at: float = 15.0
    # The proposer's pyramid step (None: the model's). The verifier frames each proposal
    # again, so a coarser pyramid costs it little: 1.25 found as many calibration faces as
    # 1.1 in 0.46x the CPU (benchmarks/results/proposer_pyramid.md).
    propose_scale: float | None = 1.25
    mine_at: float = 8.0
    # The patch's side in window sides: 2.0 and 2.5 found 0.9806 of the calibration faces
    # at 0.1 false alarms per megapixel, 1.4 (the default before) 0.9749 and 1.7 0.9760
    # (benchmarks/results/verifier_levers.md).
    context: float = 2.0
    size: int = 40
    # More rounds found more calibration faces at every target, up to 3,000, the most
    # tried (benchmarks/results/verifier_levers.md).
    rounds: int = 3000
    features: int = 40_000
    # Channel features (gradient magnitude and six orientations, as the one-stage faces
    # recipe's) beside the Haar features of the pool the features are drawn from.
    channels: bool = False
    # Searched a round: a seeded subset of at most this many (None: all). At 3,000 rounds,
    # 5,000 found as many calibration faces as 10,000 within the seed noise in 5.2 minutes
    # against 8.4: the recipe trains in 1.41x its one-stage phases' time, not 1.61x
    # (benchmarks/results/training_verified_mf5k.md; the bound is 1.5x).
    max_features: int | None = 5_000
    per_picture: int = 40
    # Hard-negative passes: each adds, from every mining picture, the per_picture windows
    # the verifier trained so far scores highest, and trains it again.
    bootstrap: int = 0
    weights: tuple = (0.5, 1.0, 2.0, 4.0)
    # False alarms per megapixel of the calibration pictures the joint score is chosen at
    # (None: the model's image operating point's target).
    target: float | None = 0.1
    seed: int = 0
    # Bytes for the patches' features (beyond it they spill to a temporary file): None
    # takes train-detector's default, half the memory available. Not a model setting: the
    # record leaves it out, as the model is the same either way.
    memory: int | None = None

    def validate(self) -> None:
        if not self.mine_at < self.propose_at:
            raise FacedetectError("mine_at must be below propose_at: the negatives are "
                                  "windows the proposer nearly raises")
        if self.propose_scale is not None and not 1.01 <= self.propose_scale <= 10:
            raise FacedetectError("propose_scale must be a pyramid step from 1.01 to 10")
        if not 0 <= self.bootstrap <= 5:
            raise FacedetectError("bootstrap must be 0 to 5 hard-negative passes")
        if self.max_features is not None and self.max_features < 1:
            raise FacedetectError("max_features must be at least 1")
        if self.target is not None and not 0 < self.target <= 1e6:   # nan fails too
            raise FacedetectError("target must be a rate of false alarms per megapixel "
                                  "above 0 and at most 1e6, or None")
        if not 1.0 <= self.context <= 4.0 or not 8 <= self.size <= 128:
            raise FacedetectError("context must be 1 to 4 window sides and size 8 to 128")
