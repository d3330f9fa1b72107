"""Held-out evaluation of a trained detector on the CBCL windows it never saw."""

from __future__ import annotations

import numpy as np

from ..data._cbcl import framed_windows
from ..errors import FacedetectError
from ..metrics import binary_rates, normalized_expected_cost, probability_cost, roc_points


def _evaluation_indices(model, data, split: str = "heldout"):
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
    unknown = [name for name in training["heldout_names"] if name not in position]
    if unknown:
        raise FacedetectError(f"{data.source}: the model's held-out window {unknown[0]!r} is "
                              "not in this data; its held-out split does not apply")
    held = np.array(sorted(position[n] for n in training["heldout_names"]), dtype=np.intp)
    if split == "heldout":
        if held.size == 0:
            raise FacedetectError("the model was trained with holdout 0: it has no held-out "
                                  "windows (evaluate split 'train' for the training error)")
        return held
    if split == "train":
        from ._config import TrainConfig, split_indices
        fields = {k: v for k, v in config.items() if k in TrainConfig.__dataclass_fields__}
        try:
            fields["cost"] = tuple(fields.get("cost", (1, 1)))
            train, _ = split_indices(data.labels, TrainConfig(**fields))
        except (TypeError, ValueError):
            raise FacedetectError("the model's recorded training settings are damaged; its "
                                  "training split cannot be rebuilt") from None
        return train
    raise FacedetectError(f"unknown split {split!r}; use heldout or train")


def evaluate(model, data, split: str = "heldout", threshold: float | None = None,
             n_roc_points: int = 21) -> dict:
    """FN/FP/CE/NEC at the model's operating point (or ``threshold``) and at the raw 0.

    The operating point is the one the model recorded at training; a model without one
    decides at the raw threshold 0 and the report says so. NEC is at the operating
    point's cost and prior where there is one, else at the model's cost and the data's
    priors.

    Examples
    --------
    >>> from facedetect.data import make_toy_windows
    >>> from facedetect.pipeline._train import TrainConfig, train_detector
    >>> data = make_toy_windows()
    >>> config = TrainConfig(cost=(1, 10), rounds=3, jitter=0, mirror=False, bootstrap_rounds=0)
    >>> model = train_detector(config, data, faces=None, progress=False).model
    >>> report = evaluate(model, data)
    >>> report["split"], report["n_stumps"], report["threshold_source"]
    ('heldout', 1, 'operating point')
    """
    indices = _evaluation_indices(model, data, split)
    # A model whose window frames more than CBCL's scores CBCL's windows framed as it was
    # trained to see them (its calibration windows were the same).
    framing = model.framing
    scores = model.decision_function(framed_windows(
        data.images[indices], data.labels[indices], tuple(model.window), framing))
    labels = data.labels[indices] == 1
    point = model.operating_point
    cost = tuple(point["cost"]) if point else tuple(model.cost)
    if threshold is None:
        threshold = model.window_threshold
        source = ("operating point" if point else "the cascade's last stage" if model.stages
                  else "raw (no operating point recorded)")
    else:
        source = "raw" if threshold == 0 else "given"
    report = {"split": split, "threshold": float(threshold), "threshold_source": source,
              "operating_point": point, "cost": list(cost), "n_stumps": model.n_stumps,
              **_rates(labels, scores, threshold, cost, point)}
    report["raw"] = _rates(labels, scores, 0.0, cost, point)
    if point:
        report["at_operating_point"] = _rates(labels, scores, point["threshold"], cost, point)
    report["roc"] = roc_points(labels, scores, n_roc_points)
    return report


def _rates(labels, scores, threshold, cost, point) -> dict:
    rates = binary_rates(labels, scores > threshold).as_dict(cost)
    if point:  # the expected cost at the prior the operating point was chosen for
        pcf = probability_cost(point["prior"], cost)
        rates["nec_at_operating_prior"] = float(normalized_expected_cost(
            rates["false_negative_rate"], rates["false_positive_rate"], pcf))
    return rates
