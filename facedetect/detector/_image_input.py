"""An image as the detector reads it: uint8 grey levels from a path, a Pillow image or an
array of any common dtype, refused in one line when it is none of those or too large."""

from __future__ import annotations

import os

import numpy as np
from PIL import Image

from .._utils.files import MAX_PIXELS_LIMITS
from ..errors import FacedetectError, InvalidParameter
from ..images import DEFAULT_MAX_PIXELS, read_grey, to_grey
from ..limits import check_limited

__all__ = ["InvalidImage", "checked_max_pixels", "grey_pixels"]


def checked_max_pixels(max_pixels) -> int | None:
    """A pixel limit as given from Python, checked as ``detect --max-pixels`` is: a
    whole number of pixels or None (no limit); NaN, strings and floats are refused.

    Examples
    --------
    >>> checked_max_pixels(np.int64(1000)), checked_max_pixels(None)
    (1000, None)
    >>> checked_max_pixels(float("nan"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    facedetect.errors.InvalidParameter: max_pixels must be an integer in 1..10... or None, got nan
    """
    return check_limited("max_pixels", max_pixels, MAX_PIXELS_LIMITS, InvalidParameter)


def grey_pixels(image, max_pixels: int | None = DEFAULT_MAX_PIXELS) -> np.ndarray:
    """An image as uint8 grey pixels, as ``detect`` reads it.

    Parameters
    ----------
    image : path, PIL.Image.Image or array
        A file (upright by its EXIF orientation), a Pillow image of a mode that converts
        to grey, or an array: ``(h, w)`` grey or ``(h, w, 3|4)`` RGB(A). uint8 as it is;
        float in [0, 1] as in scikit-image; float or integer values up to 255 (what
        ``cv2`` and Pillow conversions give) as grey levels, with a warning for floats;
        uint16 (of either byte order) always scaled by 1/257, as a 16-bit file or
        Pillow's ``I;16`` image of the same pixels is, whatever its largest value. Anything
        else is refused with a line that says how to convert it.
    max_pixels : int or None
        Refuse a file whose header, or an array whose shape, holds more pixels.

    Returns
    -------
    (h, w) uint8 array

    Raises
    ------
    FacedetectError
        Also a ``ValueError``: an array of another shape, a NaN pixel, values out of
        every range above, too many pixels, or a Pillow mode without a grey conversion.

    Examples
    --------
    >>> grey_pixels(np.array([[0.0, 1.0]])).tolist()
    [[0, 255]]
    >>> grey_pixels(np.array([[0, 200]], np.int64)).tolist()
    [[0, 200]]
    """
    max_pixels = checked_max_pixels(max_pixels)
    if isinstance(image, (str, os.PathLike)):
        return read_grey(image, max_pixels)
    if isinstance(image, Image.Image):
        _check_pixels(image.width * image.height, max_pixels)
        try:
            return to_grey(image)
        except (ValueError, OSError) as error:
            raise InvalidImage(f"a Pillow image of mode {image.mode!r} has no grey "
                               f"conversion ({error}); convert it to 'RGB' or 'L' "
                               "first") from None
    pixels = np.asarray(image)
    if pixels.ndim not in (2, 3) or (pixels.ndim == 3 and pixels.shape[2] not in (3, 4)):
        raise InvalidImage(f"an image array must be (h, w), (h, w, 3) or (h, w, 4), got "
                           f"shape {pixels.shape}")
    _check_pixels(pixels.shape[0] * pixels.shape[1], max_pixels)
    if pixels.dtype != np.uint8:
        pixels = _as_uint8(pixels)
    return pixels if pixels.ndim == 2 else to_grey(Image.fromarray(pixels))


class InvalidImage(FacedetectError, ValueError):
    """An image the detector cannot read as grey levels (also a ``ValueError``)."""


def _check_pixels(count: int, max_pixels: int | None) -> None:
    if max_pixels is not None and count > max_pixels:
        raise InvalidImage(f"the image has {count:,} pixels, more than max_pixels "
                           f"({max_pixels:,}); shrink it or raise max_pixels")


def _as_uint8(pixels: np.ndarray) -> np.ndarray:
    """Grey levels of a non-uint8 array by the rules of :func:`grey_pixels`."""
    if not pixels.dtype.isnative:   # big-endian 16-bit (FITS, some TIFF readers)
        pixels = pixels.astype(pixels.dtype.newbyteorder("="))
    kind = pixels.dtype.kind
    if kind not in "biuf":
        raise InvalidImage(f"an image array must hold numbers, got dtype {pixels.dtype}")
    if kind == "b":
        return pixels.astype(np.uint8) * 255
    if kind == "f" and not np.isfinite(pixels).all():
        raise InvalidImage("the image array has NaN or infinite pixels")
    low, high = (float(pixels.min()), float(pixels.max())) if pixels.size else (0.0, 0.0)
    if kind == "f" and low >= 0 and high <= 1:
        return np.rint(pixels * 255).astype(np.uint8)    # scikit-image's float images
    if pixels.dtype == np.uint16:   # its depth is its container's, as for a file's
        return np.rint(pixels / 257.0).astype(np.uint8)
    if low >= 0 and high <= 255:
        if kind == "f":
            import warnings
            warnings.warn(f"a float image with values up to {high:g}: read as grey levels "
                          "0..255 (divide by 255 for scikit-image's [0, 1])", stacklevel=3)
        return np.rint(pixels).astype(np.uint8)
    raise InvalidImage(f"image values from {low:g} to {high:g} fit no grey scale: give uint8 "
                       "0..255, or float in [0, 1] (skimage.exposure.rescale_intensity "
                       "maps any range there)")
