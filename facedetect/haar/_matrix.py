"""The feature matrix: every feature of a pool over many windows, as one sparse-times-dense map.

Each Haar feature is a fixed linear combination of at most 9 integral-image corners, so the
whole pool is one sparse matrix ``M`` of shape ``(n_features, (H+1)*(W+1))`` and the matrix
of raw values is ``M @ II`` with ``II`` the stacked, flattened integral images (followed by
the tilted integral images when the pool has tilted features, and the gradient channels'
when it has channel features). The product
runs in a numba kernel, parallel over features, one chunk of windows at a time so that the
working memory stays under the caller's bound.
"""

from __future__ import annotations

import numba
import numpy as np

from .._utils.progress import progress_bar

from ._channels import stack_channel_integrals
from ._features import HaarFeaturePool
from ._integral import (integral_image, normalization_factors, squared_integral_image,
                       tilted_integral_image)

DEFAULT_WORKING_MEMORY = 256 * 2**20
# Windows per chunk: 1,024 flattened 19x19 integral images in float32 take 1.6 MB, about
# the size of the L2 caches, so every feature's corner rows are read from cache. Larger
# chunks were 3x slower on the 2-core reference machine (see benchmarks/haar_features.py).
CACHE_CHUNK = 1024


@numba.njit(parallel=True, cache=True)
def _apply_linear_map(indptr, indices, data, ii_t, scale, out, col0):
    """out[f, col0:col0+n] = scale * sum_k data[k] * ii_t[indices[k], :] for every row f.

    Integral images of 8-bit windows up to 64x64 are below 2**24 (so are those of the
    8-bit gradient channels), so float32 accumulation of these integer
    sums is exact; the scale is applied last, as OpenCV
    does (raw value times float32(1/nf)).
    """
    n_rows = indptr.size - 1
    n = ii_t.shape[1]
    for f in numba.prange(n_rows):
        start = indptr[f]
        stop = indptr[f + 1]
        row = out[f, col0:col0 + n]
        first = indices[start]
        w0 = data[start]
        for j in range(n):
            row[j] = w0 * ii_t[first, j]
        for k in range(start + 1, stop):
            idx = indices[k]
            w = data[k]
            for j in range(n):
                row[j] += w * ii_t[idx, j]
        for j in range(n):
            row[j] *= scale[j]


def _check_windows(windows: np.ndarray, pool: HaarFeaturePool) -> np.ndarray:
    windows = np.asarray(windows)
    if windows.ndim == 2:
        windows = windows[None]
    if windows.ndim != 3 or windows.shape[1:] != (pool.height, pool.width):
        raise ValueError(f"windows must have shape (N, {pool.height}, {pool.width}), "
                         f"got {windows.shape}")
    return windows


def window_scales(windows: np.ndarray, normalize: bool = True) -> np.ndarray:
    """float32 ``1/nf`` per window (OpenCV's variance normalisation), or ones."""
    if not normalize:
        return np.ones(len(windows), dtype=np.float32)
    _, height, width = windows.shape
    nf = normalization_factors(integral_image(windows), squared_integral_image(windows),
                               width, height)
    return (1.0 / nf).astype(np.float32)


def _output_buffer(out, shape) -> np.ndarray:
    if out is None:
        return np.empty(shape, dtype=np.float32)
    if out.shape != shape or out.dtype != np.float32 or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous float32 array of shape {shape}")
    return out


