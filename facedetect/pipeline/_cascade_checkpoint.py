"""A cascade's checkpoint: the model file of its finished stages, plus the fields resuming
reads, each checked by type and range.

The model schema (:mod:`facedetect.modelfile._schema`) checks what detecting with the stages
needs; resuming also reads the training record's per-stage records (``cascade_stages``:
the stopping rules look at their false-alarm rates, the report prints the rest) and
slices the stumps by the stages. A checkpoint edited with a recomputed checksum is
untrusted input like any model file: it resumes, or it is refused with one line naming
the field.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import CheckpointMismatch, FacedetectError, UnusableCheckpoint
from ..modelfile._io import load_document
from ..modelfile._fields import is_finite, is_int, is_list
from ._checkpoint import saved_config

# Each record's fields, and the check each must pass.
_RATE = lambda v: is_finite(v, 0.0, 1.0)                       # noqa: E731
_COUNT = lambda v: is_int(v, 0, 10 ** 9)                       # noqa: E731
_SECONDS = lambda v: is_finite(v, 0.0, 1e9)                    # noqa: E731
RECORD_FIELDS = {
    "stage": lambda v: is_int(v, 1, 10 ** 6),
    "stumps": lambda v: is_int(v, 1, 10 ** 6),
    "cost": lambda v: is_list(v, lambda c: is_finite(c) and c > 0, 2, 2),
    "threshold": is_finite,
    "held_out_hit_rate": _RATE,
    "false_alarm_rate": _RATE,
    "faces": _COUNT,
    "negatives": _COUNT,
    "boosting_seconds": _SECONDS,
    "seconds": _SECONDS,
    "mining_seconds": lambda v: is_finite(v, -1e9, 1e9),
    "peak_rss_gib": _SECONDS,
}


def _fail(path, message: str):
    raise UnusableCheckpoint(f"{path}: invalid cascade checkpoint: {message}; train again "
                             "without --resume", f"invalid cascade checkpoint: {message}")


def _check_records(path, records, stages) -> None:
    """``records`` (``training.cascade_stages``) hold one complete record per stage of
    ``stages``, in order, agreeing with it on stumps and threshold."""
    if not isinstance(records, list) or not records:
        _fail(path, "training.cascade_stages must be a non-empty list of stage records")
    if len(records) != len(stages):
        _fail(path, f"{len(records)} stage records for {len(stages)} stages")
    for number, (record, stage) in enumerate(zip(records, stages), 1):
        if not isinstance(record, dict):
            _fail(path, f"stage record {number} must be an object")
        for name, check in RECORD_FIELDS.items():
            if name not in record:
                _fail(path, f"stage record {number} has no {name}")
            if not check(record[name]):
                _fail(path, f"stage record {number}: {name} is malformed "
                            f"({str(record[name])[:40]!r})")
        if (record["stage"], record["stumps"]) != (number, stage["stumps"]) \
                or record["threshold"] != stage["threshold"]:
            _fail(path, f"stage record {number} does not match stage {number} of the model")


def load_cascade_checkpoint(path, run_config: dict, n_features: int):
    """``(stages, records)`` of the checkpoint at ``path``: ``stages`` as ``(stumps,
    threshold)`` pairs (the stumps as a model file lists them), after checking that it was
    written by a run with ``run_config`` on a pool of ``n_features`` features."""
    path = Path(path)
    if not path.exists():
        raise FacedetectError(f"{path}: no checkpoint to resume from")
    try:
        document = load_document(path)      # the model schema, behind the SHA-256
    except UnusableCheckpoint:
        raise
    except FacedetectError as error:
        raise UnusableCheckpoint(str(error), str(error).removeprefix(f"{path}: ")) from None
    training = document.get("training", {})
    if saved_config(training.get("config"), run_config) != run_config:
        raise CheckpointMismatch(f"{path}: the checkpoint was written with other settings "
                              "or data; train again without --resume")
    stages = document.get("detection", {}).get("stages")
    if not stages:
        _fail(path, "it has no stages")
    if document["n_features"] != n_features:
        _fail(path, f"n_features is {document['n_features']}, the window's pool has "
                    f"{n_features}")
    records = training.get("cascade_stages")
    _check_records(path, records, stages)
    found, begin = [], 0
    for stage in stages:
        found.append((document["stumps"][begin:begin + stage["stumps"]],
                      float(stage["threshold"])))
        begin += stage["stumps"]
    return found, [dict(record) for record in records]
