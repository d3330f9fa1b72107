"""Positive samples of any object for cascade training, resized to the detector's window.

Two sources, as opencv_traincascade's users have them:

- a folder of cropped samples of any size (``--positives DIR``);
- an opencv_createsamples info file (``--positives-info FILE``): one line per image,
  ``path count x y w h [x y w h ...]``, the path relative to the info file's folder.

Every sample is resized to the window as ``opencv_createsamples`` resizes it
(``INTER_AREA`` to shrink, ``INTER_LINEAR_EXACT`` to enlarge). A sample whose aspect ratio is
more than 20% off the window's is still used, with a warning: it comes out stretched.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from ..errors import FacedetectError
from .._utils.files import check_regular_file, read_bounded
from ..images import read_grey
from ._negatives import IMAGE_SUFFIXES

ASPECT_TOLERANCE = 0.2
MAX_INFO_BYTES = 64 << 20
# Far beyond opencv_traincascade's usual thousands; refused before any image is read.
MAX_SAMPLES = 100_000
# Pixels the pictures of one info file may hold together (each is decoded once): about
# 20 s of decoding. The 480-megapixel negative pictures of the recipe would fit.
MAX_INFO_PIXELS = 2_000_000_000
MAX_BOX_VALUE = 10**6   # a side of a picture under the pixel limit is shorter
# Haar features a window may have: 36x36 has 816,264 (24x24 162,336), 200x200 769 million,
# which no training could hold.
MAX_POOL_FEATURES = 1_000_000
# The five feature types' base sizes (width, height), as :mod:`facedetect.haar` has them.
_BASE_SIZES = ((2, 1), (1, 2), (3, 1), (1, 3), (2, 2))


@dataclass
class PositiveSet:
    """Positive windows of one object, with where they came from."""

    images: np.ndarray    # (n, height, width) uint8
    names: list[str]
    source: str


def parse_window(text: str) -> tuple[int, int]:
    """``"24x24"`` as ``(24, 24)``: a width and a height of 8..256 pixels.

    Examples
    --------
    >>> parse_window("24x20")
    (24, 20)
    """
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise FacedetectError(f"window must be WIDTHxHEIGHT, got {text!r}") from None
    if not (8 <= width <= 256 and 8 <= height <= 256):
        raise FacedetectError(f"window sides must be 8..256 pixels, got {text!r}")
    if _pool_size(width, height) > MAX_POOL_FEATURES:
        raise FacedetectError(f"a {width}x{height} window has {_pool_size(width, height):,} "
                              f"Haar features, more than the {MAX_POOL_FEATURES:,} training "
                              "can hold: choose a smaller window (24x24 has 162,336)")
    return width, height


def _pool_size(width: int, height: int) -> int:
    """The number of Haar features of a window, counted without building them.

    Examples
    --------
    >>> _pool_size(19, 19), _pool_size(24, 24)
    (63960, 162336)
    """
    return sum((width - w + 1) * (height - h + 1)
               for base_w, base_h in _BASE_SIZES
               for w in range(base_w, width + 1, base_w)
               for h in range(base_h, height + 1, base_h))


def _resized(sample: np.ndarray, window, label: str, warn) -> np.ndarray:
    height, width = sample.shape
    if width < 1 or height < 1:
        raise FacedetectError(f"{label}: an empty sample")
    aspect = (width / height) / (window[0] / window[1])
    if abs(aspect - 1.0) > ASPECT_TOLERANCE:
        warn(f"warning: {label}: aspect ratio {width}x{height} is {abs(aspect - 1):.0%} off "
             f"the window's {window[0]}x{window[1]}; it is stretched")
    # OpenCV's rule (opencv_createsamples -info): area averages to shrink, bilinear to
    # enlarge, so that a sample is the same here as in its .vec file, byte for byte.
    shrinks = width >= window[0] and height >= window[1]
    return cv2.resize(sample, window, interpolation=cv2.INTER_AREA if shrinks
                      else cv2.INTER_LINEAR_EXACT)


def load_positive_folder(folder, window, warn=None) -> PositiveSet:
    """Every image in ``folder`` (sorted by name), grey and resized to ``window``.

    Examples
    --------
    >>> import tempfile
    >>> from PIL import Image
    >>> folder = Path(tempfile.mkdtemp())
    >>> Image.new("L", (40, 40), 200).save(folder / "a.png")
    >>> load_positive_folder(folder, (24, 24)).images.shape
    (1, 24, 24)
    """
    warn = warn or (lambda line: print(line, file=sys.stderr))
    folder = Path(folder)
    if not folder.is_dir():
        raise FacedetectError(f"{folder}: no such folder of positive samples")
    paths = sorted(p for p in folder.iterdir()
                   if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
    _check_count(len(paths), folder)
    if not paths:
        raise FacedetectError(f"{folder}: no images ({', '.join(IMAGE_SUFFIXES)})")
    images = [_resized(read_grey(p), window, str(p), warn) for p in paths]
    return PositiveSet(np.stack(images), [p.name for p in paths], str(folder))


def load_positives_info(path, window, warn=None) -> PositiveSet:
    """The boxes of an opencv_createsamples info file, cut out and resized to ``window``.

    Examples
    --------
    >>> import tempfile
    >>> from PIL import Image
    >>> folder = Path(tempfile.mkdtemp())
    >>> Image.new("L", (100, 80), 90).save(folder / "img.png")
    >>> _ = (folder / "info.dat").write_text("img.png 2 10 10 30 30 50 20 40 40\\n")
    >>> found = load_positives_info(folder / "info.dat", (24, 24))
    >>> found.images.shape, found.names
    ((2, 24, 24), ['img.png#0', 'img.png#1'])
    """
    warn = warn or (lambda line: print(line, file=sys.stderr))
    path = Path(path)
    try:   # utf-8-sig: a file saved with a byte-order mark does not keep it in its first path
        text = read_bounded(path, MAX_INFO_BYTES, "info file").decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise FacedetectError(f"{path}: not a UTF-8 text file ({error.reason} at byte "
                              f"{error.start})") from None
    entries = [(number, *_info_line(line, number, path))
               for number, line in enumerate(text.splitlines(), 1)
               if line.strip() and not line.lstrip().startswith("#")]
    _check_count(sum(len(boxes) for _, _, boxes in entries), path)
    by_picture: dict[str, list] = {}   # each picture decoded once, however many lines name it
    for number, image_path, boxes in entries:
        by_picture.setdefault(image_path, []).append((number, boxes))
    _check_pixels(path, by_picture)
    samples = {}
    for image_path, lines in by_picture.items():
        picture = _info_picture(path, lines[0][0], image_path)
        for number, boxes in lines:
            for k, (x, y, w, h) in enumerate(boxes):
                if x + w > picture.shape[1] or y + h > picture.shape[0]:
                    raise FacedetectError(
                        f"{path}:{number}: box {k + 1} ({x} {y} {w} {h}) lies outside "
                        f"{image_path} ({picture.shape[1]}x{picture.shape[0]})")
                label = f"{path}:{number} box {k + 1}"
                samples[number, k] = (_resized(picture[y:y + h, x:x + w], window, label,
                                               warn), f"{image_path}#{k}")
    if not samples:
        raise FacedetectError(f"{path}: no samples")
    ordered = [samples[key] for key in sorted(samples)]   # in the file's order, as before
    return PositiveSet(np.stack([image for image, _ in ordered]),
                       [name for _, name in ordered], str(path))


def _info_picture(path: Path, number: int, image_path: str) -> np.ndarray:
    """The grey picture an info line names, or one line naming the info file and line."""
    try:
        return read_grey(path.parent / image_path)
    except FacedetectError as error:
        raise FacedetectError(f"{path}:{number}: {error}") from None


def _check_pixels(path: Path, by_picture: dict) -> None:
    """Refuse, from the pictures' headers, an info file whose pictures hold more than
    ``MAX_INFO_PIXELS`` pixels together: their decoding is what costs."""
    total = 0
    for image_path, lines in by_picture.items():
        try:
            with Image.open(check_regular_file(path.parent / image_path)) as image:
                total += image.width * image.height
        except (OSError, ValueError, SyntaxError, FacedetectError):
            _info_picture(path, lines[0][0], image_path)   # says what is wrong with it
            raise
        if total > MAX_INFO_PIXELS:
            raise FacedetectError(
                f"{path}: its pictures hold more than {MAX_INFO_PIXELS / 1e6:,.0f} "
                f"megapixels (at line {lines[0][0]}, {image_path}); use fewer or smaller "
                "pictures")


def _check_count(count: int, where) -> None:
    if count > MAX_SAMPLES:
        raise FacedetectError(f"{where}: {count:,} positive samples, more than the "
                              f"{MAX_SAMPLES:,} a cascade takes; use a subset")


def _info_line(line: str, number: int, path: Path):
    """``(image path, [(x, y, w, h), ...])`` of one info line, or one clear error."""
    parts = line.split()
    try:
        count = int(parts[1])
        values = [int(v) for v in parts[2:]]
    except (IndexError, ValueError):
        raise FacedetectError(f"{path}:{number}: expected 'path count x y w h ...', got "
                              f"{_cut(line.strip())!r}") from None
    if count < 1:
        raise FacedetectError(f"{path}:{number}: {parts[0][:60]} has a box count of "
                              f"{_cut(parts[1])}; a line names at least one box")
    if len(values) != 4 * count:
        raise FacedetectError(f"{path}:{number}: {_cut(parts[1])} boxes need "
                              f"{_cut(str(4 * count))} numbers, got {len(values)}")
    boxes = [tuple(values[i:i + 4]) for i in range(0, len(values), 4)]
    if any(v < 0 for v in values) or any(w < 1 or h < 1 for _, _, w, h in boxes):
        raise FacedetectError(f"{path}:{number}: boxes need x, y >= 0 and w, h >= 1")
    too_big = next((v for v in values if v > MAX_BOX_VALUE), None)
    if too_big is not None:
        raise FacedetectError(f"{path}:{number}: the box value {_cut(str(too_big))} is "
                              f"beyond any picture (at most {MAX_BOX_VALUE:,})")
    return parts[0], boxes


def _cut(text: str, limit: int = 20) -> str:
    """A value cut short for a message."""
    return text if len(text) <= limit else text[:limit] + "..."
