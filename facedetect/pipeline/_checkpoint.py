"""Checkpoints: the exact state of a training run, written atomically.

A run is a sequence of stages (boosting, then mining hard negatives, then boosting again).
Its checkpoint is a JSON file with the settings, the stage, the boosting state and the
mining progress, and beside it ``<checkpoint>.<digest>.npz`` with the windows mined so far,
named by their SHA-256, which the JSON records. The windows are written first under their
own name and the JSON replaced after: a kill at any instant leaves a JSON whose windows are
there (the older pair until the new JSON lands), and the windows no JSON names are removed
once it has. Floats are written with their shortest round-trip
representation, so a resumed run continues from bit-identical weights and produces the
model an uninterrupted run would.
"""

from __future__ import annotations

import glob
import hashlib
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._utils.atomic import atomic_write_bytes, atomic_write_text
from ..errors import FacedetectError
from .._utils.files import read_bounded
from ..modelfile._io import digest, parse_json
from ..modelfile._fields import is_finite
from ..training._boosting import TrainingState
from ._bootstrap import MINING_PYRAMID, MiningState

FORMAT = "facedetect-checkpoint"
# 3: the JSON carries its own SHA-256; 4: the windows file named by digest; 5: the training
# windows stored faces first, the later stages' bins at the first stage's edges
VERSION = 5
READABLE_VERSIONS = (5,)
MAX_CHECKPOINT_BYTES = 2 ** 30   # the JSON: weights of up to ~50 million windows
MAX_WINDOWS_BYTES = 2 ** 33      # mined windows: 20 rounds x 10^6 windows of 19x19 bytes


@dataclass
class RunState:
    """Where a training run stands."""

    stage: int = 0
    extra: np.ndarray = field(default_factory=lambda: np.empty((0, 19, 19), np.uint8))
    boosting: TrainingState | None = None   # this stage's boosting, finished or not
    mining: MiningState | None = None       # set once this stage's boosting is done
    # Seconds the run had spent when this state was saved, over every resume: a resumed
    # run's model records the whole training's time, not its last part's.
    seconds: float = 0.0


def _windows_path(path: Path, sha256: str | None = None) -> Path:
    """The windows file of checkpoint ``path``: named by its digest (versions 4 and 5), or
    ``<checkpoint>.npz`` (version 3)."""
    return Path(f"{path}.{sha256[:16]}.npz" if sha256 else f"{path}.npz")


def _named_digest(document) -> str | None:
    """The digest a version-4 or 5 checkpoint names its windows by (None: version 3, or no
    digest a file name may be made of)."""
    if not isinstance(document, dict) or document.get("version") not in (4, 5):
        return None
    sha256 = document.get("windows_sha256")
    ok = isinstance(sha256, str) and len(sha256) == 64 and all(
        c in "0123456789abcdef" for c in sha256)
    return sha256 if ok else None


def _windows_files(path: Path) -> list[Path]:
    """Every windows file of checkpoint ``path``, of either version."""
    import glob
    return [Path(p) for p in glob.glob(glob.escape(str(path)) + ".*npz")
            if Path(p).name.count(".npz") == 1]


# The last windows file written, by checkpoint: (path, extra, mined windows, digest). A
# stage's boosting saves its checkpoint every few rounds with the same windows; they are
# packed and hashed once (the arrays are never changed in place, only replaced).
_LAST_WINDOWS: list = [None]


def _saved_windows(path: Path, run: RunState) -> str:
    """The digest of the run's windows, written beside ``path`` unless they are there."""
    mined_parts = list(run.mining.windows) if run.mining else []
    last = _LAST_WINDOWS[0]
    if (last is not None and last[0] == path and last[1] is run.extra
            and len(last[2]) == len(mined_parts)
            and all(a is b for a, b in zip(last[2], mined_parts))
            and _windows_path(path, last[3]).exists()):
        return last[3]
    buffer = io.BytesIO()
    mined = (np.concatenate(mined_parts) if mined_parts
             else np.empty((0, *run.extra.shape[1:]), np.uint8))
    np.savez(buffer, extra=run.extra, mined=mined)
    payload = buffer.getvalue()
    sha256 = hashlib.sha256(payload).hexdigest()
    windows = _windows_path(path, sha256)
    if not windows.exists():
        atomic_write_bytes(windows, payload)
    _LAST_WINDOWS[0] = (path, run.extra, mined_parts, sha256)
    return sha256


