"""Training a verifier for a one-stage face model: propose with the model at a permissive
threshold, then train a second AdaBoostDB model on what it proposes, with more context.

- **Positives**: on each training crop (held-out and calibration faces kept out) of the
  sources whose crops hold the context (MTFL and Caltech), the proposer's best group that
  holds both eyes, framed as the proposer frames it (its box error kept), and its mirror.
- **Negatives**: windows the model raises at ``mine_at`` (below the proposer's threshold:
  harder than what it proposes) on the mining pictures, at most ``per_picture`` of each.
- **Features**: a seeded ``features`` subset of the Haar pool of the patch (the whole pool
  of a 40x40 patch holds over a million).
- **Operating point**: the weight and threshold at which the calibration pictures (never
  the held-out ones) raise at most ``target`` false alarms per megapixel (None: the
  model's own image target); of the weights, the one that finds most calibration crops.

The detector's side (cutting patches, scoring, the joint score):
:mod:`facedetect.detector._verifier`.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from ..detector._api import Detector
from ..detector._calibrate_scan import soft_levels_at
from ..detector._multiscale import group_detections
from ..detector._verifier import Verifier, context_patches
from ..data._wild_faces import calibration_mask, heldout_mask
from ..errors import FacedetectError
from ..images import read_grey, read_picture
from .._utils.progress import progress_bar
from ._verifier_config import ROOMY_SOURCES, VerifierConfig
from ._wild import crop_recall

__all__ = ["VerifierConfig", "train_verifier"]

def proposer_of(model, train_faces, threshold: float, scale: float | None = None) -> Detector:
    """The scan that proposes: ``model`` at ``threshold``, its soft rejection learnt there
    from its training faces (as ``facedetect calibrate`` learns it), at pyramid step
    ``scale`` (None: the model's)."""
    return Detector(soft_levels_at(model, train_faces, threshold), max_pixels=None,
                    verifier=False, threshold=threshold,
                    **({} if scale is None else {"scale_factor": float(scale)}))


def holds_eyes(boxes: np.ndarray, eyes) -> np.ndarray:
    """Which ``(x, y, w, h)`` boxes hold both eye centres ``(lx, ly, rx, ry)``.

    Examples
    --------
    >>> holds_eyes(np.array([[0, 0, 40, 40], [20, 0, 9, 9]]), [12, 15, 28, 15]).tolist()
    [True, False]
    """
    lx, ly, rx, ry = (float(v) for v in eyes)
    x, y, w, h = np.asarray(boxes, float).reshape(-1, 4).T
    return ((x <= min(lx, rx)) & (max(lx, rx) <= x + w)
            & (y <= min(ly, ry)) & (max(ly, ry) <= y + h))


def positive_patches(proposer: Detector, faces, config: VerifierConfig, bar) -> np.ndarray:
    """Each training crop's best proposal holding both eyes, and its mirror."""
    train = (~heldout_mask(faces.groups) & ~calibration_mask(faces.groups)
             & np.isin(faces.sources, ROOMY_SOURCES))
    patches = []
    for k in bar(np.flatnonzero(train), "verifier positives"):
        found = proposer.find(faces.crops[k])
        good = holds_eyes(found.boxes, faces.eyes[k])
        if good.any():
            pick = np.flatnonzero(good)[np.argmax(found.scores[good])]
            patch = context_patches(faces.crops[k], found.windows[pick], config.context,
                                    config.size)[0]
            patches += [patch, patch[:, ::-1]]
    if not patches:
        raise FacedetectError("the proposer found no training face: no verifier to train")
    return np.stack(patches)


def negative_patches(miner: Detector, pictures, config: VerifierConfig, bar,
                     hardness=None) -> np.ndarray:
    """Windows and groups the model raises at ``mine_at`` on the mining pictures, at
    most ``per_picture`` of each: drawn at random, or with ``hardness(patches) -> scores``
    (a verifier's decision) the ones it scores highest (a bootstrap's hard negatives)."""
    rng = np.random.default_rng(config.seed)
    found = []
    for path in bar(pictures, "verifier negatives"):
        grey = read_grey(path) if not isinstance(path, np.ndarray) else path
        rects, scores, _ = miner.raw_windows(grey)
        if not len(rects):
            continue
        groups = group_detections(rects, scores, float(scores.min()) - 1e-6,
                                  miner.params.min_neighbors)[0]
        windows = np.concatenate([groups.reshape(-1, 4), rects.reshape(-1, 4)])
        if hardness is not None:
            patches = context_patches(grey, windows, config.context, config.size)
            # stable sort: ties keep the scan's order, so the draw is reproducible
            found.append(patches[np.argsort(-hardness(patches), kind="stable")
                                 [:config.per_picture]])
            continue
        if len(windows) > config.per_picture:
            windows = windows[np.sort(rng.choice(len(windows), config.per_picture, False))]
        found.append(context_patches(grey, windows, config.context, config.size))
    if not found:
        raise FacedetectError("the mining pictures raise no window: no verifier to train")
    return np.concatenate(found)


def fit_verifier_model(positives: np.ndarray, negatives: np.ndarray, config: VerifierConfig,
                       cost, progress: bool = False):
    """AdaBoostDB (``cost``) on a seeded subset of the patch's pool (Haar features, and
    channel features where ``config.channels``): the verifier's
    :class:`~facedetect.detector._model.HaarDetectorModel`."""
    from ..haar import CHANNEL_TYPES, FEATURE_TYPES, haar_feature_pool
    from ..training._algorithms import AdaBoostDB
    from ._assemble import haar_detector_model
    from ._compact import compact_features
    pool = haar_feature_pool(config.size, config.size,
                             FEATURE_TYPES + (CHANNEL_TYPES if config.channels else ()))
    rng = np.random.default_rng(config.seed)
    if config.features < len(pool):
        pool = pool.subset(np.sort(rng.choice(len(pool), config.features, replace=False)))
    windows = np.concatenate([positives, negatives])
    labels = np.r_[np.ones(len(positives), int), np.zeros(len(negatives), int)]
    from ._settings import default_memory
    memory = default_memory()[0] if config.memory is None else config.memory
    store = compact_features(windows, pool, memory, progress=progress)
    searched = config.max_features   # at most the features drawn: else all of them
    estimator = AdaBoostDB(config.rounds, cost=tuple(cost), random_state=config.seed,
                           max_features=None if searched is None or searched >= len(pool)
                           else searched)
    estimator.fit_binned(store, labels)
    return haar_detector_model(estimator, pool, cost=tuple(cost))


def _proposed(proposer: Detector, verifier: Verifier, items, bar, what: str) -> list:
    """``(windows, boxes, proposer scores, verifier scores)`` of each grey picture or
    crop (a path is read)."""
    out = []
    for item in bar(items, what):
        grey = read_picture(item) if not isinstance(item, np.ndarray) else item
        if grey is None:
            continue
        found = proposer.find(grey)
        out.append((found.boxes, found.scores, verifier.scores(grey, found.windows),
                    grey.size / 1e6))
    return out


def lowest_meeting(rates: np.ndarray, target: float) -> int:
    """The index of the lowest knob from which every rate is at most ``target`` (the
    last knob where none is): the image operating point's rule.

    Examples
    --------
    >>> lowest_meeting(np.array([3.0, 0.5, 2.0, 0.2, 0.1]), 1.0)
    3
    """
    ok = np.asarray(rates) <= target
    i = len(ok) - 1
    while i > 0 and ok[i - 1] and ok[i]:
        i -= 1
    return i


def threshold_meeting(pictures: list, weight: float, target: float) -> float:
    """The lowest joint-score threshold at which ``pictures`` raise at most ``target``
    faces per megapixel: the rate changes only at a proposal's joint score, so those
    (and one below the lowest: every proposal kept) are the candidates."""
    joint = np.concatenate([s + weight * v for _, s, v, _ in pictures] + [np.zeros(0)])
    megapixels = sum(m for *_, m in pictures)
    if not len(joint):
        return 0.0
    knobs = np.unique(joint)
    knobs = np.r_[np.nextafter(knobs[0], -np.inf), knobs]
    kept = len(joint) - np.searchsorted(np.sort(joint), knobs, side="right")
    return float(knobs[lowest_meeting(kept / megapixels, target)])


def recall_at(faces, crops: list, weight: float, threshold: float) -> float:
    """The share of ``faces`` found (MTFL and Caltech pooled where present) keeping the
    proposals whose joint score passes ``threshold``."""
    kept = iter([boxes[s + weight * v > threshold] for boxes, s, v, _ in crops])
    by_source = crop_recall(lambda crop: next(kept), faces).by_source
    roomy = [by_source[s] for s in ROOMY_SOURCES if s in by_source] or list(by_source.values())
    return sum(r["recall"] * r["faces"] for r in roomy) / max(sum(r["faces"] for r in roomy), 1)


def choose_operating_point(faces, crops: list, pictures: list, weights,
                           target: float) -> dict:
    """Of ``weights``, the one whose threshold meeting ``target`` on the calibration
    pictures finds most calibration crops."""
    best = None
    for weight in weights:
        threshold = threshold_meeting(pictures, weight, target)
        found = recall_at(faces, crops, weight, threshold)
        if best is None or found > best["calibration_recall"]:
            best = {"weight": float(weight), "threshold": round(threshold, 6),
                    "calibration_recall": round(found, 4)}
    return best


def verifier_point(proposer: Detector, verifier: Verifier, faces, pictures: list, weights,
                   target: float, bar) -> tuple[dict, str]:
    """The weight and threshold of the joint score (:func:`choose_operating_point`) on
    the calibration part of ``faces`` and the calibration ``pictures``, and what they
    were in words."""
    calibrating = faces.subset(calibration_mask(faces.groups))
    crops = _proposed(proposer, verifier, calibrating.crops, bar, "calibration faces")
    scanned = _proposed(proposer, verifier, pictures, bar, "calibration pictures")
    point = choose_operating_point(calibrating, crops, scanned, weights, target)
    return point, (f"{len(calibrating.crops)} calibration faces, {len(scanned)} "
                   f"calibration pictures ({sum(m for *_, m in scanned):.1f} Mpx)")


def recalibrated_verifier(model, faces, pictures: list, target: float,
                          progress: bool = True):
    """``model``'s verifier with its weight and threshold chosen again at ``target``
    false alarms per megapixel of the calibration ``pictures`` (``facedetect
    calibrate``): ``(model, point)``. Its proposer and stumps are unchanged."""
    verifier = model.verifier
    section = model.document["verifier"]
    record = dict(section.get("training") or {})
    weights = (record.get("config") or {}).get("weights") or VerifierConfig().weights
    proposer = Detector(verifier.proposer(model.one_stage()), max_pixels=None,
                        verifier=False, threshold=verifier.proposer_threshold)
    point, calibration = verifier_point(
        proposer, verifier, faces, pictures, weights, target,
        lambda items, what: progress_bar(items, desc=what, disable=not progress))
    record.update(target_false_alarms_per_megapixel=target, calibration=calibration, **point)
    return model.with_sections(verifier=dict(weight=point["weight"],
                                             threshold=point["threshold"],
                                             training=record)), point


def train_verifier(model, cbcl, faces, negatives, config: VerifierConfig = VerifierConfig(),
                   progress: bool = True):
    """``model`` with a verifier trained on its proposals (the same one-stage model,
    its file's other sections unchanged).

    Parameters
    ----------
    model : HaarDetectorModel
        A one-stage face model trained on ``faces`` (its training faces are rebuilt to
        learn the proposer's rejection).
    cbcl : CBCLData
        The CBCL data it was trained with.
    faces : WildFaces
        The faces from the wild it was trained with.
    negatives : NegativeSet
        Face-free pictures: ``mining`` for negatives, ``calibration`` for the operating
        point.
    config : VerifierConfig
    progress : bool
        Progress bars.

    Returns
    -------
    model : HaarDetectorModel
        With a ``verifier`` section (:mod:`facedetect.modelfile._verifier`).
    record : dict
        What was trained and chosen, and each phase's seconds.
    """
    from ._recalibrate import training_faces_of
    config.validate()
    model = model.one_stage()   # a verifier it has is replaced
    image_point = (model.document.get("calibration") or {}).get("image") or {}
    target = (config.target if config.target is not None
              else image_point.get("target_false_alarms_per_megapixel"))
    if target is None:
        raise FacedetectError("the model has no image operating point: give a target")

    def bar(items, what):
        return progress_bar(items, desc=what, disable=not progress)
    phases, start = {}, time.perf_counter()

    def phase(name):
        phases[name] = round(time.perf_counter() - start - sum(phases.values()), 1)
    train_faces = training_faces_of(model, cbcl, faces)[1]
    proposer = proposer_of(model, train_faces, config.propose_at, config.propose_scale)
    miner = proposer_of(model, train_faces, config.mine_at, config.propose_scale)
    positives = positive_patches(proposer, faces, config, bar)
    negatives_found = negative_patches(miner, negatives.mining, config, bar)
    phase("patches")
    patch_model = fit_verifier_model(positives, negatives_found, config, model.cost, progress)
    phase("boosting")
    for _ in range(config.bootstrap):
        # the windows the verifier so far scores most face-like join its negatives
        negatives_found = np.concatenate([negatives_found, negative_patches(
            miner, negatives.mining, config, bar, patch_model.decision_function)])
        patch_model = fit_verifier_model(positives, negatives_found, config, model.cost,
                                         progress)
    if config.bootstrap:
        phase("bootstrap")
    section = {"proposer": {"threshold": float(config.propose_at)}, "context": config.context,
               "weight": 1.0, "threshold": 0.0, "model": _bare(patch_model.document)}
    if config.propose_scale is not None:
        section["proposer"]["scale_factor"] = float(config.propose_scale)
    rejection = proposer.scan_model.detection.get("rejection")
    if rejection is not None:
        section["proposer"]["rejection"] = rejection
    verifier = Verifier.from_section(section, type(model))
    point, calibration = verifier_point(proposer, verifier, faces, negatives.calibration,
                                        config.weights, target, bar)
    phase("operating point")
    record = {"config": {k: (list(v) if isinstance(v, tuple) else v)
                         for k, v in dataclasses.asdict(config).items()
                         if k != "memory" and not (k == "propose_scale" and v is None)},
              "target_false_alarms_per_megapixel": target, **point,
              "positives": len(positives), "negatives": len(negatives_found),
              "calibration": calibration,
              "seconds": phases}
    section.update(weight=point["weight"], threshold=point["threshold"], training=record)
    return model.with_sections(verifier=section), record


def _bare(document: dict) -> dict:
    """A verifier model's document as its section nests it: its training record left
    out (the section keeps its own)."""
    from ..modelfile._io import reseal
    return reseal({k: v for k, v in document.items() if k not in ("training", "sha256")})
