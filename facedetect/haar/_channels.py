"""Gradient channels and the channel features over them (Dollár's integral channel
features, first order: the sum of one channel over one rectangle).

The channels of a grey image are the gradient magnitude and that magnitude split into six
orientation bins over 0..180 degrees (a gradient's sign is the lighting's, not the
shape's). They are 8-bit integers, as the grey levels are, so their integral images are
exact (OpenCV computes them as it does the grey levels') and a window cut out of a picture
gives the same sums as the same window scanned in place: the gradient is OpenCV's 3x3 Sobel
pair, the magnitude its L1 norm ``|gx| + |gy|`` (at most 2,040 for 8-bit pixels) divided
by 8, and the bin is decided by exact comparisons rather than an arc tangent. A channel
feature's rectangle keeps one pixel off the window's border, where the Sobel kernel would
read outside the window, on a grid of two pixels (Dollár's channels are pooled in 2x2 or
4x4 blocks): 4,356 rectangles a channel at 24x24, 30,492 in all.

References
----------
P. Dollár, Z. Tu, P. Perona and S. Belongie, "Integral Channel Features", BMVC 2009,
doi:10.5244/C.23.91.
"""

from __future__ import annotations

import numba
import numpy as np

N_ORIENTATIONS = 6   # 30 degrees a bin: the comparisons below are exact for these
CHANNEL_TYPES = ("channel-gradient",) + tuple(
    f"channel-orientation-{k * 180 // N_ORIENTATIONS}" for k in range(N_ORIENTATIONS))
CELL = 2       # the rectangles' grid
BORDER = 1     # pixels kept off each side of the window (the Sobel kernel's reach)
SHIFT = 3      # the magnitude's 0..2,040 kept as 0..255: 8-bit channels, as the grey levels


@numba.njit(cache=True, nogil=True, inline="always")
def _bin(gx, gy):
    """The orientation bin (0..5) of the line through the gradient ``(gx, gy)``: how many
    of the boundaries 30, 60, ..., 150 degrees its angle in 0..180 is at or past, decided
    on integers (tan 30 = 1/sqrt 3, so the tests compare squares against 3 times squares)."""
    # The same line, turned into 0..180 degrees: negate gx where gy < 0 or (gy == 0 and
    # gx < 0) (only gx's sign matters below: yy is a square), without a branch.
    gx = gx * (1 - 2 * np.int32((gy < 0) | ((gy == 0) & (gx < 0))))
    xx, yy = gx * gx, gy * gy
    left = gx <= 0
    # bitwise, not "or"/"and": no branches in the hot loop
    return (np.int32(left | (3 * yy >= xx)) + np.int32(left | (yy >= 3 * xx))
            + np.int32(left) + np.int32(left & (3 * xx >= yy)) + np.int32(left & (xx >= 3 * yy)))


@numba.njit(cache=True, nogil=True)
def _magnitudes_and_bins(gx, gy, magnitudes, bins):
    """``(|gx| + |gy|) >> SHIFT`` and the orientation bin of every pixel (flat arrays)."""
    for i in range(gx.size):
        x, y = np.int32(gx[i]), np.int32(gy[i])
        magnitudes[i] = (abs(x) + abs(y)) >> SHIFT
        bins[i] = _bin(x, y)


@numba.njit(cache=True, nogil=True)
def _orientation_planes(magnitudes, bins, out):
    """Each orientation plane (``out[1:]``, flat) written whole: the magnitude where the
    pixel's bin is the plane's, zero elsewhere (one plane at a time: loops the compiler
    vectorises, and no zeroing beforehand)."""
    for k in range(N_ORIENTATIONS):
        plane = out[1 + k]
        for i in range(magnitudes.size):
            plane[i] = magnitudes[i] if bins[i] == k else 0


def gradient_channels(image: np.ndarray) -> np.ndarray:
    """The seven channels of a grey image: gradient magnitude, then the six orientation
    bins.

    Parameters
    ----------
    image : (H, W) uint8 array

    Returns
    -------
    (7, H, W) uint8 array
        ``(|gx| + |gy|) >> 3`` of OpenCV's 3x3 Sobel derivatives (border reflected as
        ``cv2.BORDER_REFLECT_101``; 0..2,040 kept as 0..255), then that magnitude in the
        bin of the gradient's line (0-30, 30-60, ..., 150-180 degrees) and zero in the
        others.

    Raises
    ------
    ValueError
        Not a 2-D uint8 image.

    See Also
    --------
    channel_integrals : their integral images, as the scanner reads them.

    Examples
    --------
    >>> import numpy as np
    >>> image = np.zeros((5, 5), np.uint8)
    >>> image[:, 3:] = 100                      # a vertical edge: a horizontal gradient
    >>> channels = gradient_channels(image)
    >>> int(channels[0, 2, 2]), int(channels[1, 2, 2]), int(channels[4, 2, 2])
    (50, 50, 0)
    """
    image = np.asarray(image)
    if image.ndim != 2 or image.dtype != np.uint8:
        raise ValueError(f"expected a 2-D uint8 image, got {image.dtype} {image.shape}")
    if not image.size:   # OpenCV's Sobel refuses an empty image: no pixels, no channels
        return np.zeros((len(CHANNEL_TYPES), *image.shape), np.uint8)
    import cv2   # imported when used, as in _integral: the CLI starts without it
    # OpenCV's Sobel pair (SIMD, border reflected as BORDER_REFLECT_101) in int16, exact
    # for 8-bit pixels (|gx|, |gy| <= 1,020).
    gx = cv2.Sobel(image, cv2.CV_16S, 1, 0).ravel()
    gy = cv2.Sobel(image, cv2.CV_16S, 0, 1).ravel()
    out = np.empty((len(CHANNEL_TYPES), image.size), np.uint8)
    bins = np.empty(image.size, np.uint8)
    _magnitudes_and_bins(gx, gy, out[0], bins)
    _orientation_planes(out[0], bins, out)
    return out.reshape(len(CHANNEL_TYPES), *image.shape)


