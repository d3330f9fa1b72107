"""A model file's ``calibration`` section: how its operating points for pictures were
chosen, kept apart from what a scan needs (the ``detection`` section).

``detection`` holds the threshold, grouping, pyramid and rejection levels ``detect`` scans
with, and ``detection.opencv`` the export's threshold, grouping, cuts and levels. How each
was chosen (the target false alarms per megapixel, the rate measured there, the search
scan's choice, the curve of candidates, the pictures and faces used, the seconds taken) is
provenance: ``calibration.image`` and ``calibration.opencv``, written by
:func:`facedetect.detector._calibrate.calibrate` (training, ``facedetect calibrate``) and
read by nobody who scans. Version 2 files kept both in ``detection``; :func:`migrate_to_3`
moves the provenance out.
"""

from __future__ import annotations

import copy

from ._fields import fail, is_finite, is_list

__all__ = ["PROVENANCE_FIELDS", "check_calibration", "migrate_to_3", "split_provenance"]

# The fields of an operating point that record how it was chosen (the last: version 1's
# rate on the search scan).
PROVENANCE_FIELDS = ("target_false_alarms_per_megapixel", "false_alarms_per_megapixel",
                     "search_scan", "heldout_face_window_recall", "source", "curve",
                     "seconds", "false_alarms_per_megapixel_when_chosen")
POINTS = ("image", "opencv")
MAX_CURVE = 10_000
MAX_SOURCE = 1_000


def split_provenance(point: dict) -> tuple[dict, dict]:
    """``(what a scan needs, how it was chosen)`` of an operating point.

    Examples
    --------
    >>> split_provenance({"threshold": 2.5, "false_alarms_per_megapixel": 0.2})
    ({'threshold': 2.5}, {'false_alarms_per_megapixel': 0.2})
    """
    scan = {k: v for k, v in point.items() if k not in PROVENANCE_FIELDS}
    return scan, {k: v for k, v in point.items() if k in PROVENANCE_FIELDS}


def migrate_to_3(document: dict) -> dict:
    """A version 2 document as version 3: the provenance of ``detection`` and
    ``detection.opencv`` moved to ``calibration``; the scan is unchanged. Unsealed.

    Examples
    --------
    >>> old = {"version": 2, "detection": {"threshold": 2.5, "source": "9 pictures",
    ...        "opencv": {"threshold": 1.0, "search_scan": {"threshold": 1.2}}}}
    >>> new = migrate_to_3(old)
    >>> new["version"], new["detection"], new["calibration"]["opencv"]
    (3, {'threshold': 2.5, 'opencv': {'threshold': 1.0}}, {'search_scan': {'threshold': 1.2}})
    """
    document = copy.deepcopy(document)
    document["version"] = 3
    detection = document.get("detection")
    if not isinstance(detection, dict):
        return document
    calibration = {}
    scan, image = split_provenance(detection)
    if image:
        calibration["image"] = image
    if isinstance(scan.get("opencv"), dict):
        scan["opencv"], opencv = split_provenance(scan["opencv"])
        if opencv:
            calibration["opencv"] = opencv
    document["detection"] = scan
    if calibration:
        document["calibration"] = calibration
    return document


def check_calibration(path, calibration) -> None:
    """The section, if present: per point, known fields of finite numbers, a short source
    and a bounded curve."""
    if calibration is None:
        return
    if not isinstance(calibration, dict) or set(calibration) - set(POINTS):
        fail(path, "calibration must hold 'image' and/or 'opencv' records")
    for name, record in calibration.items():
        if not isinstance(record, dict) or set(record) - set(PROVENANCE_FIELDS):
            fail(path, f"calibration.{name} must hold only "
                       f"{', '.join(PROVENANCE_FIELDS)}")
        for key in ("target_false_alarms_per_megapixel", "false_alarms_per_megapixel",
                    "heldout_face_window_recall", "seconds",
                    "false_alarms_per_megapixel_when_chosen"):
            if key in record and not is_finite(record[key], 0):
                fail(path, f"calibration.{name}.{key} must be a number of at least 0")
        if "source" in record and not (isinstance(record["source"], str)
                                       and len(record["source"]) <= MAX_SOURCE):
            fail(path, f"calibration.{name}.source must be a line of text")
        search = record.get("search_scan", {})
        if not (isinstance(search, dict) and all(is_finite(v) for v in search.values())):
            fail(path, f"calibration.{name}.search_scan must hold finite numbers")
        curve = record.get("curve", {"thresholds": [], "false_alarms_per_megapixel": []})
        if not (isinstance(curve, dict)
                and set(curve) == {"thresholds", "false_alarms_per_megapixel"}
                and is_list(curve["thresholds"], is_finite, 0, MAX_CURVE)
                and is_list(curve["false_alarms_per_megapixel"], is_finite, 0, MAX_CURVE)
                and len(curve["thresholds"]) == len(curve["false_alarms_per_megapixel"])):
            fail(path, f"calibration.{name}.curve must pair thresholds with rates")
