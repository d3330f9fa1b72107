"""Held-out evaluation of a trained detector on the CBCL windows it never saw."""

from __future__ import annotations

import numpy as np

from ..errors import FacedetectError
from ..metrics import binary_rates, roc_points


def evaluation_indices(model, data, split: str = "heldout"):
    """Indices of ``data`` to evaluate on, refusing anything that could leak.

    ``heldout`` uses the file names the model recorded; ``train`` the complement of them
    within the model's training candidates (asked for explicitly). Data that is not what
    the model was trained on is refused.
    """
    training = model.document.get("training") or {}
    config = training.get("config") or {}
    recorded = config.get("data_sha256")
    if recorded is None or "heldout_names" not in training:
        raise FacedetectError("the model records no training split, so held-out windows "
                              "cannot be told apart from training windows; evaluate a model "
                              "made by train-detector")
    if recorded != data.fingerprint():
        raise FacedetectError(f"{data.source}: this is not the data the model was trained on "
                              f"(fingerprint {data.fingerprint()[:12]} vs recorded "
                              f"{recorded[:12]}); its held-out split does not apply")
    position = {name: i for i, name in enumerate(data.names)}
    held = np.array(sorted(position[n] for n in training["heldout_names"]), dtype=np.intp)
    if split == "heldout":
        if held.size == 0:
            raise FacedetectError("the model was trained with --holdout 0: it has no "
                                  "held-out windows (use --split train to see training error)")
        return held
    if split == "train":
        from .pipeline import TrainConfig, split_indices
        fields = {k: v for k, v in config.items() if k in TrainConfig.__dataclass_fields__}
        fields["cost"] = tuple(fields.get("cost", (1, 1)))
        train, _ = split_indices(data.labels, TrainConfig(**fields))
        return train
    raise FacedetectError(f"unknown split {split!r}; use heldout or train")


def evaluate(model, data, split: str = "heldout", threshold: float = 0.0,
             n_roc_points: int = 21) -> dict:
    """FN/FP/CE/NEC at the model's cost and at the data's priors, plus ROC points."""
    indices = evaluation_indices(model, data, split)
    scores = model.decision_function(data.images[indices])
    labels = data.labels[indices] == 1
    rates = binary_rates(labels, scores > threshold)
    return {"split": split, "threshold": threshold, "cost": list(model.cost),
            "n_stumps": model.n_stumps, **rates.as_dict(model.cost),
            "roc": roc_points(labels, scores, n_roc_points)}

