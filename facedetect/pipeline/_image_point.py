"""The image operating point: the scan threshold and grouping that ``detect`` uses by default.

The window operating point (:mod:`.operating_point`) answers "is this 19x19 window a
face?" at the cost asked for. A whole photograph is another question: it holds hundreds of
thousands of windows, so what a user sees is the false alarms per megapixel after grouping,
and the faces found. This module chooses the threshold from data the model never trained
on:

- the calibration part of the negative pictures (:mod:`facedetect.data._negatives`: a
  quarter of the pictures outside the held-out fifth, never mined), scanned once, whose
  groups give the false alarms per megapixel at every candidate threshold (the held-out
  fifth only measures);
- the held-out CBCL faces, whose window scores bound the threshold from below (no
  threshold below the score that keeps ``FACE_QUANTILE`` of them is tried: lower gains
  nothing at the window level).

The threshold is the lowest candidate whose false-alarm rate, and that of every higher
candidate, is at most the target: the highest face recall at the stated rate. Grouping is
OpenCV's rule (with ``MIN_NEIGHBORS``, no neighbour margin), fixed beforehand. The MIT+CMU
development images never enter.

Then soft rejection (:func:`facedetect.detector._pruning.soft_rejection_thresholds`) is set
at the chosen threshold from the training faces, rejecting at most ``SOFT_REJECTION_LOSS``
of those the model accepts there. That scan drops more windows than the search scan (whose
levels were learnt at the lowest candidate), so the threshold then goes down the same
candidates, each scanned as ``detect`` scans it (soft rejection learnt at that candidate),
to the lowest that still meets the target (:func:`search_down`): the rate the
model file records is the one ``detect`` gives.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from .._utils.progress import progress_bar

from ..detector._multiscale import (DetectionParams, group_detections, scan_best,
                               scanner_for)
from ._bootstrap import MINING_PYRAMID, _picture
from ._settings import TARGET_FALSE_ALARMS_PER_MPX

# A group needs more than this many windows. Each setting with its own threshold at the
# target, on the recipe's model: 1, 2, 3, 4 neighbours found 0.927, 0.931, 0.926, 0.923 of
# the held-out MTFL and Caltech crops (OpenCV's 3 is not the best for this detector), and
# counting windows up to 1 or 1.5 below the threshold as neighbours found no more
# (docs/detector-training.md).
MIN_NEIGHBORS = 2
NEIGHBOR_MARGIN = 0.0
# Candidates start at the score that keeps 95% of the held-out faces: the threshold that
# meets the target keeps fewer (88-90% of them for the shipped model), and scanning from a
# lower start took a quarter of the training time.
FACE_QUANTILE = 0.05
N_CANDIDATES = 200
# Soft rejection's budget: the share of the training faces accepted at the chosen
# threshold that it may reject. On the recipe's 900-round model scanning area-averaged
# levels, 2% left detect at 0.55x OpenCV's time idle (0.65x beside a busy core), 3% at
# 0.50x (0.58x) and 4% at 0.48x (0.50x), for 0.935, 0.931 and 0.925 of the held-out wild
# faces (docs/detector-training.md): 4% meets both speed targets with a margin.
SOFT_REJECTION_LOSS = 0.04


def scan_pictures(model, pictures, params: DetectionParams, progress: bool = False,
                  warn=None):
    """Raw windows (rects, scores) of each readable picture, and the megapixels scanned."""
    raw, megapixels, _ = scan_pictures_bounded(model, pictures, params, progress, warn)
    return raw, megapixels


def scan_pictures_bounded(model, pictures, params: DetectionParams, progress: bool = False,
                          warn=None):
    """:func:`scan_pictures` that keeps each picture's ``MAX_WINDOWS`` best windows: with
    the highest score below which some were dropped (``-inf``: none), above which every
    count is exact. A weak model raises more windows than grouping can take."""
    scanner = scanner_for(model, params, parallel_min_windows=0)   # as mining does
    raw, megapixels, floor = [], 0.0, -np.inf
    for item in progress_bar(pictures, desc="calibration negatives", unit="picture",
                     disable=not progress, leave=False):
        picture = _picture(item, warn or (lambda line: None))
        if picture is None:
            continue
        megapixels += picture.size / 1e6
        rects, scores, dropped = scan_best(picture, scanner, params)
        floor = max(floor, dropped)
        raw.append((rects, scores))
    return raw, megapixels, floor


def false_alarm_rates(raw, megapixels: float, thresholds, min_neighbors: int,
                      neighbor_margin: float) -> np.ndarray:
    """Groups per megapixel at each threshold (each picture grouped on its own)."""
    counts = np.zeros(len(thresholds))
    for rects, scores in raw:
        for i, threshold in enumerate(thresholds):
            keep = scores > threshold - neighbor_margin
            if not keep.any():
                break  # thresholds rise: no window left for the higher ones
            counts[i] += len(group_detections(rects[keep], scores[keep], threshold,
                                              min_neighbors, neighbor_margin)[1])
    return counts / max(megapixels, 1e-12)


def rates_down_to_target(raw, megapixels: float, thresholds, target: float,
                         min_neighbors: int, neighbor_margin: float) -> np.ndarray:
    """:func:`false_alarm_rates` from the highest threshold down, stopping at the first
    above ``target`` (NaN below it): all that :func:`choose_image_threshold` reads, without
    grouping the many windows of the low thresholds (a weak model spent 226 of its 228 s
    there)."""
    rates = np.full(len(thresholds), np.nan)
    for i in reversed(range(len(thresholds))):
        rates[i] = false_alarm_rates(raw, megapixels, [thresholds[i]], min_neighbors,
                                     neighbor_margin)[0]
        if rates[i] > target:
            break
    return rates


def _measured(thresholds, rates) -> dict:
    """The curve a model file keeps: the thresholds whose rate was measured."""
    done = ~np.isnan(rates)
    return {"thresholds": [round(float(t), 4) for t in np.asarray(thresholds)[done]],
            "false_alarms_per_megapixel": [round(float(r), 4) for r in rates[done]]}


def choose_image_threshold(thresholds, rates, target: float) -> int:
    """Index of the lowest threshold from which every rate is at most ``target`` (the last
    one if none is)."""
    ok = np.asarray(rates) <= target   # NaN (not measured): not ok
    # suffix "all ok": the rate need not fall monotonically with the threshold
    suffix = np.flip(np.logical_and.accumulate(np.flip(ok)))
    return int(np.argmax(suffix)) if suffix.any() else len(thresholds) - 1


def image_operating_point(model, pictures, held_out_faces: np.ndarray,
                          target: float = TARGET_FALSE_ALARMS_PER_MPX,
                          progress: bool = False, warn=None,
                          train_faces: np.ndarray | None = None) -> dict:
    """The ``detection`` section of a model file (see the module docstring). With
    ``train_faces``, the calibration pictures are scanned with soft rejection set at the
    lowest candidate threshold (rejecting at most ``SOFT_REJECTION_LOSS`` of the training
    faces accepted there) rather than with the minimum levels: 13 s instead of 37 s for a
    900-stump model (docs/detector-training.md). Then the threshold goes down to where
    ``detect``'s own scan meets the target (:func:`search_down`); the section
    carries that scan's rate and soft rejection, and the search scan's choice as
    ``search_scan``."""
    face_scores = model.decision_function(held_out_faces)
    low = float(np.quantile(face_scores, FACE_QUANTILE))
    base = DetectionParams(threshold=low, min_neighbors=MIN_NEIGHBORS,
                           neighbor_margin=NEIGHBOR_MARGIN, pyramid=MINING_PYRAMID,
                           min_size=max(model.window))
    levels_at = low   # the search scan: soft rejection learnt at the lowest candidate
    raw, megapixels, floor = scan_pictures_bounded(
        soft_levels_at(model, train_faces, low), pictures, base, progress, warn)
    if floor > low:
        # A weak model: the pictures raised more windows than can be counted below the
        # floor, so the candidates start there (and the faces kept say what it costs).
        (warn or (lambda line: None))(
            f"warning: the model accepts so many windows of the calibration pictures that "
            f"its image operating point is sought from {floor:.4g} up (it keeps "
            f"{np.mean(face_scores > floor):.1%} of the held-out faces there): train "
            "longer (--rounds) for a stronger one")
        low = float(np.nextafter(floor, np.inf))
    top = max([low] + [float(s.max()) for _, s in raw if len(s)])
    thresholds = np.linspace(low, top, N_CANDIDATES)
    rates = rates_down_to_target(raw, megapixels, thresholds, target, MIN_NEIGHBORS,
                                 NEIGHBOR_MARGIN)
    chosen = choose_image_threshold(thresholds, rates, target)
    if rates[chosen] > target:
        (warn or (lambda line: None))(
            f"warning: no threshold keeps the false alarms on the calibration pictures at "
            f"{target:g} per megapixel; the image operating point takes the highest score "
            f"seen, {thresholds[chosen]:.4g} ({rates[chosen]:.3g} per megapixel)")
    point = {"false_alarms_per_megapixel": round(float(rates[chosen]), 4)}
    if train_faces is not None and len(train_faces):
        search_scan = {"threshold": round(float(thresholds[chosen]), 6), **point,
                       "levels_at": round(levels_at, 6)}
        chosen, point = _on_detect_scan(model, train_faces, pictures, base,
                                        thresholds[:chosen + 1], target, progress, warn)
        point["search_scan"] = search_scan
    threshold = float(thresholds[chosen])
    return {"threshold": round(threshold, 6), "min_neighbors": MIN_NEIGHBORS,
            "neighbor_margin": NEIGHBOR_MARGIN, "scale_factor": base.scale_factor,
            "step": base.step, "min_size": base.min_size, "pyramid": base.pyramid,
            "applies_to": "images",
            "target_false_alarms_per_megapixel": target,
            **point,
            "heldout_face_window_recall": round(float(np.mean(face_scores > threshold)), 4),
            "source": f"{len(raw)} calibration negative pictures ({megapixels:.1f} Mpx) and "
                      f"{len(face_scores)} held-out faces",
            "curve": _measured(thresholds, rates)}


def _on_detect_scan(model, train_faces: np.ndarray, pictures, base: DetectionParams,
                    thresholds, target: float, progress: bool = False, warn=None):
    """``(index, fields)``: :func:`search_down` over the rising ``thresholds`` on
    ``detect``'s own scan, and the section's fields it sets: the rate there and the soft
    rejection learnt at that threshold (none where no training face scores above it, so
    ``detect`` keeps the model's own levels, as that scan did)."""
    def measure(i):   # at the threshold the model file records, rounded
        return detect_scan_at(model, train_faces, pictures, replace(
            base, threshold=round(float(thresholds[i]), 6)), progress, warn)
    chosen, rate, levelled = search_down(measure, len(thresholds), target)
    if rate > target:
        (warn or (lambda line: None))(
            f"warning: detect raises {rate:.3g} false alarms per megapixel of the "
            f"calibration pictures at its threshold {thresholds[chosen]:.4g}, over the "
            f"target {target:g}")
    fields = {"false_alarms_per_megapixel": round(rate, 4)}
    if levelled is not model:
        fields["rejection"] = levelled.detection["rejection"]
    return chosen, fields


def detect_scan_at(model, train_faces: np.ndarray, pictures, params: DetectionParams,
                   progress: bool = False, warn=None):
    """``(model with soft rejection learnt from train_faces at params.threshold, the false
    alarms per megapixel detect gives with it there)``: the calibration pictures scanned
    as ``detect`` scans them."""
    soft = soft_levels_at(model, train_faces, params.threshold)
    raw, megapixels = scan_pictures(soft, pictures, params, progress, warn)
    rate = false_alarm_rates(raw, megapixels, [params.threshold], params.min_neighbors,
                             params.neighbor_margin)[0]
    return soft, float(rate)


def soft_levels_at(model, train_faces: np.ndarray | None, threshold: float):
    """``model`` with soft rejection learnt from ``train_faces`` at ``threshold``, within
    ``SOFT_REJECTION_LOSS`` (as it is without faces, or when none of them scores above
    ``threshold``: no budget to count,
    :func:`~facedetect.detector._pruning.soft_rejection_thresholds`)."""
    if train_faces is None or not len(train_faces):
        return model
    return model.with_rejection(train_faces, threshold=threshold,
                                max_loss=SOFT_REJECTION_LOSS)


def search_down(measure, count: int, target: float):
    """``(index, rate, model)``: the lowest of ``count`` rising candidate thresholds (the
    last one chosen on a search scan) at which ``measure(index) -> (model, rate)``, the
    scan that will run with its levels learnt at that candidate, keeps the rate at most
    ``target``. If the last is over the target already (a weak model, warned of), it is
    kept.

    A search scan's levels are learnt at its lowest candidate and let more windows
    through, so the threshold it chooses errs high (``default.json``: 0.185 false alarms
    per megapixel at the target 0.25). The rate falls as the threshold rises (as measured,
    docs/detector-training.md), so the search gallops down the candidates (1, 2, 4, ...
    below) to the first over the target, then bisects: a handful of scans. The candidate
    it returns is measured; those the gallop stepped over are not."""
    good = count - 1
    model, rate = measure(good)
    bad, step = None, 1
    while bad is None and good > 0 and rate <= target:
        below = max(good - step, 0)
        found = measure(below)
        if found[1] <= target:
            good, (model, rate), step = below, found, step * 2
        else:
            bad = below
    while bad is not None and good - bad > 1:
        middle = (good + bad) // 2
        found = measure(middle)
        if found[1] <= target:
            good, (model, rate) = middle, found
        else:
            bad = middle
    return good, rate, model
