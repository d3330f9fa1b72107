"""The model file's schema: every field any code reads, checked by type and range.

A model file is untrusted input; :func:`check_document` passes a document that loads as a
model that works and refuses any other with one line naming the first field at fault.
"""

from __future__ import annotations

import hashlib
import json

from ._calibration import check_calibration, migrate_to_3
from ._detection import check_detection, migrate
from ._fields import MAX_ALPHA, MAX_STUMPS, MAX_THRESHOLD, fail, is_finite, is_int, is_list
from ._registry import FILE_ALGORITHMS
from ._verifier import check_verifier

FORMAT = "facedetect-model"
VERSION = 3
# Older files are migrated on read: version 1 (the detection fields spread over three
# sections, facedetect.modelfile._detection) and version 2 (how the operating points were
# chosen kept in the detection section, facedetect.modelfile._calibration).
READABLE_VERSIONS = (1, 2, 3)
ALGORITHM_NAMES = FILE_ALGORITHMS   # facedetect.modelfile._registry
TOP_LEVEL = {"format", "version", "algorithm", "selection", "search", "cost", "classes",
             "n_features", "stumps", "features", "training", "operating_point", "detection",
             "calibration", "verifier", "sha256"}

CBCL_WINDOW = 19
# The calibration maps an operating point may store (training.operating_point fits them).
CALIBRATIONS = ("sigmoid", "isotonic")
# The gradient channels a channel feature can sum over: facedetect.haar._channels'
# CHANNEL_TYPES (the magnitude and six orientation bins; a test holds the two equal).
N_CHANNELS = 7
CHANNEL_BORDER = 1   # and the pixels a channel rectangle keeps off the window's border


