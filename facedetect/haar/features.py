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
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import scipy.sparse

FEATURE_TYPES = ("type-2-x", "type-2-y", "type-3-x", "type-3-y", "type-4")

# For each type: the number of cells along x and y, and each rectangle's cell offset and
# weight, in skimage's rectangle order.
_LAYOUTS = {
    "type-2-x": (2, 1, [(0, 0, -1.0), (1, 0, 1.0)]),
    "type-2-y": (1, 2, [(0, 0, -1.0), (0, 1, 1.0)]),
    "type-3-x": (3, 1, [(0, 0, -1.0), (1, 0, 1.0), (2, 0, -1.0)]),
    "type-3-y": (1, 3, [(0, 0, -1.0), (0, 1, 1.0), (0, 2, -1.0)]),
    "type-4": (2, 2, [(0, 0, -1.0), (1, 0, 1.0), (1, 1, -1.0), (0, 1, 1.0)]),
}
MAX_RECTANGLES = 4


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
        Index into ``FEATURE_TYPES``.

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
        return FEATURE_TYPES[int(self.types[index])]

    def subset(self, indices) -> "HaarFeaturePool":
        """A pool holding only the given features, in the given order."""
        indices = np.asarray(indices, dtype=np.intp)
        return HaarFeaturePool(self.width, self.height, self.rects[indices],
                               self.weights[indices], self.n_rects[indices],
                               self.types[indices])

    def linear_map(self) -> scipy.sparse.csr_matrix:
        """The pool as a sparse ``(n_features, (H+1)*(W+1))`` map on flattened integral images.

        Row ``f`` holds the corner weights of feature ``f``, so ``M @ ii.ravel()`` is the
        vector of raw feature values of one window; shared corners are merged.
        """
        return _linear_map(self)


def _linear_map(pool: HaarFeaturePool) -> scipy.sparse.csr_matrix:
    stride = pool.width + 1
    rows, cols, vals = [], [], []
    feature_ids = np.arange(len(pool))
    for k in range(MAX_RECTANGLES):
        used = pool.n_rects > k
        f = feature_ids[used]
        x, y, w, h = (pool.rects[used, k, j].astype(np.int64) for j in range(4))
        wt = pool.weights[used, k]
        for dx, dy, sign in ((w, h, 1.0), (w, 0, -1.0), (0, h, -1.0), (0, 0, 1.0)):
            rows.append(f)
            cols.append((y + dy) * stride + (x + dx))
            vals.append(sign * wt)
    shape = (len(pool), (pool.height + 1) * stride)
    matrix = scipy.sparse.coo_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=shape)
    matrix = matrix.tocsr()
    matrix.sum_duplicates()
    matrix.eliminate_zeros()
    return matrix


@lru_cache(maxsize=8)
def _cached_pool(width: int, height: int, feature_types: tuple[str, ...]) -> HaarFeaturePool:
    rects, weights, n_rects, types = [], [], [], []
    for type_name in feature_types:
        cells_x, cells_y, layout = _LAYOUTS[type_name]
        type_index = FEATURE_TYPES.index(type_name)
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

    For 19x19 and all five types this is 63,960 features, in skimage's order.

    Parameters
    ----------
    width, height : int
        Window size.
    feature_types : str or sequence of str, optional
        A subset of ``FEATURE_TYPES``; all five by default.

    Returns
    -------
    HaarFeaturePool

    Examples
    --------
    >>> len(haar_feature_pool(19, 19))
    63960
    >>> len(haar_feature_pool(4, 4, "type-2-x"))   # two rectangles side by side
    40
    """
    if feature_types is None:
        feature_types = FEATURE_TYPES
    elif isinstance(feature_types, str):
        feature_types = (feature_types,)
    unknown = set(feature_types) - set(FEATURE_TYPES)
    if unknown:
        raise ValueError(f"unknown feature type(s) {sorted(unknown)}; "
                         f"choose from {FEATURE_TYPES}")
    if width < 1 or height < 1:
        raise ValueError("window size must be positive")
    return _cached_pool(int(width), int(height), tuple(feature_types))
