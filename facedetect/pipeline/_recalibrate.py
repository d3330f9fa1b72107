"""The faces a trained model's operating points were chosen with, rebuilt from its
training record, so that ``facedetect calibrate`` chooses them again as training did."""

from __future__ import annotations

import numpy as np

from ..errors import FacedetectError
from ._config import TrainConfig, calibration_indices, split_indices

__all__ = ["recorded_config", "training_faces_of"]


def recorded_config(model) -> TrainConfig:
    """The :class:`TrainConfig` a model's training record holds (refused where it holds
    none, or a damaged one)."""
    record = ((model.document.get("training") or {}).get("config") or {})
    fields = {k: v for k, v in record.items() if k in TrainConfig.__dataclass_fields__}
    if not fields:
        raise FacedetectError("the model records no training settings, so its training "
                              "faces cannot be rebuilt; calibrate it without --faces")
    for name in ("cost", "window"):
        if fields.get(name) is not None:
            fields[name] = tuple(fields[name])
    try:
        return TrainConfig(**fields)
    except (TypeError, ValueError):
        raise FacedetectError("the model's recorded training settings are damaged; its "
                              "training faces cannot be rebuilt") from None


def training_faces_of(model, cbcl, faces) -> tuple[np.ndarray, np.ndarray]:
    """``(held-out faces, training faces)``: the face windows training chose the model's
    image operating point with (:func:`facedetect.detector._calibrate.calibrate`), cut
    again from the CBCL data and the faces from the wild it recorded; data other than the
    model's own is refused."""
    from ._train import _training_faces
    config = recorded_config(model)
    recorded = model.document["training"]["config"]
    if recorded.get("data_sha256") != cbcl.fingerprint():
        raise FacedetectError(f"{cbcl.source}: not the CBCL data the model was trained on; "
                              "its training faces cannot be rebuilt")
    if recorded.get("faces_sha256") != faces.fingerprint:
        raise FacedetectError(f"{faces.source}: not the faces the model was trained on "
                              f"(fingerprint {faces.fingerprint[:12]} vs recorded "
                              f"{str(recorded.get('faces_sha256'))[:12]})")
    train, held = split_indices(cbcl.labels, config)   # as plan_training splits
    train, _ = calibration_indices(cbcl.labels, train, config)
    _, base, held_faces, _ = _training_faces(config, cbcl, faces, train, held)
    return held_faces, base[0][base[1] == 1]
