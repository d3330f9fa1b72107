"""OpenCV's ``.vec`` files: the positive samples ``opencv_createsamples`` writes and
``opencv_traincascade`` reads.

The format, as OpenCV's ``createsamples/utility.cpp`` writes it (little-endian): a header
of the sample count (int32), the vector size ``w * h`` (int32) and two int16 zeros; then
each sample as one zero byte and its ``w * h`` grey levels as int16, row by row. The file
does not hold ``w`` and ``h``: the reader is told them (``-w``, ``-h``), and only their
product is checked, as OpenCV checks it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .._utils.atomic import atomic_write_bytes
from .._utils.files import read_bounded
from ..errors import FacedetectError

__all__ = ["read_vec", "write_vec"]

HEADER = np.dtype([("count", "<i4"), ("vecsize", "<i4"), ("low", "<i2"), ("high", "<i2")])
MAX_VEC_BYTES = 4 << 30      # 100,000 samples of 100x100 take 2 GB
MAX_VEC_SAMPLES = 1_000_000


def _sample_dtype(vecsize: int) -> np.dtype:
    return np.dtype([("zero", "u1"), ("pixels", "<i2", (vecsize,))])


def read_vec(path: str | Path, window: tuple[int, int]) -> np.ndarray:
    """The samples of a ``.vec`` file as ``(n, h, w)`` uint8 windows.

    Parameters
    ----------
    path : path
    window : (int, int)
        The samples' width and height (``opencv_createsamples -w -h``).

    Returns
    -------
    (n, h, w) uint8 array

    Raises
    ------
    FacedetectError
        A file that is not a ``.vec`` file of this window size: its header, its length or
        a pixel out of 0..255, named in one line.

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "pos.vec"
    >>> samples = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    >>> _ = write_vec(path, samples)
    >>> bool((read_vec(path, (4, 3)) == samples).all())
    True
    >>> read_vec(path, (5, 3))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    facedetect.errors.FacedetectError: ...: its samples hold 12 pixels, not 5x3 = 15 (-w and ...)
    """
    path = Path(path)
    width, height = window
    try:
        data = read_bounded(path, MAX_VEC_BYTES, "a .vec file")
    except FileNotFoundError:
        raise FacedetectError(f"{path}: no such .vec file") from None
    except IsADirectoryError:
        raise FacedetectError(f"{path}: is a folder, not a .vec file") from None
    if len(data) < HEADER.itemsize:
        raise FacedetectError(f"{path}: not a .vec file (shorter than its header)")
    header = np.frombuffer(data, HEADER, count=1)[0]
    count, vecsize = int(header["count"]), int(header["vecsize"])
    if not 0 < vecsize <= 256 * 256 or not 0 <= count <= MAX_VEC_SAMPLES:
        raise FacedetectError(f"{path}: not a .vec file (it says {count} samples of "
                              f"{vecsize} pixels)")
    if vecsize != width * height:
        raise FacedetectError(f"{path}: its samples hold {vecsize} pixels, not {width}x"
                              f"{height} = {width * height} (-w and -h must be those it was "
                              "made with)")
    sample = _sample_dtype(vecsize)
    expected = HEADER.itemsize + count * sample.itemsize
    if len(data) < expected:
        raise FacedetectError(f"{path}: truncated: {count:,} samples need {expected:,} "
                              f"bytes, the file has {len(data):,}")
    pixels = np.frombuffer(data, sample, count=count, offset=HEADER.itemsize)["pixels"]
    if pixels.size and (pixels.min() < 0 or pixels.max() > 255):
        raise FacedetectError(f"{path}: a sample pixel outside 0..255 (a .vec file holds "
                              "grey levels)")
    return pixels.astype(np.uint8).reshape(count, height, width)


def write_vec(path: str | Path, samples: np.ndarray) -> Path:
    """Write ``(n, h, w)`` uint8 samples as a ``.vec`` file, atomically, byte for byte as
    ``opencv_createsamples`` writes them.

    Examples
    --------
    >>> import tempfile
    >>> path = write_vec(Path(tempfile.mkdtemp()) / "one.vec", np.full((1, 2, 2), 7, np.uint8))
    >>> path.read_bytes().hex()
    '010000000400000000000000000700070007000700'
    """
    samples = np.asarray(samples)
    if samples.ndim != 3 or samples.dtype != np.uint8 or not len(samples):
        raise FacedetectError("samples must be a non-empty (n, h, w) uint8 array")
    count, height, width = samples.shape
    header = np.zeros(1, HEADER)
    header["count"], header["vecsize"] = count, width * height
    body = np.zeros(count, _sample_dtype(width * height))
    body["pixels"] = samples.reshape(count, -1)
    return atomic_write_bytes(path, header.tobytes() + body.tobytes())
