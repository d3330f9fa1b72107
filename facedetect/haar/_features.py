"""Enumeration of the five classic Haar-like feature types.

A feature is a short list of weighted rectangles ``(x, y, w, h, weight)`` in window
coordinates (``x`` is the column). Its raw value is the weighted sum of the pixel sums of
its rectangles. The weights and the enumeration order are those of
``skimage.feature.haar_like_feature_coord``, so feature ``i`` here is feature ``i`` there:

- ``type-2-x``: two rectangles side by side, ``right - left``;
- ``type-2-y``: two rectangles stacked, ``bottom - top``;
- ``type-3-x``: three side by side, ``middle - left - right``;
- ``type-3-y``: three stacked, ``middle - top - bottom``;
- ``type-4``: a 2x2 checkerboard, ``top-right + bottom-left - top-left - bottom-right``.

These five are the paper's pool. Lienhart and Maydt's tilted features (OpenCV's
``traincascade -mode ALL``) extend it for photographs (``TILTED_TYPES``): rectangles turned
by 45 degrees, summed over the tilted integral image
(:func:`._integral.tilted_integral_image`).
A tilted rectangle ``(x, y, w, h)`` has its top corner at ``(x, y)`` and runs ``w`` pixels
down-right and ``h`` down-left, as OpenCV's ``CV_TILTED_OFFSETS``; each tilted feature is
OpenCV's: the whole rectangle at weight -1 and an inner one at +2 or +3, so that a flat
patch gives zero.

References
----------
R. Lienhart and J. Maydt, "An extended set of Haar-like features for rapid object
detection", ICIP 2002, doi:10.1109/ICIP.2002.1038171.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from ._channels import CHANNEL_TYPES, channel_rows, integral_blocks

FEATURE_TYPES = ("type-2-x", "type-2-y", "type-3-x", "type-3-y", "type-4")
TILTED_TYPES = ("tilted-2-x", "tilted-2-y", "tilted-3-x", "tilted-3-y", "tilted-4-x",
                "tilted-4-y")
ALL_FEATURE_TYPES = FEATURE_TYPES + TILTED_TYPES

# For each type: the number of cells along x and y, and each rectangle's cell offset and
# weight, in skimage's rectangle order.
_LAYOUTS = {
    "type-2-x": (2, 1, [(0, 0, -1.0), (1, 0, 1.0)]),
    "type-2-y": (1, 2, [(0, 0, -1.0), (0, 1, 1.0)]),
    "type-3-x": (3, 1, [(0, 0, -1.0), (1, 0, 1.0), (2, 0, -1.0)]),
    "type-3-y": (1, 3, [(0, 0, -1.0), (0, 1, 1.0), (0, 2, -1.0)]),
    "type-4": (2, 2, [(0, 0, -1.0), (1, 0, 1.0), (1, 1, -1.0), (0, 1, 1.0)]),
}
# Tilted types (OpenCV's haarfeatures.cpp, mode ALL): cells along the rectangle's w and h
# sides, and the inner rectangle's offset and extent in cells along them, and its weight.
_TILTED_LAYOUTS = {
    "tilted-2-x": (2, 1, (0, 0), (1, 1), 2.0), "tilted-2-y": (1, 2, (0, 0), (1, 1), 2.0),
    "tilted-3-x": (3, 1, (1, 0), (1, 1), 3.0), "tilted-3-y": (1, 3, (0, 1), (1, 1), 3.0),
    "tilted-4-x": (4, 1, (1, 0), (2, 1), 2.0), "tilted-4-y": (1, 4, (0, 1), (1, 2), 2.0),
}

MAX_RECTANGLES = 4
# Every kind of feature a pool can hold: Haar-like (basic, then tilted), then the channel
# features over the gradient channels (:mod:`._channels`).
FEATURE_KINDS = ALL_FEATURE_TYPES + CHANNEL_TYPES


@dataclass(frozen=True)
class HaarFeaturePool:
    """A pool of Haar-like features for one window size.

    Attributes
    ----------
    width, height : int
        Window size in pixels.
    rects : (n_features, 4, 4) int16 array
        ``(x, y, w, h)`` of each rectangle; unused slots are zero.
    weights : (n_features, 4) float64 array
        Rectangle weights; zero for unused slots.
    n_rects : (n_features,) int8 array
    types : (n_features,) int8 array
        Index into ``FEATURE_KINDS`` (the Haar types of ``ALL_FEATURE_TYPES``, then
        ``CHANNEL_TYPES``); ``tilted`` marks the tilted ones, ``channels`` the channel
        features' channels.

    See Also
    --------
    haar_feature_pool : what builds it.
    feature_matrix : the pool's values on windows.

    Examples
    --------
    >>> pool = haar_feature_pool(19, 19)
    >>> len(pool), pool.feature(0)
    (63960, [(0, 0, 1, 1, -1.0), (1, 0, 1, 1, 1.0)])
    """

    width: int
    height: int
    rects: np.ndarray
    weights: np.ndarray
    n_rects: np.ndarray
    types: np.ndarray

    def __len__(self) -> int:
        return len(self.types)

    def feature(self, index: int) -> list[tuple[int, int, int, int, float]]:
        """The weighted rectangles ``(x, y, w, h, weight)`` of one feature."""
        n = int(self.n_rects[index])
        return [(*map(int, self.rects[index, k]), float(self.weights[index, k]))
                for k in range(n)]

    def type_name(self, index: int) -> str:
        return FEATURE_KINDS[int(self.types[index])]

    @cached_property   # a frozen dataclass still takes it: it writes the instance dict
    def tilted(self) -> np.ndarray:
        """(n_features,) bool: which features sum over the tilted integral image."""
        return (self.types >= len(FEATURE_TYPES)) & (self.types < len(ALL_FEATURE_TYPES))

    @cached_property
    def channels(self) -> np.ndarray:
        """(n_features,) int: the gradient channel a channel feature sums over
        (:data:`CHANNEL_TYPES` order), -1 for a Haar feature."""
        return np.where(self.types >= len(ALL_FEATURE_TYPES),
                        self.types.astype(np.int64) - len(ALL_FEATURE_TYPES), -1)

    def subset(self, indices) -> "HaarFeaturePool":
        """A pool holding only the given features, in the given order."""
        indices = np.asarray(indices, dtype=np.intp)
        return HaarFeaturePool(self.width, self.height, self.rects[indices],
                               self.weights[indices], self.n_rects[indices],
                               self.types[indices])

    def linear_map(self):
        """The pool as a sparse ``(n_features, (H+1)*(W+1))`` map on flattened integral images.

        Row ``f`` holds the corner weights of feature ``f``, so ``M @ ii.ravel()`` is the
        vector of raw feature values of one window; shared corners are merged. A pool with
        tilted features maps ``(H+1)*(W+1)`` more columns, the tilted integral image's
        (``M @ concatenate([ii.ravel(), tilted.ravel()])``), and one with channel
        features seven blocks more, the channels' integral images
        (:func:`._channels.integral_blocks` gives the order). Computed once per pool (a
        tenth of a second for 213,536 features, asked for by every cascade stage); it is
        shared, so not to be changed in place.
        """
        return self._linear_map

    @cached_property
    def _linear_map(self):
        return _linear_map(self)


def corner_weights(rect, tilted: bool) -> list[tuple]:
    """``(x, y, sign)`` of the four integral-image corners whose signed sum is the
    rectangle's pixel sum, in the scan kernels' order (``a - b - c + d``): upright the
    top-left, top-right, bottom-left and bottom-right corners; tilted (OpenCV's
    ``CV_TILTED_OFFSETS``) ``t[y, x] - t[y+h, x-h] - t[y+w, x+w] + t[y+w+h, x+w-h]``.
    ``x, y, w, h`` may be integers or integer arrays (one rectangle each).

    Examples
    --------
    >>> corner_weights((1, 2, 3, 4), tilted=False)
    [(1, 2, 1), (4, 2, -1), (1, 6, -1), (4, 6, 1)]
    """
    x, y, w, h = rect[:4]
    if tilted:
        return [(x, y, 1), (x - h, y + h, -1), (x + w, y + w, -1), (x + w - h, y + w + h, 1)]
    return [(x, y, 1), (x + w, y, -1), (x, y + h, -1), (x + w, y + h, 1)]


def _linear_map(pool: HaarFeaturePool):
    import scipy.sparse   # here, not at import: the scanner needs corner_weights alone
    stride = pool.width + 1
    n_corners = (pool.height + 1) * stride
    tilted = pool.tilted
    blocks, n_blocks = integral_blocks(tilted, pool.channels)
    rows, cols, vals = [], [], []
    feature_ids = np.arange(len(pool))
    for k in range(MAX_RECTANGLES):
        used = pool.n_rects > k
        f = feature_ids[used]
        rect = tuple(pool.rects[used, k, j].astype(np.int64) for j in range(4))
        wt = pool.weights[used, k]
        for (ux, uy, sign), (tx, ty, _) in zip(corner_weights(rect, False),
                                               corner_weights(rect, True)):
            rows.append(f)
            cols.append(blocks[used] * n_corners + np.where(tilted[used], ty * stride + tx,
                                                            uy * stride + ux))
            vals.append(sign * wt)
    width = n_blocks * n_corners
    matrix = scipy.sparse.coo_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(len(pool), width))
    matrix = matrix.tocsr()
    matrix.sum_duplicates()
    matrix.eliminate_zeros()
    return matrix


def _tilted_rows(type_name: str, width: int, height: int):
    """``(rects, weights)`` rows of every feature of one tilted type that fits the window
    (OpenCV's bounds: ``x - h >= 0``, ``x + w <= width``, ``y + w + h <= height``)."""
    cells_w, cells_h, (ox, oy), (iw, ih), weight = _TILTED_LAYOUTS[type_name]
    for y in range(height):
        for x in range(width):
            for dy in range(1, height + 1):
                for dx in range(1, width + 1):
                    w, h = cells_w * dx, cells_h * dy
                    if x + w > width or y + w + h > height or x - h < 0:
                        continue
                    # The inner rectangle: ox cells along the w side (+1, +1 a step),
                    # oy along the h side (-1, +1 a step).
                    inner = (x + ox * dx - oy * dy, y + ox * dx + oy * dy, iw * dx, ih * dy)
                    yield ([(x, y, w, h), inner] + [(0, 0, 0, 0)] * (MAX_RECTANGLES - 2),
                           [-1.0, weight] + [0.0] * (MAX_RECTANGLES - 2))


@lru_cache(maxsize=8)
def _cached_pool(width: int, height: int, feature_types: tuple[str, ...]) -> HaarFeaturePool:
    rects, weights, n_rects, types = [], [], [], []
    for type_name in feature_types:
        type_index = FEATURE_KINDS.index(type_name)
        if type_name in CHANNEL_TYPES:
            for rect, _ in (row for row in channel_rows(width, height)
                            if row[1] == CHANNEL_TYPES.index(type_name)):
                rects.append([rect] + [(0, 0, 0, 0)] * (MAX_RECTANGLES - 1))
                weights.append([1.0] + [0.0] * (MAX_RECTANGLES - 1))
                n_rects.append(1)
                types.append(type_index)
            continue
        if type_name in _TILTED_LAYOUTS:
            for row, row_weights in _tilted_rows(type_name, width, height):
                rects.append(row)
                weights.append(row_weights)
                n_rects.append(2)
                types.append(type_index)
            continue
        cells_x, cells_y, layout = _LAYOUTS[type_name]
        for y in range(height):
            for x in range(width):
                for h in range(1, (height - y) // cells_y + 1):
                    for w in range(1, (width - x) // cells_x + 1):
                        row = [(x + cx * w, y + cy * h, w, h) for cx, cy, _ in layout]
                        row += [(0, 0, 0, 0)] * (MAX_RECTANGLES - len(layout))
                        rects.append(row)
                        weights.append([wt for _, _, wt in layout]
                                       + [0.0] * (MAX_RECTANGLES - len(layout)))
                        n_rects.append(len(layout))
                        types.append(type_index)
    pool = HaarFeaturePool(
        width, height,
        np.asarray(rects, dtype=np.int16).reshape(-1, MAX_RECTANGLES, 4),
        np.asarray(weights, dtype=np.float64).reshape(-1, MAX_RECTANGLES),
        np.asarray(n_rects, dtype=np.int8), np.asarray(types, dtype=np.int8))
    for array in (pool.rects, pool.weights, pool.n_rects, pool.types):
        array.setflags(write=False)
    return pool


def haar_feature_pool(width: int = 19, height: int = 19,
                      feature_types=None) -> HaarFeaturePool:
    """Every Haar-like feature of the given types that fits in a ``width x height`` window.

    For 19x19 and the five basic types this is 63,960 features, in skimage's order.

    Parameters
    ----------
    width, height : int
        Window size.
    feature_types : str or sequence of str, optional
        Types of ``FEATURE_KINDS``: the five basic ones (``FEATURE_TYPES``) by
        default; ``ALL_FEATURE_TYPES`` adds the tilted ones, after the basic ones;
        ``CHANNEL_TYPES`` are the channel features over the gradient channels
        (:mod:`facedetect.haar._channels`), which need a window of at least 4x4.

    Returns
    -------
    HaarFeaturePool

    Raises
    ------
    ValueError
        An unknown feature type or a window side below 1.

    See Also
    --------
    feature_matrix : the pool's values on windows.
    skimage.feature.haar_like_feature_coord : scikit-image's enumeration.

    Examples
    --------
    >>> len(haar_feature_pool(19, 19))
    63960
    >>> len(haar_feature_pool(4, 4, "type-2-x"))   # two rectangles side by side
    40
    >>> pool = haar_feature_pool(24, 24, ALL_FEATURE_TYPES)   # OpenCV's "-mode ALL" tilted
    >>> len(pool), int(pool.tilted.sum())
    (213536, 51200)
    """
    if feature_types is None:
        feature_types = FEATURE_TYPES
    elif isinstance(feature_types, str):
        feature_types = (feature_types,)
    unknown = set(feature_types) - set(FEATURE_KINDS)
    if unknown:
        raise ValueError(f"unknown feature type(s) {sorted(unknown)}; "
                         f"choose from {FEATURE_KINDS}")
    if width < 1 or height < 1:
        raise ValueError("window size must be positive")
    return _cached_pool(int(width), int(height), tuple(feature_types))
