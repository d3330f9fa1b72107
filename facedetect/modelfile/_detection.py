"""A model file's ``detection`` section: everything the detector reads besides the stumps
and their rectangles, in one place, and the migration of files written before it.

A scanning model (Haar features) always has the section. It holds the window and the face
framing it was trained at, the box mapping from windows to object boxes, the scan settings
(threshold, grouping, pyramid), and, where the model has them, its cascade stages and its
rejection thresholds. ``applies_to`` says where the threshold was chosen: ``"images"`` (an
image operating point, chosen on negative pictures at training) or ``"windows"`` (the
window operating point, scanned with OpenCV's grouping). The detector never reads the
``training`` record.

Version 1 files kept the window and framing in ``features`` (the framing sometimes only in
the training config), rejection in ``features``, the stages at the top level, and had no
section at all without an image operating point; :func:`migrate` rewrites one as version 2
reads, scanning exactly as before. :func:`check_detection` is the section's part of the
schema (:mod:`._schema`).
"""

from __future__ import annotations

import copy

from ._fields import (MAX_STUMPS, MAX_THRESHOLD, PYRAMIDS, SCAN_LIMITS, fail, is_finite,
                      is_int, is_list)

__all__ = ["BOX_SCALE", "BOX_SHIFT", "CBCL_FRAMING", "WINDOW_SCAN",
           "check_detection", "detection_section", "framing_box", "migrate"]

# How a window maps to a face box at CBCL's framing: the side doubled, the centre moved
# down a tenth of the window. A box convention, not a detection setting: it was fitted
# once to the MIT+CMU annotations' boxes in the first release (evaluate-images
# --calibrate, c79ae58), as the peers' boxes are mapped (docs/peers.md), and other
# framings derive from it (framing_box).
BOX_SCALE = 2.0
BOX_SHIFT = 0.1
# A window's width in eye distances where a model records none: CBCL's 19x19 window's.
CBCL_FRAMING = 1.75
# The scan of a model without an image operating point: OpenCV's detectMultiScale grouping
# (3 neighbours, step 1.1) on area-averaged levels, refined strides; the threshold is the
# window operating point's and the smallest window the model's own.
WINDOW_SCAN = {"scale_factor": 1.1, "step": "refine", "min_neighbors": 3,
               "neighbor_margin": 0.0, "pyramid": "area"}
# Version 1 sections without a pyramid were written before area levels: bilinear ones.
_LEGACY_PYRAMID = "linear"


def framing_box(framing: float) -> dict:
    """The box mapping for a window ``framing`` eye distances wide: the face box, in eye
    distances, that CBCL's window gives with ``BOX_SCALE`` and ``BOX_SHIFT`` (none at
    CBCL's framing: those are the defaults).

    Parameters
    ----------
    framing : float
        The window's width in eye distances.

    Returns
    -------
    dict
        ``box_scale`` and ``box_shift``, or nothing at CBCL's framing.

    See Also
    --------
    detection_section : where it is stored.

    Examples
    --------
    >>> framing_box(1.75), framing_box(2.2)
    ({}, {'box_scale': 1.590909, 'box_shift': 0.079545})
    """
    if framing == CBCL_FRAMING:
        return {}
    return {"box_scale": round(BOX_SCALE * CBCL_FRAMING / framing, 6),
            "box_shift": round(BOX_SHIFT * CBCL_FRAMING / framing, 6)}


