"""Gradient channels and the channel features over them (Dollár's integral channel
features, first order: the sum of one channel over one rectangle).

The channels of a grey image are the gradient magnitude and that magnitude split into six
orientation bins over 0..180 degrees (a gradient's sign is the lighting's, not the
shape's). They are integers, so their integral images are exact and a window cut out of a
picture gives the same sums as the same window scanned in place: the gradient is OpenCV's
3x3 Sobel pair, the magnitude its L1 norm ``|gx| + |gy|`` (at most 2,040 for 8-bit
pixels), and the bin is decided by exact comparisons rather than an arc tangent. A channel
feature's rectangle keeps one pixel off the window's border, where the Sobel kernel would
read outside the window, on a grid of two pixels (Dollár's channels are pooled in 2x2 or
4x4 blocks): 4,356 rectangles a channel at 24x24, 30,492 in all.

References
----------
P. Dollár, Z. Tu, P. Perona and S. Belongie, "Integral Channel Features", BMVC 2009,
doi:10.5244/C.23.91.
"""

from __future__ import annotations

import math

import numba
import numpy as np

N_ORIENTATIONS = 6
CHANNEL_TYPES = ("channel-gradient",) + tuple(
    f"channel-orientation-{k * 180 // N_ORIENTATIONS}" for k in range(N_ORIENTATIONS))
# The bin boundaries 30, 60, ..., 150 degrees, as (cos, sin) pairs.
_BOUNDARIES = np.array([(math.cos(k * math.pi / N_ORIENTATIONS),
                         math.sin(k * math.pi / N_ORIENTATIONS))
                        for k in range(1, N_ORIENTATIONS)])
CELL = 2       # the rectangles' grid
BORDER = 1     # pixels kept off each side of the window (the Sobel kernel's reach)


@numba.njit(cache=True)
def _channels_kernel(image, boundaries, out):
    height, width = image.shape
    for y in range(height):
        for x in range(width):
            magnitude, bin_index = _pixel_channel(image, y, x, boundaries)
            for k in range(out.shape[0]):
                out[k, y, x] = 0
            out[0, y, x] = magnitude
            out[1 + bin_index, y, x] += magnitude


@numba.njit(cache=True)
def _pixel_channel(image, y, x, boundaries):
    """``(magnitude, bin)`` of one pixel: OpenCV's 3x3 Sobel pair with its default border
    (BORDER_REFLECT_101: row -1 is row 1), the line's angle turned into 0..180 degrees and
    compared with each bin boundary exactly (sin(angle - boundary) >= 0)."""
    height, width = image.shape
    up = abs(y - 1) if height > 1 else 0
    down = height - 1 - abs(height - 2 - y) if height > 1 else 0
    left = abs(x - 1) if width > 1 else 0
    right = width - 1 - abs(width - 2 - x) if width > 1 else 0
    a, b, c = np.int32(image[up, left]), np.int32(image[up, x]), np.int32(image[up, right])
    d, f = np.int32(image[y, left]), np.int32(image[y, right])
    g, h, i = (np.int32(image[down, left]), np.int32(image[down, x]),
               np.int32(image[down, right]))
    gx = (c + 2 * f + i) - (a + 2 * d + g)
    gy = (g + 2 * h + i) - (a + 2 * b + c)
    magnitude = abs(gx) + abs(gy)
    if gy < 0 or (gy == 0 and gx < 0):
        gx, gy = -gx, -gy
    bin_index = 0
    for k in range(boundaries.shape[0]):
        if gy * boundaries[k, 0] - gx * boundaries[k, 1] >= 0.0:
            bin_index = k + 1
    return magnitude, bin_index


