"""The scans and the search that the operating points for pictures share
(:mod:`._calibrate` for ``detect``'s, :mod:`._calibrate_opencv` for the OpenCV export's):
pictures read once each, scanned by the :class:`~facedetect.Detector` ``detect`` builds,
grouped at every candidate threshold, and the search down the candidates."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from .._utils.progress import progress_bar
from ..errors import FacedetectError
from ..images import read_picture
from ._multiscale import DetectionParams, group_detections

__all__ = ["N_CANDIDATES", "SOFT_REJECTION_LOSS", "choose_image_threshold", "detect_rate",
           "false_alarm_rates", "measured_curve", "rates_down_to_target", "read_pictures",
           "scan_pictures", "search_down", "soft_levels_at"]

N_CANDIDATES = 200
# Soft rejection's budget: the share of the training faces accepted at the chosen
# threshold that it may reject. On the recipe's 900-round model scanning area-averaged
# levels, 2% left detect at 0.55x OpenCV's time idle (0.65x beside a busy core), 3% at
# 0.50x (0.58x) and 4% at 0.48x (0.50x), for 0.935, 0.931 and 0.925 of the held-out wild
# faces: 4% meets both speed targets with a margin.
SOFT_REJECTION_LOSS = 0.04


def ignore(line: str) -> None:
    """A ``warn`` that drops the line."""


def read_pictures(pictures, warn=None) -> list[np.ndarray]:
    """The readable pictures as grey pixels, decoded once (a search measures each picture
    15 to 20 times; the recipe's calibration part is about 92 Mpx): arrays as they are,
    paths read by :func:`~facedetect.images.read_picture` (one line to ``warn`` for each
    that cannot be, and skipped)."""
    read = (read_picture(item, warn) for item in pictures)
    return [picture for picture in read if picture is not None]


def _detector(model, params: DetectionParams):
    from ._api import Detector   # the front door, as users run it
    return Detector(model, max_pixels=None, **asdict(params))


def scan_pictures(model, pictures, params: DetectionParams, progress: bool = False,
                  warn=None):
    """``(raw, megapixels, floor)``: each readable picture's windows above
    ``params.threshold`` before grouping, as ``(rects, scores)``, by the detector ``detect``
    builds for ``model`` and ``params``; the megapixels scanned; and the highest score at
    or below which some windows were dropped (``-inf``: none), above which every count is
    exact (a weak model raises more windows than grouping can take)."""
    detector = _detector(model, params)
    raw, megapixels, floor = [], 0.0, -np.inf
    for picture in progress_bar(read_pictures(pictures, warn), desc="calibration negatives",
                                unit="picture", disable=not progress, leave=False):
        megapixels += picture.size / 1e6
        rects, scores, dropped = detector.raw_windows(picture)
        floor = max(floor, dropped)
        raw.append((rects, scores))
    return raw, megapixels, floor


def detect_rate(model, pictures, params: DetectionParams, warn=None) -> float:
    """False alarms per megapixel that ``Detector(model, **params).detect`` raises on the
    face-free ``pictures``."""
    detector = _detector(model, params)
    width, height = model.window
    smallest = max(1.0, params.min_size / max(width, height))   # as find_faces refuses
    found, megapixels = 0, 0.0
    for picture in read_pictures(pictures, warn):
        megapixels += picture.size / 1e6
        if (picture.shape[0] + 1e-9 < height * smallest
                or picture.shape[1] + 1e-9 < width * smallest):
            continue   # no window fits: detect refuses the picture, and scans nothing
        try:
            found += len(detector.detect(picture))
        except FacedetectError:   # more windows than detect takes: not a usable threshold
            return float("inf")
    return found / max(megapixels, 1e-12)


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


def measured_curve(thresholds, rates) -> dict:
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


def soft_levels_at(model, train_faces: np.ndarray | None, threshold: float):
    """``model`` with soft rejection learnt from ``train_faces`` at ``threshold``, within
    ``SOFT_REJECTION_LOSS`` (as it is without faces, or when none of them scores above
    ``threshold``)."""
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
    per megapixel at the target 0.25). The rate falls as the threshold rises, so the
    search gallops down the candidates (1, 2, 4, ... below) to the first over the target,
    then bisects: a handful of scans. The candidate it returns is measured; those the
    gallop stepped over are not."""
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
