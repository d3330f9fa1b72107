"""Reading untrusted files within bounds: regular files only, and never more than a limit.

``/dev/zero`` reports size 0 and never ends; a named pipe blocks forever. Every input
file the package reads whole (models, checkpoints, annotations) goes through
:func:`read_bounded`, and images, which Pillow opens itself, through
:func:`check_regular_file`.
"""

from __future__ import annotations

from pathlib import Path

from .errors import FacedetectError


def check_regular_file(path) -> Path:
    """``path``, unless it names a device, a pipe or a socket (a folder raises
    ``IsADirectoryError``, a missing file nothing: opening it says so).

    Examples
    --------
    >>> check_regular_file("/dev/zero")
    Traceback (most recent call last):
    ...
    facedetect.errors.FacedetectError: /dev/zero: not a regular file
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(21, "is a folder", str(path))
    if path.exists() and not path.is_file():
        raise FacedetectError(f"{path}: not a regular file")
    return path


def read_bounded(path, limit: int, what: str) -> bytes:
    """The bytes of the regular file ``path``, refused past ``limit`` bytes (``what``
    names the file's kind in the message)."""
    with open(check_regular_file(path), "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise FacedetectError(f"{path}: more than the {limit:,} bytes {what} may have")
    return data