@numba.njit(cache=True)
def _row_gradients(image, y, boundaries, magnitudes, bins):
    """Row ``y``'s magnitudes and orientation bins, as :func:`_pixel_channel` gives them
    (its interior without the border arithmetic: this is the scanner's hot loop)."""
    height, width = image.shape
    if height < 3 or width < 3:
        for x in range(width):
            magnitudes[x], bins[x] = _pixel_channel(image, y, x, boundaries)
        return
    up = abs(y - 1)
    down = height - 1 - abs(height - 2 - y)
    for x in (0, width - 1):
        magnitudes[x], bins[x] = _pixel_channel(image, y, x, boundaries)
    for x in range(1, width - 1):
        a = np.int32(image[up, x - 1])
        b = np.int32(image[up, x])
        c = np.int32(image[up, x + 1])
        g = np.int32(image[down, x - 1])
        h = np.int32(image[down, x])
        i = np.int32(image[down, x + 1])
        gx = (c + 2 * np.int32(image[y, x + 1]) + i) - (a + 2 * np.int32(image[y, x - 1]) + g)
        gy = (g + 2 * h + i) - (a + 2 * b + c)
        magnitudes[x] = abs(gx) + abs(gy)
        # branch-free: the line turned into 0..180, and the boundaries it is at or past
        # (they are in order, so their count is the bin)
        sign = 1 - 2 * np.int32(gy < 0 or (gy == 0 and gx < 0))
        fx, fy = np.float64(sign * gx), np.float64(sign * gy)
        bin_index = 0
        for k in range(boundaries.shape[0]):
            bin_index += np.int32(fy * boundaries[k, 0] - fx * boundaries[k, 1] >= 0.0)
        bins[x] = bin_index


@numba.njit(cache=True)
def _integrals_kernel(image, boundaries, out, start, block):
    """The seven channels' zero-padded integral images of ``image``, written into the flat
    ``out`` from ``start``, ``block`` apart, row by row (no channel image is kept)."""
    height, width = image.shape
    stride = width + 1
    n = boundaries.shape[0] + 2
    magnitudes = np.empty(width, np.int32)
    bins = np.empty(width, np.int32)
    for c in range(n):
        for x in range(stride):
            out[start + c * block + x] = 0
    for y in range(height):
        _row_gradients(image, y, boundaries, magnitudes, bins)
        for c in range(n):
            above = start + c * block + y * stride
            here = above + stride
            out[here] = 0
            total = 0
            for x in range(width):
                total += magnitudes[x] * np.int32(c == 0 or bins[x] == c - 1)
                out[here + x + 1] = out[above + x + 1] + total


def gradient_channels(image: np.ndarray) -> np.ndarray:
    """The seven channels of a grey image: gradient magnitude, then the six orientation
    bins.

    Parameters
    ----------
    image : (H, W) uint8 array

    Returns
    -------
    (7, H, W) uint16 array
        ``|gx| + |gy|`` of OpenCV's 3x3 Sobel derivatives (border reflected as
        ``cv2.BORDER_REFLECT_101``), then the magnitude in the bin of its orientation
        (0-30, 30-60, ..., 150-180 degrees) and zero in the others.

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
    (400, 400, 0)
    """
    image = np.asarray(image)
    if image.ndim != 2 or image.dtype != np.uint8:
        raise ValueError(f"expected a 2-D uint8 image, got {image.dtype} {image.shape}")
    out = np.empty((len(CHANNEL_TYPES), *image.shape), np.uint16)
    _channels_kernel(np.ascontiguousarray(image), _BOUNDARIES, out)
    return out


def channel_integrals(image: np.ndarray, dtype=np.int64) -> np.ndarray:
    """``(7, H+1, W+1)`` zero-padded integral images of :func:`gradient_channels`,
    computed row by row without keeping the channels (as the scanner computes them).

    Parameters
    ----------
    image : (H, W) uint8 array
    dtype : numpy dtype, optional
        int64 (default), or int32 for images under 2**31 / 2,040 pixels.

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
    image = np.ascontiguousarray(image)
    if image.ndim != 2 or image.dtype != np.uint8:
        raise ValueError(f"expected a 2-D uint8 image, got {image.dtype} {image.shape}")
    block = (image.shape[0] + 1) * (image.shape[1] + 1)
    out = np.empty(len(CHANNEL_TYPES) * block, dtype)
    _integrals_kernel(image, _BOUNDARIES, out, 0, block)
    return out.reshape(len(CHANNEL_TYPES), image.shape[0] + 1, image.shape[1] + 1)


def channel_integrals_into(image: np.ndarray, out: np.ndarray, start: int) -> None:
    """Write :func:`channel_integrals` of ``image`` into the flat ``out`` from ``start``
    (the scanner's stacked integral images: no copy)."""
    block = (image.shape[0] + 1) * (image.shape[1] + 1)
    _integrals_kernel(np.ascontiguousarray(image), _BOUNDARIES, out, start, block)


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
    block = (windows.shape[1] + 1) * (windows.shape[2] + 1)
    out = np.empty((len(windows), len(CHANNEL_TYPES) * block), np.int64)
    for n, window in enumerate(windows):
        _integrals_kernel(np.ascontiguousarray(window), _BOUNDARIES, out[n], 0, block)
    return out
