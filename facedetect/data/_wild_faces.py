"""Faces with eye positions: a folder of face crops and a CSV of landmarks.

The folder holds images of any size (loose crops of one face each) and ``faces.csv`` with
one row per image: ``file`` (relative to the folder) and the eye centres ``leye_x, leye_y,
reye_x, reye_y`` in the image's pixels (image-left eye first). ``source`` and ``subject``
are optional: rows with the same subject are kept on the same side of the held-out split.
Other columns are ignored. ``../shared/datasets/faces`` (26,980 faces from MTFL, Caltech
Web Faces, UTKFace and Extended Yale B) is such a folder; so is a user's own.

A training window is cut from the eyes (:func:`~facedetect.data._face_windows.face_windows`).
Bad rows are skipped one warning line each; the reading is bounded (file sizes, row and
pixel counts).
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import FacedetectError
from .._utils.files import read_bounded
from ..images import read_grey
from ._locate import search_places

ENV_VAR = "FACEDETECT_FACES"
CSV_NAME = "faces.csv"
REQUIRED_COLUMNS = ("file", "leye_x", "leye_y", "reye_x", "reye_y")
MAX_CSV_BYTES = 256 << 20
MAX_ROWS = 2_000_000
# Skipped rows are named one line each up to this many, then counted.
MAX_WARNINGS = 20
MAX_FACE_PIXELS = 4096 * 4096
MIN_EYE_DISTANCE = 4.0     # pixels: closer eyes cannot be framed into a 19x19 window
MIN_FACES = 10
HELDOUT_FRACTION = 0.1
# The next part of the subjects (by the same salted hash), kept from boosting to calibrate
# the window operating point of a model whose window only the wild faces fill.
CALIBRATION_FRACTION = 0.05
_HELDOUT_SALT = b"facedetect-wild-faces-heldout-v1"
# The terms each set of ../shared/datasets/faces states (its PROVENANCE.md).
KNOWN_TERMS = {
    "mtfl": "research use, cite Zhang et al. ECCV 2014 (CUHK, LFW and AFLW photographs)",
    "mtfl-sun2013": "research use (CUHK, LFW and AFLW photographs; Sun et al. CVPR 2013)",
    "caltech-webfaces": "research use (Caltech 10,000 Web Faces, Angelova et al. 2005)",
    "utkface": "non-commercial research use (UTKFace, Zhang et al. CVPR 2017)",
    "extended-yale-b": "research use with citation (Lee, Ho and Kriegman 2005)",
}


@dataclass
class WildFaces:
    """Faces read from a folder with a landmarks CSV.

    Attributes
    ----------
    crops : list of (h, w) uint8 arrays, one face each
    eyes : (n, 4) float64 array, ``leye_x, leye_y, reye_x, reye_y`` in crop pixels
    names : list of str, the ``file`` column
    groups : list of str, ``source/subject`` where the subject is known, else the file
    sources : list of str, the ``source`` column ('' where absent)
    source : str, the folder read
    fingerprint : str, sha256 over the CSV and every image file read
    skipped : int, rows skipped with a warning

    See Also
    --------
    load_wild_faces : what returns it.
    find_faces_folder : where the faces are looked for.

    Examples
    --------
    >>> crops = [np.zeros((40, 40), np.uint8)] * 2
    >>> faces = WildFaces(crops, np.array([[12.0, 15, 28, 15]] * 2), ["a", "b"], ["a", "b"],
    ...                   ["set", "set"], "folder", "0" * 64)
    >>> len(faces), len(faces.subset(np.array([True, False])))
    (2, 1)
    """

    crops: list
    eyes: np.ndarray
    names: list
    groups: list
    sources: list
    source: str
    fingerprint: str
    skipped: int = 0

    def __len__(self) -> int:
        return len(self.names)

    def subset(self, mask: np.ndarray) -> "WildFaces":
        """The faces where ``mask`` is true (same fingerprint: the same folder read)."""
        index = np.flatnonzero(mask)
        return WildFaces([self.crops[i] for i in index], self.eyes[index],
                         [self.names[i] for i in index], [self.groups[i] for i in index],
                         [self.sources[i] for i in index], self.source, self.fingerprint,
                         self.skipped)

    def terms(self) -> str:
        """The use terms of the sets these faces come from, as far as they are known."""
        sources = sorted(set(self.sources))
        known = [f"{s}: {KNOWN_TERMS[s]}" for s in sources if s in KNOWN_TERMS]
        unknown = [s or "(no source column)" for s in sources if s not in KNOWN_TERMS]
        return "; ".join(known + ([f"{', '.join(unknown)}: the terms of their owners"]
                                  if unknown else []))


def _faces_places(explicit: str | os.PathLike | None = None) -> list[tuple[str, Path]]:
    """Every place looked at for faces, in order: ``--faces``, ``$FACEDETECT_FACES``,
    ``./data/faces``, the user cache."""
    return search_places(explicit, "--faces", ENV_VAR, "faces")


def find_faces_folder(explicit: str | os.PathLike | None = None) -> Path | None:
    """The first folder holding ``faces.csv``, or None. A folder named by the flag or the
    environment variable must hold one: a typo does not fall through to another place.

    Parameters
    ----------
    explicit : path, optional
        ``--faces``; else ``$FACEDETECT_FACES``, ``./data/faces`` and the user cache.

    Returns
    -------
    pathlib.Path or None

    Raises
    ------
    FacedetectError
        A named folder that does not exist or holds no faces.csv.

    See Also
    --------
    load_wild_faces : read the folder it finds.

    Examples
    --------
    >>> import tempfile
    >>> find_faces_folder(tempfile.mkdtemp()) is None
    Traceback (most recent call last):
        ...
    facedetect.errors.FacedetectError: ...: no faces.csv in this folder; it needs one row per ...
    """
    for reason, path in _faces_places(explicit):
        if (path / CSV_NAME).is_file():
            return path
        if reason in ("--faces", f"${ENV_VAR}"):
            if not path.is_dir():
                raise FacedetectError(f"{path} ({reason}): no such folder of faces")
            raise FacedetectError(f"{path}: no {CSV_NAME} in this folder; {_CSV_HELP}")
    return None


_CSV_HELP = ("it needs one row per image with the columns " + ", ".join(REQUIRED_COLUMNS)
             + " (eye centres in the image's pixels; source and subject optional)")


def find_faces(explicit: str | os.PathLike | None = None) -> Path | None:
    """Deprecated name of :func:`find_faces_folder` (``find_faces`` means detecting:
    :func:`facedetect.detector.find_faces`); it goes in the next release."""
    import warnings
    warnings.warn("facedetect.data.find_faces is now find_faces_folder; the old name goes "
                  "in the next release", DeprecationWarning, stacklevel=2)
    return find_faces_folder(explicit)


def load_wild_faces(folder: str | os.PathLike, warn=None, progress: bool = False
                    ) -> WildFaces:
    """Read a faces folder: every row of its CSV whose image and eyes are sound.

    A bad row (a missing or non-finite value, eyes closer than ``MIN_EYE_DISTANCE`` or
    outside the image, a file listed twice, missing or unreadable) is skipped with one
    ``warn`` line naming it; fewer than ``MIN_FACES`` sound rows is an error.

    Parameters
    ----------
    folder : path
        A folder of face images and its ``faces.csv``.
    warn : callable, optional
        Takes one line per skipped row (default: ignored).
    progress : bool
        A progress bar on a terminal (26,980 faces take about a minute to read).

    Returns
    -------
    WildFaces

    Raises
    ------
    FacedetectError
        No faces.csv, a CSV too large, eyes listed right eye first, or too few usable rows
        (bad rows are skipped with one warning each).

    See Also
    --------
    find_faces_folder : where it looks.
    WildFaces : what it returns.

    Examples
    --------
    >>> import tempfile
    >>> from PIL import Image
    >>> folder = Path(tempfile.mkdtemp())
    >>> for k in range(10):
    ...     Image.new("L", (40, 40), 100 + k).save(folder / f"{k}.png")
    >>> rows = [f"{k}.png,p{k % 3},12,15,28,15" for k in range(10)]
    >>> _ = (folder / "faces.csv").write_text("file,subject,leye_x,leye_y,reye_x,reye_y\\n"
    ...                                       + "\\n".join(rows) + "\\n")
    >>> faces = load_wild_faces(folder)
    >>> len(faces), faces.eyes[0].tolist(), faces.groups[:2]
    (10, [12.0, 15.0, 28.0, 15.0], ['/p0', '/p1'])
    """
    warn = warn or (lambda line: print(line, file=sys.stderr))
    folder = Path(folder)
    csv_path = folder / CSV_NAME
    if not csv_path.is_file():
        raise FacedetectError(f"{folder}: no {CSV_NAME} in this folder; {_CSV_HELP}")
    raw = read_bounded(csv_path, MAX_CSV_BYTES, "faces CSV")
    digest = hashlib.sha256(raw)
    rows = _csv_rows(raw, csv_path)
    del raw   # the rows are read one at a time: memory follows the faces kept
    crops, eyes, names, groups, sources, seen, skipped = [], [], [], [], [], set(), 0
    image_hashes, inside = [], folder.resolve()
    from .._utils.progress import progress_bar
    for number, row in progress_bar(rows, desc="reading faces", unit="face", leave=False,
                            disable=True if not progress else None):   # None: a terminal
        face = _read_row(row, folder, inside, seen, digest)
        if isinstance(face, str):
            skipped += 1
            if skipped <= MAX_WARNINGS:   # one line each, then a count: never a flood
                # repr-quoted where it holds a line break, so a warning stays one line
                face = face if face.isprintable() else repr(face)
                warn(f"warning: {csv_path}:{number}: {face}; skipped")
            continue
        crops.append(face[0])
        eyes.append(face[1])
        image_hashes.append(face[2])
        names.append(row["file"])
        sources.append((row.get("source") or "").strip())
        groups.append(f"{row.get('source') or ''}/{row['subject']}" if row.get("subject")
                      else row["file"])
    if skipped > MAX_WARNINGS:
        warn(f"warning: {csv_path}: {skipped - MAX_WARNINGS:,} more rows skipped "
             f"({skipped:,} in all)")
    _check_eye_order(eyes, csv_path)
    if len(names) < MIN_FACES:
        raise FacedetectError(f"{csv_path}: {len(names)} usable faces ({skipped} rows "
                              f"skipped); training needs at least {MIN_FACES}")
    return WildFaces(crops, np.array(eyes, dtype=np.float64).reshape(-1, 4), names,
                     merged_groups(groups, image_hashes), sources, str(folder),
                     digest.hexdigest(), skipped)


def _check_eye_order(eyes: list, csv_path: Path) -> None:
    """The eyes are listed image-left first: a face whose first eye lies right of its
    second is read as turned upside down (its window is cut upright, as the AFLW face
    of the shared set needs). Most rows so is a swapped CSV, whose every window would be
    cut upside down: refused."""
    swapped = sum(1 for row in eyes if row[0] > row[2])
    if swapped and swapped * 2 > len(eyes):
        raise FacedetectError(f"{csv_path}: {swapped:,} of {len(eyes):,} rows list the eye "
                              "on the image's right first; list the image-left eye first "
                              "(leye_x < reye_x)")


def merged_groups(groups: list[str], image_hashes: list[bytes]) -> list[str]:
    """Each face's group, where groups that share a byte-identical image are merged into
    one (named by the least of their names): the same photograph listed under two
    subjects or two sources must not fall on both sides of the held-out split.

    Parameters
    ----------
    groups : list of str
        ``source/subject`` (or the file) of each face.
    image_hashes : list of bytes
        A digest of each face's image file.

    Returns
    -------
    list of str

    Examples
    --------
    >>> merged_groups(["a/p1", "b/q7", "a/p2", "b/q7"], [b"x", b"y", b"y", b"z"])
    ['a/p1', 'a/p2', 'a/p2', 'a/p2']
    """
    parent = {group: group for group in groups}

    def root(group):
        while parent[group] != group:
            parent[group] = parent[parent[group]]
            group = parent[group]
        return group

    first_with = {}
    for group, image in zip(groups, image_hashes):
        if image not in first_with:
            first_with[image] = group
            continue
        a, b = root(first_with[image]), root(group)
        if a != b:
            parent[max(a, b)] = min(a, b)
    return [root(group) for group in groups]


def _csv_rows(raw: bytes, path: Path):
    """``(line number, row dict)`` of every data row; a header without the required
    columns is an error."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise FacedetectError(f"{path}: not a UTF-8 text file ({error.reason} at byte "
                              f"{error.start})") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in REQUIRED_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise FacedetectError(f"{path}: missing column(s) {', '.join(missing)}; {_CSV_HELP}")
    return _rows_of(reader, path)