def feature_matrix(windows: np.ndarray, pool: HaarFeaturePool, *, normalize: bool = True,
                   working_memory: int = DEFAULT_WORKING_MEMORY, out: np.ndarray | None = None,
                   progress: bool = True) -> np.ndarray:
    """Values of every feature of ``pool`` on every window.

    Parameters
    ----------
    windows : (N, H, W) array
        Grey windows (uint8 for exact float32 sums) of the pool's size.
    pool : HaarFeaturePool
    normalize : bool, optional
        Divide by OpenCV's variance normalisation factor (default). With False, the raw
        weighted rectangle sums, equal to ``skimage.feature.haar_like_feature``.
    working_memory : int, optional
        Bound in bytes on the memory used besides the output (integral images of one
        chunk of windows).
    out : (n_features, N) float32 C-contiguous array, optional
        Where to write (for example a ``numpy.memmap``); allocated when omitted.
    progress : bool, optional
        Show a tqdm bar over window chunks.

    Returns
    -------
    X : (N, n_features) float32 array
        A transposed view of the feature-major ``(n_features, N)`` buffer, so that each
        feature's column is contiguous, which is what the stump search streams over.

    Raises
    ------
    ValueError
        Windows that are not a uint8 stack of the pool's size.

    See Also
    --------
    haar_feature_pool : the features.
    skimage.feature.haar_like_feature : scikit-image's, one window at a time.

    Examples
    --------
    >>> import numpy as np
    >>> from facedetect.haar import haar_feature_pool
    >>> windows = np.zeros((3, 19, 19), np.uint8)
    >>> windows[:, :, 10:] = 200                      # bright right half
    >>> X = feature_matrix(windows, haar_feature_pool(19, 19, "type-2-x"), progress=False)
    >>> X.shape, bool(X.std() > 0)
    ((3, 17100), True)
    """
    windows = _check_windows(windows, pool)
    n_windows = len(windows)
    out = _output_buffer(out, (len(pool), n_windows))
    matrix = pool.linear_map()
    indptr = matrix.indptr.astype(np.int64)
    indices = matrix.indices.astype(np.int64)
    data = matrix.data.astype(np.float32)
    n_corners = matrix.shape[1]
    # Per window: the float32 integral image, its transposed copy, and int64 temporaries.
    bytes_per_window = n_corners * (4 + 4 + 8 + 8)
    chunk = int(max(1, min(n_windows, CACHE_CHUNK, working_memory // bytes_per_window)))
    starts = range(0, n_windows, chunk)
    for start in progress_bar(starts, desc="Haar features", unit="chunk",
                              disable=not progress, leave=False):
        block = windows[start:start + chunk]
        ii_t = _integrals_t(block, pool)
        _apply_linear_map(indptr, indices, data, ii_t, window_scales(block, normalize), out,
                          start)
    return out.T


def _integrals_t(windows: np.ndarray, pool: HaarFeaturePool) -> np.ndarray:
    """``(corners, N)`` float32: the windows' stacked integral images, in the columns of
    ``pool.linear_map()``."""
    parts = [integral_image(windows).reshape(len(windows), -1)]
    if pool.tilted.any():   # the tilted integral's corners follow the upright ones
        parts.append(tilted_integral_image(windows).reshape(len(windows), -1))
    if (pool.channels >= 0).any():   # then the seven channels' (._channels.integral_blocks)
        parts.append(stack_channel_integrals(windows))
    ii = np.hstack(parts) if len(parts) > 1 else parts[0]
    return np.ascontiguousarray(ii.T, dtype=np.float32)


def _corner_map(pool: HaarFeaturePool):
    """``(corners read, indptr, column of each entry among them, float32 weights)`` of the
    pool's map, computed once per pool and kept in its instance dict (as a cached
    property is): each cascade stage prepares its windows for the same pool."""
    found = pool.__dict__.get("_corner_map")
    if found is None:
        matrix = pool.linear_map().tocsr()
        used, columns = np.unique(matrix.indices, return_inverse=True)
        found = (used, matrix.indptr.astype(np.int64), columns.astype(np.int64).ravel(),
                 matrix.data.astype(np.float32))
        pool.__dict__["_corner_map"] = found
    return found


class PreparedWindows:
    """Windows with their integral images computed once, for a pool whose features are
    then computed block by block (:meth:`features`): the stacked integral images keep
    only the corners the pool reads (a channel feature's on its two-pixel grid), one
    chunk of :data:`CACHE_CHUNK` windows at a time, with the windows' scales. The values
    are those of :func:`feature_matrix`, bit for bit: the same float32 sums, in the
    same order.

    Examples
    --------
    >>> import numpy as np
    >>> from facedetect.haar import haar_feature_pool
    >>> windows = np.random.default_rng(0).integers(0, 256, (5, 19, 19), dtype=np.uint8)
    >>> pool = haar_feature_pool(19, 19, "type-2-x")
    >>> prepared = PreparedWindows(pool).prepare(windows)
    >>> bool((prepared.features(10, 20) == feature_matrix(windows, pool, progress=False)
    ...       [:, 10:20].T).all())
    True
    """

    def __init__(self, pool: HaarFeaturePool):
        """The pool's map, on the corners it reads; :meth:`prepare` adds the windows
        (sized first by :meth:`nbytes`, which needs the map alone)."""
        self.used, self.indptr, self.indices, self.data = _corner_map(pool)
        self.pool, self.n_windows, self.chunks = pool, 0, []

    def nbytes(self, n_windows: int) -> int:
        """The memory the prepared windows hold: their integrals (float32, the corners the
        pool reads) and scales, and the pool's map (int64 offsets and columns, float32
        weights)."""
        return (4 * (self.used.size + 1) * n_windows
                + 12 * self.indices.size + 8 * self.indptr.size)

    def prepare(self, windows: np.ndarray, normalize: bool = True) -> PreparedWindows:
        """Compute the windows' integral images and scales, a chunk at a time."""
        windows = _check_windows(windows, self.pool)
        self.n_windows = len(windows)
        self.chunks = [(start, np.ascontiguousarray(_integrals_t(
                            windows[start:start + CACHE_CHUNK], self.pool)[self.used]),
                        window_scales(windows[start:start + CACHE_CHUNK], normalize))
                       for start in range(0, len(windows), CACHE_CHUNK)]
        return self

    def features(self, start: int, stop: int, out: np.ndarray | None = None) -> np.ndarray:
        """``(stop - start, N)`` float32: features ``start..stop`` of the pool (feature
        major, as :func:`feature_matrix`'s buffer) on every window."""
        out = _output_buffer(out, (stop - start, self.n_windows))
        first, last = self.indptr[start], self.indptr[stop]
        indptr = self.indptr[start:stop + 1] - first
        for col0, ii_t, scale in self.chunks:
            _apply_linear_map(indptr, self.indices[first:last], self.data[first:last], ii_t,
                              scale, out, col0)
        return out
