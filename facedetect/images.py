"""Reading images for detection: many formats and modes, EXIF orientation, 16-bit."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from .errors import FacedetectError
from ._utils.files import DEFAULT_MAX_PIXELS, check_regular_file
from ._utils.png import png_data_shortfall

__all__ = ["DEFAULT_MAX_PIXELS", "read_colour", "read_grey", "read_picture", "to_grey"]

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".gif", ".bmp", ".tif", ".tiff", ".pgm", ".ppm",
                  ".pbm", ".webp")
# Pillow's own bomb guard only warns up to 2x its limit; ours refuses above a limit the user
# can raise (``detect --max-pixels``), read from the header before anything is decoded.
Image.MAX_IMAGE_PIXELS = None


BLOCK_ROWS = 256   # wide and transparent images are converted this many rows at a time


def _by_rows(values: np.ndarray, convert) -> np.ndarray:
    """``convert`` applied to blocks of rows of ``values`` into one uint8 image: the float
    intermediates of a 150-megapixel image stay a few megabytes, not gigabytes."""
    out = np.empty(values.shape[:2], np.uint8)
    for start in range(0, len(values), BLOCK_ROWS):
        out[start:start + BLOCK_ROWS] = convert(values[start:start + BLOCK_ROWS])
    return out


def _wide_to_grey(image: Image.Image) -> np.ndarray:
    """16-bit, 32-bit integer and float pixels scaled to 8 bits by their full range."""
    values = np.asarray(image)
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        # One NaN would make the whole range NaN: a black image and no faces, silently.
        raise ValueError("it has NaN or infinite pixels")
    low, high = (float(values.min()), float(values.max())) if values.size else (0.0, 0.0)
    if image.mode.startswith("I;16") or (image.mode == "I" and image.format == "PPM"):
        # Pillow reads a PGM of maxval above 255 as mode I scaled to 0..65535, however
        # dark its pixels; other 32-bit images say their range only by their values.
        bottom, top = 0.0, 65535.0
    else:
        # The usual range the values fit (float 0..1, 8 or 16 bits); failing all of them,
        # their own span, so that no pixel is clipped and no image comes out flat.
        spans = ((0.0, 1.0), (0.0, 255.0), (0.0, 65535.0)) if image.mode == "F" \
            else ((0.0, 255.0), (0.0, 65535.0))
        bottom, top = next(((a, b) for a, b in spans if a <= low and high <= b),
                           (low, max(high, low + 1.0)))
    return _by_rows(values, lambda block: np.clip(
        np.rint((block.astype(np.float64) - bottom) / (top - bottom) * 255.0), 0, 255))


def _on_white(image: Image.Image) -> np.ndarray:
    """Grey of an image with transparency, its transparent pixels white (as a viewer shows
    them on a page): ``a * grey + (1 - a) * 255``, blended in grey, which equals blending
    each colour first since grey is a weighted mean of the colours."""
    width, height = image.size
    out = np.empty((height, width), np.uint8)
    for top in range(0, height, BLOCK_ROWS):
        # Converted a strip at a time: no full-size copy of the decoded pixels.
        strip = np.asarray(image.crop((0, top, width, min(height, top + BLOCK_ROWS)))
                           .convert("LA"), dtype=np.float32)
        out[top:top + BLOCK_ROWS] = np.rint(
            (strip[..., 0] * strip[..., 1] + 255.0 * (255.0 - strip[..., 1])) / 255.0)
    return out


def to_grey(image: Image.Image) -> np.ndarray:
    """uint8 grey pixels of any Pillow image: palette, alpha, 16-bit and float modes too.

    Wide modes are scaled to 8 bits by their full range (16-bit by 1/257), not clipped.

    Parameters
    ----------
    image : PIL.Image.Image

    Returns
    -------
    (h, w) uint8 array

    Raises
    ------
    ValueError
        A float image with NaN or infinite pixels, or a mode Pillow cannot convert to
        grey.

    See Also
    --------
    read_grey : from a file.

    Examples
    --------
    >>> import numpy as np
    >>> from PIL import Image
    >>> to_grey(Image.fromarray(np.array([[0, 65535, 32896]], np.uint16))).tolist()
    [[0, 255, 128]]
    >>> to_grey(Image.new("RGBA", (2, 1), (0, 0, 0, 0))).tolist()   # transparent: white
    [[255, 255]]
    """
    if image.mode.startswith("I;16") or image.mode in ("I", "F"):
        return _wide_to_grey(image)
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in
                                                  image.info):
        return _on_white(image)
    return np.asarray(image.convert("L"), dtype=np.uint8)


def read_grey(path: str | Path, max_pixels: int | None = DEFAULT_MAX_PIXELS) -> np.ndarray:
    """A file's pixels as a uint8 grey array, upright according to its EXIF orientation.

    An image whose header declares more than ``max_pixels`` pixels is refused before it
    is decoded (None: no limit).

    Parameters
    ----------
    path : path
    max_pixels : int or None

    Returns
    -------
    (h, w) uint8 array

    Raises
    ------
    FacedetectError
        A missing file, a folder, a file that is not an image, or one over the pixel limit.

    See Also
    --------
    to_grey : an array or PIL image in memory.
    read_colour : the colour image.

    Examples
    --------
    >>> import tempfile
    >>> from PIL import Image
    >>> path = Path(tempfile.mkdtemp()) / "grey.png"
    >>> Image.new("RGB", (4, 2), (255, 0, 0)).save(path)
    >>> grey = read_grey(path)
    >>> grey.shape, grey.dtype.name, int(grey[0, 0])
    ((2, 4), 'uint8', 76)
    """
    path = Path(path)
    try:
        with Image.open(check_regular_file(path)) as image:
            width, height = image.size
            if max_pixels is not None and width * height > max_pixels:
                raise FacedetectError(
                    f"{path}: {width}x{height} is {width * height / 1e6:.0f} megapixels, above "
                    f"the limit of {max_pixels / 1e6:g} (detect --max-pixels, or the "
                    "max_pixels argument, raises it; shrink the image for training)")
            source_format = image.format
            image = ImageOps.exif_transpose(image)
            image.format = source_format   # a turned copy forgets it; to_grey reads it
            image.load()
            shortfall = png_data_shortfall(path) if source_format == "PNG" else None
            if shortfall:   # Pillow fills the missing rows with black and says nothing
                raise OSError(f"image file is truncated: its image data holds "
                              f"{shortfall[0]:,} of {shortfall[1]:,} bytes")
            return to_grey(image)
    except FileNotFoundError:
        raise FacedetectError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise FacedetectError(f"{path}: is a folder") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as error:
        raise FacedetectError(f"{path}: not a readable image ({error})") from None


def read_picture(item, warn=None) -> np.ndarray | None:
    """A picture given as a path or as pixels, in grey: a path read by :func:`read_grey`
    (None, with one line to ``warn``, where it cannot be), anything else as it is.

    Training's mining and the calibration of operating points read their pictures through
    this, so that a picture one skips the other skips too, with the same line.

    Parameters
    ----------
    item : path or (h, w) uint8 array
    warn : callable, optional
        Called with ``"skipping <why>"`` for a path that cannot be read; default: dropped.

    Returns
    -------
    (h, w) uint8 array or None

    See Also
    --------
    read_grey : the reader, which raises instead.

    Examples
    --------
    >>> lines = []
    >>> read_picture("no-such-picture.png", lines.append) is None, lines
    (True, ['skipping no-such-picture.png: no such file'])
    >>> read_picture(np.zeros((2, 3), np.uint8)).shape
    (2, 3)
    """
    if not isinstance(item, (str, os.PathLike)):
        return item
    try:
        return read_grey(item)
    except FacedetectError as error:
        if warn is not None:
            warn(f"skipping {error}")
        return None


def read_colour(path: str | Path, max_pixels: int | None = DEFAULT_MAX_PIXELS
                ) -> np.ndarray | None:
    """A file's pixels as ``(h, w, 3)`` uint8 RGB, upright as :func:`read_grey` reads
    them, for drawing on; None for a grey image (or one that will not convert).

    Parameters
    ----------
    path : path
    max_pixels : int or None
        None is returned for a file above this many pixels.

    Returns
    -------
    (h, w, 3) uint8 array or None

    Raises
    ------
    FacedetectError
        A missing file, a folder, a file that is not an image, or one over the pixel limit.

    See Also
    --------
    read_grey : the grey image.

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "red.png"
    >>> Image.new("RGB", (4, 2), (255, 0, 0)).save(path)
    >>> read_colour(path)[0, 0].tolist()
    [255, 0, 0]
    """
    path = Path(path)
    try:
        with Image.open(check_regular_file(path)) as image:
            if image.mode in ("1", "L", "LA", "I", "I;16", "F") or (
                    max_pixels is not None and image.width * image.height > max_pixels):
                return None
            return np.asarray(ImageOps.exif_transpose(image).convert("RGB"), dtype=np.uint8)
    except (OSError, ValueError, SyntaxError):
        return None


def expand_inputs(paths, skipped: list | None = None) -> list[Path]:
    """Files as given, folders expanded to their images (sorted, not recursive).

    ``skipped``, where given, receives ``(path, why)`` for each entry of a folder that is
    named like a picture but is no regular file (a folder, a link to nothing or to itself,
    a device, a pipe).

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.png").write_bytes(b""); (folder / "b.jpg").mkdir()
    >>> skipped = []
    >>> [p.name for p in expand_inputs([folder], skipped)], [(p.name, why) for p, why in skipped]
    (['a.png'], [('b.jpg', 'a folder')])
    """
    files = []
    for entry in map(Path, paths):
        if not entry.is_dir():
            files.append(entry)
            continue
        for path in sorted(entry.iterdir()):
            if path.suffix.lower() not in IMAGE_SUFFIXES:
                continue
            if path.is_file():
                files.append(path)
            elif skipped is not None:
                skipped.append((path, _not_a_file(path)))
    return files


def _not_a_file(path: Path) -> str:
    """What a path named like a picture is instead of a regular file."""
    if path.is_dir():
        return "a folder"
    if path.is_symlink() and not path.exists():
        return "a link to nothing (or a loop)"
    return "not a regular file"