def save_checkpoint(path, run: RunState, config: dict) -> Path:
    """Write the run's checkpoint (and its windows, where new); a write that fails (a full
    disk) leaves the checkpoint as it was, nothing beside it, and names the file."""
    path = Path(path)
    before = set(_windows_files(path))
    target = path.with_name(path.name + ".<digest>.npz")
    try:
        sha256 = _saved_windows(path, run)
        target = path
        _write_checkpoint(path, run, config, sha256)
    except OSError as error:
        for leftover in set(_windows_files(path)) - before:   # windows no JSON names
            leftover.unlink(missing_ok=True)
        _LAST_WINDOWS[0] = None
        raise FacedetectError(f"{target}: cannot write the checkpoint "
                              f"({error.strerror or error})") from None
    return path


def _write_checkpoint(path: Path, run: RunState, config: dict, sha256: str) -> None:
    windows = _windows_path(path, sha256)
    state = run.boosting
    document = {"format": FORMAT, "version": VERSION, "config": config, "stage": run.stage,
                "pyramid": MINING_PYRAMID, "windows_sha256": sha256,
                "seconds": round(float(run.seconds), 3),
                "boosting": None if state is None else {
                    "weights": state.weights.tolist(), "log_acc_pos": state.log_acc_pos,
                    "log_acc_neg": state.log_acc_neg, "stumps": state.stumps,
                    "alphas": state.alphas, "history": state.history,
                    "finished": state.finished},
                "mining": None if run.mining is None else {
                    "position": run.mining.position, "skipped": run.mining.skipped,
                    "scanned": run.mining.scanned, "accepted": run.mining.accepted}}
    # The canonical text the digest is of, written with the digest as its last field: one
    # serialisation of the weights instead of two.
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), allow_nan=False)
    sealed = hashlib.sha256(canonical.encode()).hexdigest()
    atomic_write_text(path, canonical[:-1] + f',"sha256":"{sealed}"}}')
    for other in _windows_files(path):   # only now that the JSON names the new windows
        if other != windows:
            other.unlink(missing_ok=True)


def remove_checkpoint(path) -> None:
    """The checkpoint, its windows, and the temporary files a killed write of either left
    (the run holds its output's lock: no other writer's are there)."""
    path = Path(path)
    path.unlink(missing_ok=True)
    for windows in _windows_files(path):
        windows.unlink(missing_ok=True)
    for temp in path.parent.glob(f".{glob.escape(path.name)}*.tmp"):
        temp.unlink(missing_ok=True)


# What a run did before a field existed: no tilted nor channel features, and faces
# jittered up to 0.75 px.
LEGACY_FIELDS = {"tilted": False, "channels": False, "jitter_shift": 0.75}


def saved_config(saved, config: dict):
    """A checkpoint's config as this version writes ``config``: one saved before a field
    of :data:`LEGACY_FIELDS` existed trained as it says."""
    if isinstance(saved, dict):
        for name, value in LEGACY_FIELDS.items():
            if name in config and name not in saved:
                saved = {**saved, name: value}
    return saved


def _differences(saved: dict, config: dict) -> list[str]:
    saved = saved_config(saved, config)
    return sorted(k for k in set(saved) | set(config)
                  if k != "rounds" and saved.get(k) != config.get(k))