def _rows_of(reader, path: Path):
    """The reader's rows one at a time (a list of them all took 6 GB for a 200 MB CSV of
    empty columns), at most ``MAX_ROWS``."""
    count = 0
    try:
        for row in reader:
            count += 1
            if count > MAX_ROWS:
                raise FacedetectError(f"{path}: more than {MAX_ROWS:,} rows")
            yield reader.line_num, row
    except csv.Error as error:
        raise FacedetectError(f"{path}:{reader.line_num}: {error}") from None


def _read_row(row: dict, folder: Path, inside: Path, seen: set, digest):
    """``(crop, eyes)`` of one CSV row, or the reason it is skipped. ``inside``: the
    folder resolved; ``seen``: the files read so far, resolved (``x``, ``./x`` and
    ``images//x`` are one file)."""
    name = (row.get("file") or "").strip()
    if not name:
        return "no file name"
    try:
        eyes = [float(row[c]) for c in REQUIRED_COLUMNS[1:]]
    except (TypeError, ValueError):
        return "eye positions must be four numbers"
    if not all(math.isfinite(v) for v in eyes):
        return "eye positions must be finite"
    if math.hypot(eyes[2] - eyes[0], eyes[3] - eyes[1]) < MIN_EYE_DISTANCE:
        return f"the eyes are closer than {MIN_EYE_DISTANCE:g} pixels"
    path = folder / name
    if "\0" in name or ".." in Path(name).parts or Path(name).is_absolute():
        return f"{name!r}: the file must lie inside the faces folder"
    try:
        real = path.resolve()
    except (OSError, RuntimeError) as error:
        return f"{name}: {error}"
    if not real.is_relative_to(inside):   # a link out of the folder
        return f"{name!r}: the file must lie inside the faces folder (it links outside)"
    if real in seen:
        return f"{name} is listed twice"
    try:
        data = read_bounded(path, 64 << 20, "face image")
        crop = read_grey(path, max_pixels=MAX_FACE_PIXELS)
    except (FacedetectError, OSError, ValueError) as error:
        return f"{name}: {error}"
    height, width = crop.shape
    if not all(0 <= x < width and 0 <= y < height for x, y in (eyes[:2], eyes[2:])):
        return f"{name}: the eyes lie outside its {width}x{height} pixels"
    seen.add(real)
    image_hash = hashlib.sha256(data).digest()
    digest.update(name.encode() + b"\0" + image_hash)
    return crop, eyes, image_hash


