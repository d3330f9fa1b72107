"""Checkpoints: the exact state of a training run, as JSON, written atomically.

Floats are written with their shortest round-trip representation, so a resumed run
continues from bit-identical weights and produces the model an uninterrupted run would.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..atomic import atomic_write_text
from ..errors import FacedetectError
from .boosting import TrainingState

FORMAT = "facedetect-checkpoint"


def save_checkpoint(path, state: TrainingState, config: dict) -> Path:
    document = {"format": FORMAT, "version": 1, "config": config,
                "weights": state.weights.tolist(), "log_acc_pos": state.log_acc_pos,
                "log_acc_neg": state.log_acc_neg, "stumps": state.stumps,
                "alphas": state.alphas, "history": state.history, "finished": state.finished}
    return atomic_write_text(path, json.dumps(document))


def load_checkpoint(path, config: dict) -> TrainingState:
    """The saved state, after checking it belongs to a run with this ``config``."""
    path = Path(path)
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError:
        raise FacedetectError(f"{path}: no checkpoint to resume from") from None
    except (OSError, ValueError) as error:
        raise FacedetectError(f"{path}: unreadable checkpoint ({error})") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise FacedetectError(f"{path}: not a facedetect checkpoint")
    saved = document.get("config", {})
    different = sorted(k for k in set(saved) | set(config)
                       if k != "rounds" and saved.get(k) != config.get(k))
    if different:
        raise FacedetectError(f"{path}: checkpoint was made with different settings "
                              f"({', '.join(different)}); train again without --resume")
    try:
        return TrainingState(np.asarray(document["weights"], dtype=np.float64),
                             float(document["log_acc_pos"]), float(document["log_acc_neg"]),
                             [tuple(s) for s in document["stumps"]],
                             [float(a) for a in document["alphas"]],
                             list(document["history"]), bool(document["finished"]))
    except (KeyError, TypeError, ValueError) as error:
        raise FacedetectError(f"{path}: damaged checkpoint ({error})") from None
