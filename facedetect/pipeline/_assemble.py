"""A trained estimator becomes a detector model: its document, operating points, rejection.

The document (:mod:`facedetect.modelfile._io`) is the one form of a model. Here the estimator's
stumps get their Haar rectangles and the training record, the window operating point comes
from the calibration windows, learnt rejection from the training faces, and the image
operating point from the calibration negative pictures
(:mod:`facedetect.detector._calibrate`).
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from ..detector._calibrate import calibrate
from ..detector._model import HaarDetectorModel
from ..modelfile._detection import detection_section
from ..modelfile._schema import WILD_CALIBRATION
from .._utils.interrupts import terminate_as_interrupt
from ..training._boosting import BoostedStumps
from ..training._model_io import model_document
from ..training._operating_point import choose_operating_point
from ._config import THRESHOLD_RULES, TrainConfig


class Split(NamedTuple):
    """Indices into the CBCL windows: boosted on, held out, and choosing the threshold."""

    train: np.ndarray
    held: np.ndarray
    calibration: np.ndarray


def haar_detector_model(estimator: BoostedStumps, pool, training: dict | None = None,
                        cost=None):
    """The scanning model of an estimator fitted on Haar features of ``pool``: its file
    document (stumps, each stump's rectangles, the detection section at the raw threshold
    0 until an operating point is set, metadata) read as a
    :class:`~facedetect.detector._model.HaarDetectorModel`. The document is the one form of
    a model; the detector only reads it."""
    return HaarDetectorModel.from_document(model_document(
        estimator, haar_features(estimator.features_, pool), training, cost=cost,
        detection=detection_section((pool.width, pool.height), framing_of(training), 0.0)))


def framing_of(training: dict | None) -> float | None:
    """The face framing a training record's config sets (None: CBCL's)."""
    return ((training or {}).get("config") or {}).get("framing")


def haar_features(pool_index, pool) -> dict:
    """A model file's ``features`` section: each stump's rectangles in ``pool`` (and which
    are tilted, where any is, and which gradient channel each sums over, where any is a
    channel feature)."""
    rects = [pool.feature(int(f)) for f in pool_index]
    section = {"kind": "haar",
               "normalization": "opencv-variance", "pool_index": [int(f) for f in pool_index],
               "rects": [[[x, y, w, h, wt] for x, y, w, h, wt in r] for r in rects]}
    tilted = [int(pool.tilted[int(f)]) for f in pool_index]
    if any(tilted):   # files of the basic pool stay as they were
        section["tilted"] = tilted
    channels = [int(pool.channels[int(f)]) for f in pool_index]
    if any(c >= 0 for c in channels):
        section["channels"] = channels
    return section


def _window_operating_point(model: HaarDetectorModel, images, labels,
                           config: TrainConfig, faces=None) -> dict:
    """The operating point on the calibration windows, as the model file stores it. With
    ``faces`` (windows of held-back faces from the wild), those are the calibration faces
    and CBCL's calibration non-faces the non-faces; the prior stays CBCL's calibration
    split's unless one is given, so that the faces' count does not move the threshold."""
    prior = config.prior
    if faces is not None:
        prior = float(np.mean(labels == 1)) if prior is None else prior
        images = np.concatenate([images[labels == 0], faces])
        labels = np.concatenate([np.zeros(int((labels == 0).sum()), labels.dtype),
                                 np.ones(len(faces), labels.dtype)])
    point = choose_operating_point(model.decision_function(images), labels == 1, config.cost,
                                   prior=prior, calibration=config.calibration,
                                   rule=THRESHOLD_RULES[config.threshold_rule])
    record = dict(point.as_dict(), raw_threshold=0.0, applies_to="windows")
    if faces is not None:
        record["calibration_faces"] = WILD_CALIBRATION
    return record


def assemble_model(run, estimator, state, cbcl, split: Split, base,
                   calibration_faces=None) -> HaarDetectorModel:
    config = run.config
    train, held, calibration = split
    training = {
        "config": run.run_config, "data_source": str(cbcl.source),
        "train_size": int(len(train)), "heldout_names": [cbcl.names[i] for i in held],
        "calibration_size": int(len(calibration)),
        "rounds": estimator.n_rounds_,
        "storage": "exact" if config.uses_exact else "compact",
        "diagnostics": {"roots": estimator.roots_solved_.tolist(),
                        "e_pos": estimator.errors_[:, 0].tolist(),
                        "e_neg": estimator.errors_[:, 1].tolist(),
                        "bound": estimator.bounds_.tolist(),
                        "seconds": estimator.round_seconds_.round(4).tolist()},
        "feature_seconds": round(run.feature_seconds, 3),
    }
    if config.bootstrap_rounds:
        training["bootstrap"] = {"rounds": config.bootstrap_rounds,
                                 "limit": config.bootstrap_limit,
                                 "threshold": config.bootstrap_threshold,
                                 "negatives": run.negatives.source,
                                 "stages": run.stages,
                                 "extra_negatives": int(len(state.extra))}
    model = haar_detector_model(estimator, run.pool, training, cost=config.cost)
    if len(calibration):
        point_start = time.perf_counter()
        point = _window_operating_point(model, cbcl.images[calibration],
                                       cbcl.labels[calibration], config, calibration_faces)
        model = model.with_sections(
            operating_point=point, detection={"threshold": point["threshold"]},
            training={"operating_point_seconds": round(time.perf_counter() - point_start, 3)})
    # Learnt rejection thresholds for the scanner, from the faces it was trained on only.
    base_images, base_labels = base
    return model.with_rejection(base_images[base_labels == 1])


def with_image_point(run, model, state, held_faces, target, train_faces=None):
    """``model`` with its image operating point from the calibration pictures and the
    held-out faces, and with soft rejection learnt from ``train_faces`` where given
    (:func:`facedetect.detector._calibrate.calibrate`, as ``facedetect calibrate``)."""
    try:
        with terminate_as_interrupt():
            # the staged export's point (export-opencv) where the faces set its levels
            model = calibrate(model, run.negatives.calibration, target, faces=held_faces,
                              train_faces=train_faces,
                              opencv=train_faces is not None and len(train_faces) > 0,
                              progress=run.progress, warn=run.warn)
    except KeyboardInterrupt:
        raise run.interrupted(state, "while choosing the image operating point") from None
    chosen = model.calibration["image"]
    if run.progress:
        run.log(f"image operating point: threshold {model.detection['threshold']:.3g}, "
                f"{chosen['false_alarms_per_megapixel']:.3g} false alarms/Mpx on "
                f"{chosen['source']}")
    return model
