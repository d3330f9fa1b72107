"""Model files: bounded JSON parsing, a check of every field before use, atomic saving.

A model file is untrusted input. :func:`parse_json` refuses what Python's ``json`` would let
through (``1e999`` read as infinity, integers of thousands of digits, nesting deep enough to
exhaust the stack), and :func:`check_document` checks every field that any code reads, by
type and range, so that a file either loads as a model that works or is refused with one
line. This module sits below both the trainer and the detector: the file is their contract.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np

from ..errors import FacedetectError
from .._utils.files import read_bounded
from ._schema import ALGORITHM_NAMES, FORMAT, VERSION, check_document, digest

__all__ = ["ALGORITHM_NAMES", "FORMAT", "VERSION", "MAX_MODEL_BYTES", "calibrated_probability",
           "load_document", "reseal", "save_document"]

MAX_MODEL_BYTES = 64 * 2 ** 20   # 300 stumps take 0.1 MB; a 100,000-stump model about 20 MB
MAX_DEPTH = 32                   # a model nests 5 levels deep
MAX_INT_DIGITS = 30              # no field needs more; Python refuses over 4,300 anyway
# What a file may expand to, counted before it is parsed: a 100,000-stump model holds about
# 2.8 million values (the shipped default 42,000), and 4 million empty objects take 0.3 GB.
MAX_VALUES = 4_000_000
MAX_TRAINING_VALUES = 500_000    # the free-form training record (the default's: 9,300)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


class _Refused(Exception):
    pass


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"the number {text[:20]} is out of range")
    return value


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(f"an integer of {len(text)} digits")
    return int(text)


def _parse_constant(text: str):
    raise _Refused(f"{text} is not allowed")


def _check_depth(value) -> None:
    """Refuse nesting deeper than ``MAX_DEPTH`` (iteratively: re-encoding a deep document
    for its checksum would exhaust the stack)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _Refused(f"nested more than {MAX_DEPTH} levels deep")
        children = node.values() if isinstance(node, dict) else node if isinstance(
            node, list) else ()
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, (dict, list)))


def _check_expansion(text: str, max_values: int | None) -> None:
    """Refuse, before parsing, a text of more than ``max_values`` values or nested deeper
    than ``MAX_DEPTH``: counted on the text with its strings emptied (a comma or bracket
    inside a string is no value)."""
    bare = _STRING.sub('""', text)
    values = bare.count(",") + bare.count("[") + bare.count("{")
    if max_values is not None and values > max_values:
        raise _Refused(f"it holds more than {max_values:,} values")
    codes = np.frombuffer(bare.encode("utf-8", "replace"), np.uint8)
    opens = (codes == ord("{")) | (codes == ord("["))
    where = np.flatnonzero(opens | (codes == ord("}")) | (codes == ord("]")))
    if where.size and np.cumsum(np.where(opens[where], 1, -1)).max() > MAX_DEPTH:
        raise _Refused(f"nested more than {MAX_DEPTH} levels deep")


def count_values(value, limit: int) -> int:
    """Values in a parsed document (objects and lists count one each, and their members),
    counted up to ``limit + 1``."""
    stack, count = [value], 0
    while stack and count <= limit:
        node = stack.pop()
        count += 1
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return count


def parse_json(text: str, path, what: str = "model file",
               max_values: int | None = MAX_VALUES) -> object:
    """``text`` as JSON with finite numbers, bounded integers and bounded nesting.

    Parameters
    ----------
    text : str
    path : path or str
        The file's name, for the message.
    what : str
        What the file is, for the message.
    max_values : int or None
        The most values (numbers, strings, objects, lists) the text may hold.

    Returns
    -------
    object
        The parsed value.

    Raises
    ------
    FacedetectError
        Invalid JSON, a number out of float range (``1e999``), an integer of more than
        30 digits, NaN or Infinity, nesting over 32 levels, or more than 4 million values.

    See Also
    --------
    load_document : parses and checks a model file.

    Examples
    --------
    >>> parse_json('{"a": [1, 2.5]}', "m.json")
    {'a': [1, 2.5]}
    >>> parse_json('{"a": 1e999}', "m.json")
    Traceback (most recent call last):
        ...
    facedetect.errors.FacedetectError: m.json: invalid model file: the number 1e999 is out of range
    """
    try:
        _check_expansion(text, max_values)
        value = json.loads(text, parse_float=_parse_float, parse_int=_parse_int,
                           parse_constant=_parse_constant)
        _check_depth(value)
        return value
    except _Refused as error:
        raise FacedetectError(f"{path}: invalid {what}: {error}") from None
    except json.JSONDecodeError as error:
        raise FacedetectError(f"{path}: not a facedetect {what} (invalid JSON: {error.msg} "
                              f"at line {error.lineno})") from None
    except RecursionError:
        raise FacedetectError(f"{path}: invalid {what}: nested too deeply") from None