def heldout_mask(groups: list[str], fraction: float = HELDOUT_FRACTION) -> np.ndarray:
    """True for the faces never trained on: a fixed ``fraction`` of the groups (subjects
    where known), chosen by a salted hash of the group's name, so the same person is on
    one side only and the split does not move when rows are added or removed.

    Parameters
    ----------
    groups : list of str
        The group of each face (:attr:`WildFaces.groups`).
    fraction : float
        The share of the groups held out (default ``HELDOUT_FRACTION``, 0.1).

    Returns
    -------
    (n,) bool array
        True for the faces held out.

    See Also
    --------
    load_wild_faces : reads the faces and their groups.
    calibration_mask : the next part of the groups, which calibrates.

    Examples
    --------
    >>> mask = heldout_mask([f"person{k}" for k in range(10000)])
    >>> bool(0.09 < mask.mean() < 0.11)
    True
    >>> bool(heldout_mask(["a", "b", "a"])[0] == heldout_mask(["a", "b", "a"])[2])
    True
    """
    cut = int(fraction * 2**32)
    return np.array([int.from_bytes(hashlib.sha256(_HELDOUT_SALT + g.encode()).digest()[:4],
                                    "big") < cut for g in groups], dtype=bool)


def calibration_mask(groups: list[str], fraction: float = CALIBRATION_FRACTION
                     ) -> np.ndarray:
    """True for the faces that calibrate rather than train: the ``fraction`` of the
    groups next after the held-out part on the same salted hash (so never held out, and
    a subject on one side only).

    Examples
    --------
    >>> groups = [f"person{k}" for k in range(10000)]
    >>> mask = calibration_mask(groups)
    >>> bool(0.04 < mask.mean() < 0.06), bool((mask & heldout_mask(groups)).any())
    (True, False)
    """
    return heldout_mask(groups, HELDOUT_FRACTION + fraction) & ~heldout_mask(groups)
