"""Checkpoints: the exact state of a training run, written atomically.

A run is a sequence of stages (boosting, then mining hard negatives, then boosting again).
Its checkpoint is a JSON file with the settings, the stage, the boosting state and the
mining progress, and beside it ``<checkpoint>.npz`` with the windows mined so far, whose
SHA-256 the JSON records. Floats are written with their shortest round-trip
representation, so a resumed run continues from bit-identical weights and produces the
model an uninterrupted run would.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..atomic import atomic_write_bytes, atomic_write_text
from ..errors import FacedetectError
from ..files import read_bounded
from ..model_file import digest, parse_json
from ..training.boosting import TrainingState
from .bootstrap import MINING_PYRAMID, MiningState

FORMAT = "facedetect-checkpoint"
VERSION = 3   # 3: the JSON carries its own SHA-256
MAX_CHECKPOINT_BYTES = 2 ** 30   # the JSON: weights of up to ~50 million windows
MAX_WINDOWS_BYTES = 2 ** 33      # mined windows: 20 rounds x 10^6 windows of 19x19 bytes


@dataclass
class RunState:
    """Where a training run stands."""

    stage: int = 0
    extra: np.ndarray = field(default_factory=lambda: np.empty((0, 19, 19), np.uint8))
    boosting: TrainingState | None = None   # this stage's boosting, finished or not
    mining: MiningState | None = None       # set once this stage's boosting is done


def _windows_path(path: Path) -> Path:
    return Path(str(path) + ".npz")


def save_checkpoint(path, run: RunState, config: dict) -> Path:
    path = Path(path)
    buffer = io.BytesIO()
    mined = (np.concatenate(run.mining.windows) if run.mining and run.mining.windows
             else np.empty((0, *run.extra.shape[1:]), np.uint8))
    np.savez(buffer, extra=run.extra, mined=mined)
    payload = buffer.getvalue()
    atomic_write_bytes(_windows_path(path), payload)
    state = run.boosting
    document = {"format": FORMAT, "version": VERSION, "config": config, "stage": run.stage,
                "pyramid": MINING_PYRAMID,
                "windows_sha256": hashlib.sha256(payload).hexdigest(),
                "boosting": None if state is None else {
                    "weights": state.weights.tolist(), "log_acc_pos": state.log_acc_pos,
                    "log_acc_neg": state.log_acc_neg, "stumps": state.stumps,
                    "alphas": state.alphas, "history": state.history,
                    "finished": state.finished},
                "mining": None if run.mining is None else {
                    "position": run.mining.position, "skipped": run.mining.skipped}}
    document["sha256"] = digest(document)
    return atomic_write_text(path, json.dumps(document, allow_nan=False))


def remove_checkpoint(path) -> None:
    Path(path).unlink(missing_ok=True)
    _windows_path(Path(path)).unlink(missing_ok=True)


def _differences(saved: dict, config: dict) -> list[str]:
    return sorted(k for k in set(saved) | set(config)
                  if k != "rounds" and saved.get(k) != config.get(k))


def load_checkpoint(path, config: dict) -> RunState:
    """The saved run, after checking it belongs to a run with this ``config``."""
    path = Path(path)
    try:
        document = parse_json(read_bounded(path, MAX_CHECKPOINT_BYTES, "a checkpoint")
                              .decode("utf-8"), path, "checkpoint")
        payload = read_bounded(_windows_path(path), MAX_WINDOWS_BYTES, "a checkpoint's windows")
    except FileNotFoundError as error:
        raise FacedetectError(f"{error.filename}: no checkpoint to resume from") from None
    except (OSError, UnicodeDecodeError) as error:
        raise FacedetectError(f"{path}: unreadable checkpoint ({error})") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT \
            or document.get("version") != VERSION:
        raise FacedetectError(f"{path}: not a facedetect checkpoint of version {VERSION}")
    if document.get("sha256") != digest(document):
        raise FacedetectError(f"{path}: checksum mismatch: the checkpoint was modified or "
                              "damaged; train again without --resume")
    if document.get("pyramid", "linear") != MINING_PYRAMID:
        # Written before mining used area-averaged levels: its negatives are of another kind.
        raise FacedetectError(f"{path}: the checkpoint mined bilinear pyramid levels, this "
                              "version mines area-averaged ones; train again without --resume")
    different = _differences(document.get("config") or {}, config)
    if "negatives_sha256" in different:
        raise FacedetectError(f"{path}: the negatives folder changed since the checkpoint "
                              "(pictures added, removed or resized); train again without "
                              "--resume")
    if "faces_sha256" in different:
        raise FacedetectError(f"{path}: the faces folder changed since the checkpoint (faces "
                              "added, removed or edited, or --faces / --no-wild-faces "
                              "changed); train again without --resume")
    if different:
        raise FacedetectError(f"{path}: checkpoint was made with different settings "
                              f"({', '.join(different)}); train again without --resume")
    saved_rounds = (document.get("config") or {}).get("rounds")
    if (document.get("stage") or document.get("mining")) and saved_rounds != config.get("rounds"):
        # Earlier stages mined with a model of the saved length: another length is another run.
        raise FacedetectError(f"{path}: the checkpoint is past its first stage, which ran "
                              f"{saved_rounds} rounds; resume with --rounds {saved_rounds} "
                              "or train again without --resume")
    if hashlib.sha256(payload).hexdigest() != document.get("windows_sha256"):
        raise FacedetectError(f"{_windows_path(path)}: does not match its checkpoint "
                              "(damaged or from another run)")
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as arrays:
            extra, mined = arrays["extra"], arrays["mined"]
        return RunState(int(document["stage"]), extra, _boosting(document["boosting"]),
                        _mining(document["mining"], mined))
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise FacedetectError(f"{path}: damaged checkpoint ({str(error)[:80]})") from None


def _boosting(saved) -> TrainingState | None:
    if saved is None:
        return None
    weights = np.asarray(saved["weights"], dtype=np.float64)
    if weights.ndim != 1 or not (np.isfinite(weights).all() and (weights >= 0).all()) \
            or len(saved["stumps"]) != len(saved["alphas"]) \
            or not all(len(s) == 3 and isinstance(s[0], int) for s in saved["stumps"]):
        raise ValueError("the boosting state is malformed")
    return TrainingState(np.asarray(saved["weights"], dtype=np.float64),
                         float(saved["log_acc_pos"]), float(saved["log_acc_neg"]),
                         [tuple(s) for s in saved["stumps"]],
                         [float(a) for a in saved["alphas"]],
                         list(saved["history"]), bool(saved["finished"]))


def _mining(saved, mined: np.ndarray) -> MiningState | None:
    if saved is None:
        return None
    return MiningState(int(saved["position"]), [mined] if len(mined) else [],
                       [str(s) for s in saved["skipped"]])