def digest(document: dict) -> str:
    """SHA-256 of the document without its ``sha256`` field, in canonical JSON.

    Parameters
    ----------
    document : dict
        A model document.

    Returns
    -------
    str
        64 hexadecimal digits; the same for equal documents whatever their key order.

    See Also
    --------
    reseal : store it in the document.

    Examples
    --------
    >>> digest({"a": 1, "b": 2}) == digest({"b": 2, "a": 1, "sha256": "old"})
    True
    """
    body = {k: v for k, v in document.items() if k != "sha256"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def check_document(document, path) -> dict:
    """``document`` if every field is what the loader and the scanner expect.

    Parameters
    ----------
    document : object
        A parsed model file (untrusted).
    path : path or str
        The file's name, for the message.

    Returns
    -------
    dict
        The document; a version 1 document migrated to this version and sealed anew.

    Raises
    ------
    FacedetectError
        One line naming the first field that is not sound.

    See Also
    --------
    load_document : read a file and check it.

    Examples
    --------
    >>> check_document({"format": "facedetect-model", "version": 9}, "m.json")
    Traceback (most recent call last):
        ...
    facedetect.errors.FacedetectError: m.json: invalid model file: unsupported version '9' (...)
    """
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        fail(path, "not a facedetect model (format field missing)")
    if not is_int(document.get("version")):
        fail(path, f"version must be a whole number, got "
                   f"{str(document.get('version'))[:20]!r}")
    if document.get("version") not in READABLE_VERSIONS:
        fail(path, f"unsupported version {str(document.get('version'))[:20]!r} "
                   f"(this reads {', '.join(map(str, READABLE_VERSIONS))})")
    if document.get("sha256") != digest(document):
        fail(path, "checksum mismatch: the file was modified after it was written")
    if document["version"] < VERSION:
        document = _migrated(document, path)
    unknown = sorted(set(document) - TOP_LEVEL)
    if unknown:
        fail(path, f"unknown field {unknown[0][:40]!r}")
    _check_estimator(path, document)
    stumps = document["stumps"]
    features = document.get("features", {"kind": "matrix"})
    if not isinstance(features, dict):
        fail(path, "features must be an object")
    detection = document.get("detection")
    if features.get("kind") == "haar":
        check_detection(path, detection, len(stumps))
    elif detection is not None:
        fail(path, "only a model of Haar features scans images: it has no detection section")
    _check_features(path, features, stumps, (detection or {}).get("window"))
    _check_training(path, document.get("training", {}))
    _check_operating_point(path, document.get("operating_point"))
    check_calibration(path, document.get("calibration"))
    if "verifier" in document:
        if features.get("kind") != "haar":
            fail(path, "only a model of Haar features scans images: it has no verifier")
        check_verifier(path, document["verifier"], len(stumps), check_document)
    return document


def _migrated(document: dict, path) -> dict:
    """An older document as this version reads it, sealed anew."""
    if document["version"] == 1:
        try:
            document = migrate(document)
        except (TypeError, ValueError, KeyError, IndexError, AttributeError):
            fail(path, "a malformed version 1 model (its window, framing, stages or "
                       "operating point)")
    document = migrate_to_3(document)
    document["sha256"] = digest(document)
    return document


def _check_estimator(path, document):
    if document.get("algorithm") not in ALGORITHM_NAMES:
        fail(path, f"algorithm must be one of {', '.join(ALGORITHM_NAMES)}")
    if document.get("selection") not in ("root", "loss"):
        fail(path, "selection must be 'root' or 'loss'")
    if document.get("search") not in ("conditional", "exhaustive"):
        fail(path, "search must be 'conditional' or 'exhaustive'")
    if not is_list(document.get("cost"), lambda c: is_finite(c) and c > 0, 2, 2):
        fail(path, "cost must be two positive numbers")
    classes = document.get("classes")
    if not (is_list(classes, lambda c: is_int(c) or isinstance(c, str), 2, 2)
            and classes[0] != classes[1]):
        fail(path, "classes must list two different labels")
    n_features = document.get("n_features")
    if not is_int(n_features, 1, 10 ** 9):
        fail(path, "n_features must be a positive integer")
    stumps = document.get("stumps")
    if not isinstance(stumps, list) or not 1 <= len(stumps) <= MAX_STUMPS:
        fail(path, f"stumps must be a list of 1 to {MAX_STUMPS:,}")
    for i, stump in enumerate(stumps):
        if not (isinstance(stump, dict) and set(stump) == {"feature", "threshold",
                                                           "polarity", "alpha"}
                and is_int(stump["feature"], 0, n_features - 1)
                and stump["polarity"] in (1, -1) and is_int(stump["polarity"])
                and is_finite(stump["threshold"], -MAX_THRESHOLD, MAX_THRESHOLD)
                and is_finite(stump["alpha"], -MAX_ALPHA, MAX_ALPHA)):
            fail(path, f"stump {i} is malformed: {str(stump)[:80]}")


def _check_features(path, features, stumps, window):
    kind = features.get("kind")
    if kind == "matrix":
        if set(features) != {"kind"}:
            fail(path, "features of kind 'matrix' hold nothing else")
        return
    if kind != "haar":
        fail(path, f"unknown feature kind {str(kind)[:20]!r}")
    unknown = set(features) - {"kind", "normalization", "pool_index", "rects", "tilted",
                               "channels"}
    if unknown:
        fail(path, f"unknown features field {sorted(unknown)[0][:40]!r}")
    pool_index = features.get("pool_index")
    if pool_index is not None and pool_index != [s["feature"] for s in stumps]:
        fail(path, "features.pool_index must list each stump's feature")
    rects = features.get("rects")
    if not isinstance(rects, list) or len(rects) != len(stumps):
        fail(path, "features.rects must hold one rectangle list per stump")
    tilted = features.get("tilted", [0] * len(stumps))
    if not is_list(tilted, lambda v: v in (0, 1) and not isinstance(v, float),
                   len(stumps), len(stumps)):
        fail(path, "features.tilted must hold 0 or 1 per stump (1: a tilted feature)")
    width, height = window
    for i, feature in enumerate(rects):
        if not isinstance(feature, list) or not 1 <= len(feature) <= 4:
            fail(path, f"feature {i} must have 1 to 4 rectangles")
        for rect in feature:
            if not (isinstance(rect, list) and len(rect) == 5
                    and all(is_int(v, 0, 4096) for v in rect[:4])
                    and is_finite(rect[4], -1e6, 1e6)):
                fail(path, f"feature {i} has a malformed rectangle {str(rect)[:60]}")
            if not _rect_inside(rect, width, height, tilted[i]):
                fail(path, f"feature {i} has a rectangle outside the window: {rect!r}")
    _check_channels(path, features, rects, tilted, window)
    if features.get("normalization") not in ("opencv-variance", "none"):
        fail(path, "features.normalization must be 'opencv-variance' or 'none'")


def _check_channels(path, features, rects, tilted, window) -> None:
    """``features.channels``: per stump the gradient channel its one rectangle sums over
    (0..6, see :mod:`facedetect.haar._channels`), -1 for a Haar feature. A channel
    rectangle keeps off the window's border, where a window cut out and the same window
    scanned in a picture would have different gradients."""
    if "channels" not in features:
        return
    channels = features["channels"]
    if not is_list(channels, lambda v: is_int(v, -1, N_CHANNELS - 1), len(rects), len(rects)):
        fail(path, f"features.channels must hold -1 or a channel 0..{N_CHANNELS - 1} per "
                   "stump")
    width, height = window
    for i, channel in enumerate(channels):
        if channel < 0:
            continue
        if tilted[i] or len(rects[i]) != 1:
            fail(path, f"feature {i}: a channel feature is one upright rectangle")
        x, y, w, h, _ = rects[i][0]
        if not (x >= CHANNEL_BORDER and y >= CHANNEL_BORDER
                and x + w <= width - CHANNEL_BORDER and y + h <= height - CHANNEL_BORDER):
            fail(path, f"feature {i}: a channel rectangle must keep {CHANNEL_BORDER} pixel "
                       f"off the window's border, got {rects[i][0]!r}")


def _rect_inside(rect, width: int, height: int, tilted) -> bool:
    """Whether a rectangle lies in the window: upright, ``x + w <= width`` and ``y + h <=
    height``; tilted (its top corner at ``(x, y)``, ``w`` down-right and ``h``
    down-left), OpenCV's bounds ``x - h >= 0``, ``x + w <= width``, ``y + w + h <= height``."""
    x, y, w, h, _ = rect
    if w < 1 or h < 1:
        return False
    if tilted:
        return x - h >= 0 and x + w <= width and y + w + h <= height
    return x + w <= width and y + h <= height


def _check_training(path, training):
    """The training record: free-form diagnostics, but the fields code reads are typed."""
    if not isinstance(training, dict):
        fail(path, "training must be an object")
    config = training.get("config", {})
    if not isinstance(config, dict):
        fail(path, "training.config must be an object")
    if "data_sha256" in config and not (isinstance(config["data_sha256"], str)
                                        and len(config["data_sha256"]) == 64):
        fail(path, "training.config.data_sha256 must be a SHA-256 in hex")
    if config.get("framing") is not None and not is_finite(config["framing"], 1, 3):
        fail(path, "training.config.framing must be null or a number of eye distances in "
                   "[1, 3]")
    if config.get("window") is not None and not is_list(
            config["window"], lambda side: is_finite(side, 8, 256) and side == int(side), 2, 2):
        fail(path, "training.config.window must be null or two whole sides in 8..256")
    if "heldout_names" in training and not is_list(training["heldout_names"],
                                                   lambda n: isinstance(n, str)):
        fail(path, "training.heldout_names must be a list of file names")


def _check_calibration(path, calibration):
    if calibration is None:
        return
    method = calibration.get("method") if isinstance(calibration, dict) else None
    if method == "sigmoid":
        if not (is_finite(calibration.get("a")) and is_finite(calibration.get("b"))):
            fail(path, "operating_point.calibration: a sigmoid needs finite a and b")
    elif method == "isotonic":
        x, y = calibration.get("x"), calibration.get("y")
        if not (is_list(x, is_finite, 1) and is_list(y, lambda v: is_finite(v, 0, 1), 1)
                and len(x) == len(y) and all(a <= b for a, b in zip(x, x[1:]))
                and all(a <= b for a, b in zip(y, y[1:]))):
            fail(path, "operating_point.calibration: an isotonic map needs equal-length "
                       "increasing x and y lists, y within [0, 1]")
    else:
        fail(path, f"operating_point.calibration: unknown method {str(method)[:20]!r}")


def _check_operating_point(path, point):
    if point is None:
        return
    if not isinstance(point, dict):
        fail(path, "operating_point must be an object")
    if not (is_finite(point.get("threshold"))
            and is_list(point.get("cost"), lambda c: is_finite(c) and c > 0, 2, 2)
            and is_finite(point.get("prior"), 0, 1) and 0 < point["prior"] < 1
            and point.get("rule") in ("expected-cost", "probability")
            and isinstance(point.get("source"), str)
            and point.get("extreme") in (None, "accept-all", "reject-all")
            and point.get("applies_to", "windows") == "windows"):
        fail(path, "operating_point needs a finite threshold, two positive costs, a prior "
                   "in (0, 1), a known rule and source")
    if point.get("calibration_faces", WILD_CALIBRATION) != WILD_CALIBRATION:
        fail(path, f"operating_point.calibration_faces must be {WILD_CALIBRATION!r}")
    count = point.get("n_calibration", 0)
    if not (isinstance(count, int) and not isinstance(count, bool) and count >= 0):
        fail(path, "operating_point.n_calibration must be a whole number of windows")
    if point["rule"] == "probability" and not isinstance(point.get("calibration"), dict):
        fail(path, "operating_point: the rule 'probability' needs its calibration map")
    _check_calibration(path, point.get("calibration"))


# The one value a window operating point calibrated on faces from the wild records.
WILD_CALIBRATION = "held-back faces from the wild"