def calibrated_probability(calibration: dict, scores) -> np.ndarray:
    """P(positive | score) under a map from :func:`fit_calibration`.

    Parameters
    ----------
    calibration : dict
        ``{"method": "sigmoid", "a": a, "b": b}`` or ``{"method": "isotonic", "x": [...],
        "y": [...]}``, as a model file's operating point holds it.
    scores : array
        Window scores.

    Returns
    -------
    array of float

    See Also
    --------
    facedetect.HaarDetectorModel.predict_proba : the same on windows.

    Examples
    --------
    >>> calibrated_probability({"method": "sigmoid", "a": -1.0, "b": 0.0}, [0.0]).tolist()
    [0.5]
    """
    scores = np.asarray(scores, dtype=np.float64)
    if calibration["method"] == "sigmoid":
        return 1.0 / (1.0 + np.exp(np.clip(calibration["a"] * scores + calibration["b"],
                                           -700, 700)))
    return np.interp(scores, calibration["x"], calibration["y"])


def load_document(path) -> dict:
    """Read and validate a model file; any problem is one clear FacedetectError.

    Parameters
    ----------
    path : path
        A facedetect model file (JSON, at most ``MAX_MODEL_BYTES``).

    Returns
    -------
    dict
        The document, its checksum and every field checked.

    Raises
    ------
    FacedetectError
        A missing file, a folder, or a file that is not a sound facedetect model (one line
        naming the field).

    See Also
    --------
    save_document : the other way.
    check_document : the check it applies.

    Examples
    --------
    >>> import importlib.resources
    >>> shipped = importlib.resources.files("facedetect") / "models" / "default.json"
    >>> document = load_document(shipped)
    >>> document["format"], document["version"], document["algorithm"], document["cost"]
    ('facedetect-model', 3, 'db', [1.0, 10.0])
    """
    from pathlib import Path
    path = Path(path)
    try:
        text = read_bounded(path, MAX_MODEL_BYTES, "a model").decode("utf-8")
    except FileNotFoundError:
        raise FacedetectError(f"{path}: model file not found") from None
    except IsADirectoryError:
        raise FacedetectError(f"{path}: is a folder, not a model file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise FacedetectError(f"{path}: cannot read model file ({error})") from None
    document = parse_json(text, path)
    if isinstance(document, dict) and count_values(document.get("training"),
                                                   MAX_TRAINING_VALUES) > MAX_TRAINING_VALUES:
        raise FacedetectError(f"{path}: invalid model file: its training record holds more "
                              f"than {MAX_TRAINING_VALUES:,} values")
    return check_document(document, path)


def reseal(document: dict) -> dict:
    """Recompute the checksum after a deliberate change (e.g. adding rejection thresholds).

    Parameters
    ----------
    document : dict

    Returns
    -------
    dict
        The same document, its ``sha256`` recomputed.

    See Also
    --------
    digest : the checksum.

    Examples
    --------
    >>> document = reseal({"format": "facedetect-model"})
    >>> len(document["sha256"])
    64
    """
    document["sha256"] = digest(document)
    return document


def save_document(path, document: dict):
    """Write a model document atomically as JSON, with a fresh checksum.

    Parameters
    ----------
    path : path
        Where to write (the folder must exist).
    document : dict
        A model document; its ``sha256`` is recomputed.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    OSError
        A folder that does not exist or cannot be written (nothing is left half-written).

    See Also
    --------
    load_document : the other way.
    reseal : the checksum alone.

    Examples
    --------
    >>> import importlib.resources, tempfile
    >>> from pathlib import Path
    >>> shipped = importlib.resources.files("facedetect") / "models" / "default.json"
    >>> document = load_document(shipped)
    >>> document["training"]["note"] = "copied"
    >>> copy = save_document(Path(tempfile.mkdtemp()) / "copy.json", document)
    >>> load_document(copy)["training"]["note"], load_document(copy)["sha256"] != document["sha256"]
    ('copied', True)
    """
    from .._utils.atomic import atomic_write_text
    document = reseal(dict(document))
    return atomic_write_text(path, json.dumps(document, indent=1, allow_nan=False) + "\n")
