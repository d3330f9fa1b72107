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
reads, scanning exactly as before.
"""

from __future__ import annotations

import copy

__all__ = ["BOX_SCALE", "BOX_SHIFT", "CBCL_FRAMING", "WINDOW_SCAN",
           "detection_section", "framing_box", "migrate"]

# How a window maps to a face box at CBCL's framing: the side doubled, the centre moved
# down a tenth of the window (chosen once on CBCL's geometry; see detector.multiscale).
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
