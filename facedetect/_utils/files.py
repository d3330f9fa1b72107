"""Reading untrusted files within bounds: regular files only, and never more than a limit.

``/dev/zero`` reports size 0 and never ends; a named pipe blocks forever. Every input
file the package reads whole (models, checkpoints, annotations) goes through
:func:`read_bounded`, and images, which Pillow opens itself, through
:func:`check_regular_file`.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import FacedetectError

# Images above this many pixels are refused before they are decoded: a 12,000 x 12,000
# photograph fits, and takes 1.25 GB at its peak to scan.
DEFAULT_MAX_PIXELS = 150_000_000
# The range of a pixel limit, from Python (``max_pixels``) as from ``detect --max-pixels``.
MAX_PIXELS_LIMITS = {"max_pixels": ("int", 1, 10**11, "[]", True)}


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
        # read(n) reserves n bytes up front: ask for what the file holds (and one byte
        # more, to see it grew past the limit), never for the limit itself.
        size = os.fstat(handle.fileno()).st_size
        chunks, total = [], 0
        while total <= limit:
            chunk = handle.read(min(limit + 1 - total, max(size - total, 0) + 1, 2 ** 26))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        data = b"".join(chunks)
    if len(data) > limit:
        raise FacedetectError(f"{path}: more than the {limit:,} bytes {what} may have")
    return data
