"""The UCI sets of the paper's experiments, with the more valuable class as positive.

Positive class per set (the paper: "the more valuable classes according to the original
problems"):

- ``ionosphere``: ``g`` ("good" radar returns, structure in the ionosphere): 225 of 351.
- ``spambase``: legitimate mail (label 0): its documentation says marking good mail as
  spam is the very undesirable error. 2,788 of 4,601.
- ``diabetes`` (Pima Indians): tested positive for diabetes (label 1): 268 of 768.
- ``german`` (Statlog German credit, numeric version): bad customers (label 2): the
  dataset's cost matrix charges 5 for classing a bad customer as good, 1 the other way.
  300 of 1,000.
- ``australian`` (Statlog Australian credit): class ``+`` (label 1), the only choice the
  anonymised documentation allows: 307 of 690.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..errors import DataNotFoundError, FacedetectError

# name -> (folder, file, delimiter, label column, positive label)
UCI_SETS = {
    "ionosphere": ("ionosphere", "ionosphere.data", ",", -1, "g"),
    "spambase": ("spambase", "spambase.data", ",", -1, "0"),
    "diabetes": ("pima-indians-diabetes", "pima-indians-diabetes.data", ",", -1, "1"),
    "german": ("german", "german.data-numeric", None, -1, "2"),
    "australian": ("australian", "australian.dat", None, -1, "1"),
}
UCI_ENV_VAR = "FACEDETECT_UCI"


def _find_uci(root: str | Path | None = None) -> Path:
    """The UCI folder: ``root``, ``$FACEDETECT_UCI``, ``./data/uci``, or beside the CBCL data.

    A folder asked for by name (``root`` or the variable) that does not exist is an error,
    not a reason to use another one."""
    for asked, how in ((root, "the given folder"), (os.environ.get(UCI_ENV_VAR),
                                                      f"${UCI_ENV_VAR}")):
        if asked:
            if not Path(asked).is_dir():
                raise DataNotFoundError(f"{asked}: no such UCI data folder ({how})")
            return Path(asked)
    places = []
    places.append(Path("data") / "uci")
    if os.environ.get("FACEDETECT_DATA"):
        places.append(Path(os.environ["FACEDETECT_DATA"]).parent / "uci")
    for place in places:
        if place.is_dir():
            return place
    raise DataNotFoundError("no UCI data folder found (looked in "
                            + ", ".join(str(p) for p in places)
                            + f"); pass its path or set {UCI_ENV_VAR}")


def load_uci(name: str, root: str | Path | None = None):
    """Features and labels of one UCI set.

    Parameters
    ----------
    name : str
        One of ``UCI_SETS``.
    root : path, optional
        ``--uci``; else ``$FACEDETECT_UCI`` and ``./data/uci``.

    Returns
    -------
    X : (n_samples, n_features) float64 array
    y : (n_samples,) int8 array, 1 for the positive (more valuable) class

    Raises
    ------
    FacedetectError
        An unknown set, an unreadable file or a non-numeric value.

    See Also
    --------
    facedetect.training.AdaBoostDB : boosting on its feature matrix.

    Examples
    --------
    >>> sorted(UCI_SETS)
    ['australian', 'diabetes', 'german', 'ionosphere', 'spambase']
    >>> load_uci("diabetes", root="/nonexistent")     # the Pima set, where it is not
    Traceback (most recent call last):
        ...
    facedetect.errors.DataNotFoundError: /nonexistent: no such UCI data folder (the given folder)
    """
    if name not in UCI_SETS:
        raise FacedetectError(f"unknown UCI set {name!r}; choose from {sorted(UCI_SETS)}")
    folder, filename, delimiter, label_column, positive = UCI_SETS[name]
    path = _find_uci(root) / folder / filename
    try:
        rows = [line.split(delimiter) for line in path.read_text().splitlines()
                if line.strip()]
    except OSError as error:
        raise FacedetectError(f"{path}: cannot read ({error.strerror})") from None
    labels = np.array([row[label_column].strip() for row in rows])
    try:
        features = np.array([[float(v) for v in (row[:label_column] if label_column == -1
                                                  else row)] for row in rows])
    except ValueError as error:
        raise FacedetectError(f"{path}: non-numeric feature value ({error})") from None
    return features, (labels == positive).astype(np.int8)