def channel_integrals(image: np.ndarray, dtype=np.int64) -> np.ndarray:
    """``(7, H+1, W+1)`` zero-padded integral images of :func:`gradient_channels`.

    Parameters
    ----------
    image : (H, W) uint8 array
    dtype : numpy dtype, optional
        int64 (default), or int32 for images under 2**31 / 255 pixels.

    Returns
    -------
    (7, H+1, W+1) array
        ``out[c, r, k]`` is the sum of channel ``c`` over ``image[:r, :k]``.

    Raises
    ------
    ValueError
        Not a 2-D uint8 image.

    See Also
    --------
    gradient_channels : the channels themselves.
    facedetect.haar.integral_image : the same for the grey levels.

    Examples
    --------
    >>> import numpy as np
    >>> channel_integrals(np.zeros((4, 6), np.uint8)).shape
    (7, 5, 7)
    """
    from ._integral import integral_image
    return integral_image(gradient_channels(image), dtype)


def channel_integrals_into(image: np.ndarray, out: np.ndarray, start: int) -> None:
    """Write :func:`channel_integrals` of ``image`` into the flat int32 or int64 ``out``
    from ``start`` (the scanner's stacked integral images; OpenCV sums the int32 ones in
    place)."""
    import cv2
    channels = gradient_channels(image)
    height, width = image.shape
    block = (height + 1) * (width + 1)
    if out.dtype == np.int32:
        for c, channel in enumerate(channels):
            cv2.integral(channel, sum=out[start + c * block:start + (c + 1) * block]
                         .reshape(height + 1, width + 1), sdepth=cv2.CV_32S)
        return
    from ._integral import integral_image
    out[start:start + len(channels) * block] = integral_image(channels, out.dtype).ravel()


def channel_rows(width: int, height: int):
    """``(rect, channel)`` of every channel feature in a ``width x height`` window: for each
    channel, every rectangle of the two-pixel grid inside the border."""
    inner_w, inner_h = width - 2 * BORDER, height - 2 * BORDER
    cells_x, cells_y = inner_w // CELL, inner_h // CELL
    for channel in range(len(CHANNEL_TYPES)):
        for cy in range(cells_y):
            for cx in range(cells_x):
                for ch in range(1, cells_y - cy + 1):
                    for cw in range(1, cells_x - cx + 1):
                        yield (BORDER + CELL * cx, BORDER + CELL * cy, CELL * cw,
                               CELL * ch), channel


def integral_blocks(tilted, channels) -> tuple[np.ndarray, int]:
    """Which integral image each feature's corners are in, and how many there are, in the
    order the feature matrix and the scanner stack them: the upright integral (0), then the
    tilted one where any feature is tilted, then the seven channels' where any feature is a
    channel feature (``channels``: the channel, -1 for a Haar feature).

    Examples
    --------
    >>> blocks, count = integral_blocks([False, True, False], [-1, -1, 2])
    >>> blocks.tolist(), count
    ([0, 1, 4], 9)
    """
    tilted = np.asarray(tilted, bool)
    channels = np.asarray(channels, np.int64)
    has_tilted, has_channels = bool(tilted.any()), bool((channels >= 0).any())
    first_channel = 1 + has_tilted
    blocks = np.where(tilted, 1, np.where(channels >= 0, first_channel + channels, 0))
    return blocks.astype(np.int64), first_channel + len(CHANNEL_TYPES) * has_channels


def stack_channel_integrals(windows: np.ndarray) -> np.ndarray:
    """``(N, 7 * (H+1) * (W+1))`` int64: each window's seven channel integral images,
    flattened one after another (the feature matrix's channel blocks)."""
    from ._integral import integral_image
    if not len(windows):
        block = (windows.shape[1] + 1) * (windows.shape[2] + 1)
        return np.zeros((0, len(CHANNEL_TYPES) * block), np.int64)
    channels = np.concatenate([gradient_channels(window) for window in windows])
    return integral_image(channels).reshape(len(windows), -1)