def load_checkpoint(path, config: dict) -> RunState:
    """The saved run, after checking it belongs to a run with this ``config``."""
    path = Path(path)
    try:
        document = parse_json(read_bounded(path, MAX_CHECKPOINT_BYTES, "a checkpoint")
                              .decode("utf-8"), path, "checkpoint", max_values=None)
        windows = _windows_path(path, _named_digest(document))
        payload = read_bounded(windows, MAX_WINDOWS_BYTES, "a checkpoint's windows")
    except FileNotFoundError as error:
        raise FacedetectError(f"{error.filename}: no checkpoint to resume from") from None
    except (OSError, UnicodeDecodeError) as error:
        raise FacedetectError(f"{path}: unreadable checkpoint ({error})") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT \
            or document.get("version") not in (3, 4, *READABLE_VERSIONS):
        raise FacedetectError(f"{path}: not a facedetect checkpoint of version {VERSION}")
    if document.get("version") not in READABLE_VERSIONS:
        # Its later stages binned every window anew, and its weights are in another order.
        raise FacedetectError(f"{path}: a checkpoint of version {document.get('version')}, "
                              "from before the features were computed once a run; train "
                              "again without --resume")
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
                              f"({', '.join(different)}); train again without --resume"
                              + _feature_hint(different, saved_config(
                                  document.get("config") or {}, config)))
    saved_rounds = (document.get("config") or {}).get("rounds")
    if (document.get("stage") or document.get("mining")) and saved_rounds != config.get("rounds"):
        # Earlier stages mined with a model of the saved length: another length is another run.
        raise FacedetectError(f"{path}: the checkpoint is past its first stage, which ran "
                              f"{saved_rounds} rounds; resume with --rounds {saved_rounds} "
                              "or train again without --resume")
    if hashlib.sha256(payload).hexdigest() != document.get("windows_sha256"):
        raise FacedetectError(f"{windows}: does not match its checkpoint "
                              "(damaged or from another run)")
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as arrays:
            extra, mined = arrays["extra"], arrays["mined"]
        seconds = document.get("seconds", 0.0)   # absent from older checkpoints
        return RunState(int(document["stage"]), extra, _boosting(document["boosting"]),
                        _mining(document["mining"], mined),
                        float(seconds) if is_finite(seconds, 0.0, 1e9) else 0.0)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise FacedetectError(f"{path}: damaged checkpoint ({str(error)[:80]})") from None


# The settings a run does not resolve further (window, framing and augmentation may be
# filled in or switched off by what data is found): a checkpoint that differs in one of
# them is refused before the data is read.
SETTLED = ("cost", "algorithm", "selection", "holdout", "balanced", "seed", "mirror", "jitter",
           "calibration_split", "prior", "calibration", "threshold_rule", "exact",
           "max_features", "bootstrap_rounds", "bootstrap_limit", "bootstrap_threshold")


def check_resumable(path, config: dict) -> None:
    """Refuse at once a ``--resume`` whose settings contradict the checkpoint's (the full
    check, fingerprints included, runs when the checkpoint is loaded); a missing or
    unreadable checkpoint is left to that check."""
    try:
        document = parse_json(read_bounded(Path(path), MAX_CHECKPOINT_BYTES, "a checkpoint")
                              .decode("utf-8"), path, "checkpoint", max_values=None)
    except (OSError, UnicodeDecodeError, FacedetectError):
        return
    saved = document.get("config") if isinstance(document, dict) else None
    if not isinstance(saved, dict):
        return
    different = sorted(k for k in SETTLED if k in saved and saved.get(k) != config.get(k))
    if different:
        raise FacedetectError(f"{path}: checkpoint was made with different settings "
                              f"({', '.join(different)}); train again without --resume")


def _feature_hint(different: list[str], saved: dict) -> str:
    """How to resume a run whose feature pool or posterised share the recipe now chooses
    otherwise (a run saved before channel features joined the recipe trained without
    them; one saved before the 2% share, with ``posterize`` 0)."""
    flags = [f"--{'' if saved.get(name) else 'no-'}{name}" for name in ("tilted", "channels")
             if name in different and isinstance(saved.get(name), bool)]
    if "posterize" in different and isinstance(saved.get("posterize"), float):
        flags.append(f"--posterize {saved['posterize']:g}")
    return f", or resume with {' '.join(flags)} as it was made" if flags else ""


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
                       [str(s) for s in saved["skipped"]], int(saved.get("scanned", 0)),
                       int(saved.get("accepted", 0)))