def detection_section(window, framing: float | None, threshold: float,
                      boxes_are_windows: bool = False) -> dict:
    """The detection section of a model scanned at its window operating point.

    Parameters
    ----------
    window : (width, height)
    framing : float or None
        Eye distances across the window (None: CBCL's 1.75).
    threshold : float
        The window operating point's threshold.
    boxes_are_windows : bool
        A detector of other objects trained on crops of the object: its box is the window.

    Returns
    -------
    dict

    See Also
    --------
    framing_box : its box mapping.
    migrate : files written before it.

    Examples
    --------
    >>> section = detection_section((24, 24), 2.2, 1.5)
    >>> section["box_scale"], section["min_size"], section["applies_to"]
    (1.590909, 24, 'windows')
    """
    framing = CBCL_FRAMING if framing is None else float(framing)
    box = ({"box_scale": 1.0, "box_shift": 0.0} if boxes_are_windows
           else {"box_scale": BOX_SCALE, "box_shift": BOX_SHIFT, **framing_box(framing)})
    return {"window": [int(window[0]), int(window[1])], "framing": framing, **box,
            "threshold": float(threshold), "min_size": int(max(window)), **WINDOW_SCAN,
            "applies_to": "windows"}


def migrate(document: dict) -> dict:
    """A version 1 document as version 2; a scanning model scans exactly as it did.

    Parameters
    ----------
    document : dict
        A version 1 model document (its checksum already checked).

    Returns
    -------
    dict
        A new document: the window, framing and rejection moved from ``features`` and the
        stages from the top level into ``detection``, which is made at the window
        operating point where the file had none. Unsealed: :func:`check_document` seals it.

    See Also
    --------
    check_document : migrates version 1 files as it reads them.

    Examples
    --------
    >>> old = {"version": 1, "stumps": [{}], "operating_point": {"threshold": 0.5},
    ...        "features": {"kind": "haar", "window": [19, 19], "rects": [[]]}}
    >>> new = migrate(old)
    >>> new["version"], sorted(new["features"]), new["detection"]["threshold"]
    (2, ['kind', 'rects'], 0.5)
    """
    document = copy.deepcopy(document)
    document["version"] = 2
    features = document.get("features") or {"kind": "matrix"}
    stages = document.pop("stages", None)
    if features.get("kind") != "haar":
        return document
    window = features.pop("window", None)
    framing = features.pop("framing", None)
    if framing is None:   # the oldest files kept it in the training config only
        framing = ((document.get("training") or {}).get("config") or {}).get("framing")
    rejection = features.pop("rejection", None)
    old = document.get("detection")
    section = detection_section(window, framing, _window_threshold(document, stages))
    if old is not None:   # an image operating point: its own settings, mapping and record
        old.setdefault("pyramid", _LEGACY_PYRAMID)
        old.setdefault("applies_to", "images")   # a version 1 detection section was one
        section.update(old)
    if stages:
        section["stages"] = stages
    if rejection:
        section["rejection"] = rejection
    document["detection"] = section
    return document


def _window_threshold(document: dict, stages) -> float:
    point = document.get("operating_point")
    if point is not None:
        return float(point["threshold"])
    return float(stages[-1]["threshold"]) if stages else 0.0


def without_stump_lists(detection: dict) -> dict:
    """``detection`` as a summary shows it: without its lists of one number per stump
    (the rejection levels, the export's own levels) and the cascade stages.

    >>> without_stump_lists({"threshold": 1.0, "rejection": {}, "opencv": {"rejection": {}}})
    {'threshold': 1.0, 'opencv': {}}
    """
    kept = {k: v for k, v in detection.items() if k not in ("rejection", "stages")}
    if "opencv" in kept:
        kept["opencv"] = {k: v for k, v in kept["opencv"].items() if k != "rejection"}
    return kept


