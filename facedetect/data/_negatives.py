"""Face-free pictures for hard-negative mining: where they are and which are held out.

The folder is found the way the CBCL data is: ``--negatives``, ``$FACEDETECT_NEGATIVES``,
``./data/negatives`` and the user cache, the first that exists; an explicit place that
does not exist is an error, never a silent fall-through. A folder holding ``images/`` means
that sub-folder.

A fixed fifth of the pictures, chosen by a hash of the file name, is never mined nor
calibrated on: it only measures false alarms per megapixel. Of the others, one in four
sets the model's operating points and the rest are mined. The choice depends on the name
only, so adding pictures never moves one between the parts.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ..errors import DataNotFoundError, FacedetectError
from ._locate import search_places

ENV_VAR = "FACEDETECT_NEGATIVES"
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".pgm", ".ppm", ".pbm", ".bmp", ".tif", ".tiff",
                  ".webp")
HELD_OUT_SHARE = 5  # one picture in five
# Of the other pictures, one in this many sets the operating points (image, OpenCV's)
# rather than being mined: the held-out fifth only measures.
CALIBRATION_SHARE = 4


def _negative_places(explicit: str | os.PathLike | None = None) -> list[tuple[str, Path]]:
    return search_places(explicit, "--negatives", ENV_VAR, "negatives")


def find_negatives(explicit: str | os.PathLike | None = None) -> Path | None:
    """The negatives folder, or None when no place has one (the caller falls back).

    The places are tried in order: ``explicit`` (``--negatives``),
    ``$FACEDETECT_NEGATIVES``, ``./data/negatives`` and the user cache. The first that is
    a folder is returned, or its ``images/`` sub-folder where it has one.

    Parameters
    ----------
    explicit : path, optional
        ``--negatives``; else the other places are tried.

    Returns
    -------
    pathlib.Path or None
        The folder of face-free pictures, or None when no place is a folder.

    Raises
    ------
    DataNotFoundError
        When ``--negatives`` or ``$FACEDETECT_NEGATIVES`` names a place that is not a folder.

    See Also
    --------
    negative_files : the pictures in the folder it finds.
    find_cbcl : the same search for the CBCL data.

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "images").mkdir()
    >>> find_negatives(root) == root / "images"
    True
    >>> try:
    ...     find_negatives("no-such-folder")
    ... except DataNotFoundError as error:
    ...     print(error)
    --negatives no-such-folder: no such folder of face-free pictures
    """
    for reason, path in _negative_places(explicit):
        if path.is_dir():
            return path / "images" if (path / "images").is_dir() else path
        if reason != "./data/negatives" and reason != "user cache":
            raise DataNotFoundError(f"{reason} {path}: no such folder of face-free pictures")
    return None


def negative_files(folder: str | os.PathLike) -> list[Path]:
    """The picture files of a folder (by suffix), in name order.

    A file counts as a picture when its suffix, in any case, is one of
    ``IMAGE_SUFFIXES``. Sub-folders are not searched.

    Parameters
    ----------
    folder : path
        The negatives folder (:func:`find_negatives`).

    Returns
    -------
    list of pathlib.Path
        The picture files, sorted.

    Raises
    ------
    FacedetectError
        When the folder cannot be listed.

    See Also
    --------
    find_negatives : where the folder is.
    split_negatives : the training part and the held-out fifth of the files.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> for name in ("b.JPG", "a.png", "notes.txt"):
    ...     _ = (folder / name).write_bytes(b"")
    >>> [path.name for path in negative_files(folder)]
    ['a.png', 'b.JPG']
    """
    try:
        return sorted(p for p in Path(folder).iterdir()
                      if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
    except OSError as error:
        raise FacedetectError(f"{folder}: cannot list the negatives folder "
                              f"({error.strerror})") from None


def is_held_out(path: Path) -> bool:
    """Whether a picture belongs to the held-out fifth (by its name alone).

    Examples
    --------
    >>> is_held_out(Path("a/neg-0001.jpg")) == is_held_out(Path("b/neg-0001.jpg"))
    True
    """
    return _name_hash(path) % HELD_OUT_SHARE == 0


def _name_hash(path: Path) -> int:
    digest = hashlib.sha256(Path(path).name.encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(digest[:4], "little")


def split_negatives(files: list[Path]) -> tuple[list[Path], list[Path]]:
    """``(training part, held-out fifth)``: the held-out fifth measures false alarms and
    is never trained or calibrated on.

    A picture is held out when a hash of its file name falls in one part in
    ``HELD_OUT_SHARE`` (:func:`is_held_out`). The folder does not matter, and adding or
    removing pictures never moves another between the parts.

    Parameters
    ----------
    files : list of pathlib.Path
        The pictures (:func:`negative_files`).

    Returns
    -------
    training : list of pathlib.Path
        The pictures not held out, in their given order.
    held : list of pathlib.Path
        The held-out pictures, in their given order.

    See Also
    --------
    split_training_negatives : the training part into its mining and calibration parts.
    negative_files : the pictures of a folder.

    Examples
    --------
    >>> files = [Path(f"neg-{k:04d}.jpg") for k in range(1000)]
    >>> training, held = split_negatives(files)
    >>> len(training), len(held)
    (811, 189)
    >>> [path.name for path in held[:3]]
    ['neg-0000.jpg', 'neg-0004.jpg', 'neg-0008.jpg']
    """
    held = [p for p in files if is_held_out(p)]
    return [p for p in files if not is_held_out(p)], held


def split_training_negatives(files: list[Path]) -> tuple[list[Path], list[Path]]:
    """``(mining part, calibration part)`` of the training part: one picture in
    ``CALIBRATION_SHARE`` (by its name alone) chooses the operating points.

    The choice uses the same hash of the file name as :func:`split_negatives`, so it
    does not move when pictures are added or removed.

    Parameters
    ----------
    files : list of pathlib.Path
        The training part (the first list :func:`split_negatives` returns).

    Returns
    -------
    mining : list of pathlib.Path
        The pictures mined for hard negatives, in their given order.
    calibration : list of pathlib.Path
        The pictures that set the operating points, in their given order.

    See Also
    --------
    split_negatives : the training part and the held-out fifth.

    Examples
    --------
    >>> names = [Path(f"neg-{k:04d}.jpg") for k in range(1000)]
    >>> mining, calibration = split_training_negatives(split_negatives(names)[0])
    >>> len(mining) + len(calibration) == len(split_negatives(names)[0])
    True
    >>> bool(0.15 < len(calibration) / len(names) < 0.25)
    True
    """
    chosen = [(_name_hash(p) // HELD_OUT_SHARE) % CALIBRATION_SHARE == 0 for p in files]
    return ([p for p, c in zip(files, chosen) if not c],
            [p for p, c in zip(files, chosen) if c])


def fingerprint(files: list[Path]) -> str:
    """SHA-256 of the names and sizes: a resume refuses a folder that changed."""
    digest = hashlib.sha256()
    for path in files:
        try:
            size = path.stat().st_size
        except OSError:
            size = -1   # vanished or unreadable: mining will say so, picture by picture
        digest.update(f"{path.name}\0{size}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()