def check_detection(path, detection, n_stumps: int):
    """Everything the detector reads besides the stumps' features: the window, framing and
    box mapping, the scan settings, the stages and rejection, checked by type and range."""
    if not isinstance(detection, dict):
        fail(path, "a model of Haar features needs its detection section")
    if not is_list(detection.get("window"), lambda v: is_int(v, 3, 4096), 2, 2):
        fail(path, "detection.window must be [width, height], each 3..4096")
    if not is_finite(detection.get("framing"), 1, 3):
        fail(path, "detection.framing must be a number of eye distances in [1, 3]")
    if not (is_finite(detection.get("box_scale"), 0.1, 10)
            and is_finite(detection.get("box_shift"), -1, 1)):
        fail(path, "detection.box_scale must be in [0.1, 10] and box_shift in [-1, 1]")
    step = detection.get("step")
    limits = {name: spec[1:3] for name, spec in SCAN_LIMITS.items()}   # (low, high)
    if not (is_finite(detection.get("threshold"), *limits["threshold"])
            and is_int(detection.get("min_neighbors"), *limits["min_neighbors"])
            and is_finite(detection.get("neighbor_margin"), *limits["neighbor_margin"])
            and is_finite(detection.get("scale_factor"), *limits["scale_factor"])
            and (step in ("auto", "refine") or is_int(step, *limits["step"]))
            and is_int(detection.get("min_size"), *limits["min_size"])
            and detection.get("applies_to") in ("images", "windows")):
        fail(path, "detection needs a finite threshold, min_neighbors "
                   "{0}..{1}, a neighbor_margin >= 0, a scale_factor in [{2:g}, {3:g}], a "
                   "step, a min_size and applies_to 'images' or 'windows'".format(
                       *limits["min_neighbors"], *limits["scale_factor"]))
    if detection.get("pyramid") not in PYRAMIDS:
        fail(path, "detection.pyramid must be 'area' or 'linear'")
    _check_stages(path, detection.get("stages"), n_stumps)
    if "rejection" in detection:
        _check_rejection(path, detection["rejection"], n_stumps)
    _check_opencv_point(path, detection.get("opencv"), n_stumps)


def _check_opencv_point(path, point, n_stumps: int):
    """The staged OpenCV export's operating point (:mod:`.pipeline.image_point`), with the
    rejection levels its stages are cut at where it has its own."""
    if point is None:
        return
    if not (isinstance(point, dict) and is_finite(point.get("threshold"))
            and is_int(point.get("min_neighbors"), 0, 1000)
            and is_finite(point.get("scale_factor"), *SCAN_LIMITS["scale_factor"][1:3])
            and is_list(point.get("cuts"), lambda c: is_int(c, 1, MAX_STUMPS), 1, 64)):
        fail(path, "detection.opencv needs a finite threshold, min_neighbors 0..1000, a "
                   "scale_factor in [{0:g}, {1:g}] and a list of stage cuts".format(
                       *SCAN_LIMITS["scale_factor"][1:3]))
    if "rejection" in point:
        _check_rejection(path, point["rejection"], n_stumps, "detection.opencv.rejection")


def _check_stages(path, stages, n_stumps: int):
    """An attentional cascade: consecutive runs of the stumps, each with its threshold."""
    if stages is None:
        return
    if not is_list(stages, lambda st: isinstance(st, dict)
                   and set(st) == {"stumps", "threshold"} and is_int(st["stumps"], 1, MAX_STUMPS)
                   and is_finite(st["threshold"], -MAX_THRESHOLD, MAX_THRESHOLD), 1, MAX_STUMPS):
        fail(path, "detection.stages must be a list of {stumps: count, threshold: number}")
    if sum(st["stumps"] for st in stages) != n_stumps:
        fail(path, "detection.stages' stump counts must add up to the number of stumps")


def _check_rejection(path, rejection, n_stumps: int, name: str = "detection.rejection"):
    """Learnt rejection: a reference sum and one threshold per stump (soft rejection also
    records how it was learnt)."""
    soft = {"quantile", "max_loss", "loss", "at_threshold"}
    if not (isinstance(rejection, dict)
            and set(rejection) in ({"reference", "thresholds"},
                                   {"reference", "thresholds"} | soft)
            and all(is_finite(rejection[k]) for k in soft & set(rejection))
            and is_finite(rejection["reference"])
            and is_list(rejection["thresholds"], is_finite, n_stumps, n_stumps)):
        fail(path, f"{name} must hold a finite reference and one finite threshold per "
                   "stump")
