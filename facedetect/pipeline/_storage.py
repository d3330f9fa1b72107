"""Where the training features live, within a memory setting.

- **exact** (the paper's): every feature as float32 plus its uint16/uint32 sort order, about
  six bytes per window and feature, all in memory. The stump search is over every
  threshold between two training values.
- **compact** (the default for detectors): one uint8 quantile bin per window and feature
  (:mod:`.binned`). It is computed a block of features at a time, so the float values
  never exist all at once. When the bins exceed the memory setting they go to an unlinked
  temporary file, mapped, and each round reads them a chunk at a time, dropping each
  chunk's pages after its search: the resident set stays near one chunk at any amount of
  data, at the price of re-reading the file (from the page cache, if the machine has room).
"""

from __future__ import annotations

import mmap
import os
import tempfile

import numpy as np
from .._utils.progress import progress_bar

from ..errors import FacedetectError
from ..haar import feature_matrix
from ..haar._matrix import PreparedWindows
from ..training._binned import BinnedFeatures, quantile_bins
from ..training._stumps import presort

# Compact storage: the float32 values of one block of features are computed, binned and
# dropped. A block is at most this share of the memory setting.
BLOCK_SHARE = 8
PREPARED_SHARE = 4   # of the memory, at most, for the windows' integral images
MIN_BLOCK_FEATURES = 64


def _exact_bytes(n_windows: int, n_features: int) -> int:
    """float32 values plus the sort order (uint16 up to 32,767 windows, else uint32)."""
    return n_windows * n_features * (4 + (2 if n_windows <= 0x7FFF else 4))


def minimum_memory(n_windows: int) -> int:
    """The least memory setting compact storage works with: one block of features as
    float32 and as bins, twice over (the spill chunk beside the block being computed)."""
    return 2 * MIN_BLOCK_FEATURES * n_windows * (4 + 1)


def check_memory_setting(memory: int, n_windows: int, n_features: int, exact: bool) -> None:
    """Refuse a setting the job cannot run in, naming what it needs."""
    if exact:
        needed = _exact_bytes(n_windows, n_features)
        if needed > memory:
            raise FacedetectError(
                f"exact features for {n_windows:,} windows x {n_features:,} features need "
                f"{needed / 2**30:.2f} GiB, more than the memory setting "
                f"{memory / 2**30:.2f} GiB: raise --memory or drop --exact (compact "
                "features take a sixth of that and can spill to disk)")
        return
    least = minimum_memory(n_windows)
    if memory < least:
        raise FacedetectError(
            f"a memory setting of {memory / 2**20:.1f} MiB cannot hold one block of "
            f"{MIN_BLOCK_FEATURES} features for {n_windows:,} windows: the minimum is "
            f"{least / 2**20:.1f} MiB")


def exact_features(windows: np.ndarray, pool, progress: bool = True):
    """``(X, order)``: the float32 matrix and its presorted order.

    Examples
    --------
    >>> from facedetect.haar import haar_feature_pool
    >>> X, order = exact_features(np.zeros((3, 19, 19), np.uint8), haar_feature_pool(19, 19),
    ...                           progress=False)
    >>> X.shape, order.shape
    ((3, 63960), (63960, 3))
    """
    X = feature_matrix(windows, pool, progress=progress)
    return X, presort(X.T)


def _spill_file(n_features: int, n_windows: int):
    """A zero-filled unlinked temporary file of the bins' size, mapped shared."""
    handle = tempfile.TemporaryFile(prefix="facedetect-bins-")
    size = max(1, n_features * n_windows)
    try:
        # Blocks reserved now: a sparse file on a disk that fills up later ends the
        # process with SIGBUS when a page of the mapping is first written.
        os.posix_fallocate(handle.fileno(), 0, size)
        mapped = mmap.mmap(handle.fileno(), size)
    except OSError as error:
        handle.close()
        raise FacedetectError(f"cannot make a {size / 2**20:,.1f} MiB spill file in "
                              f"{tempfile.gettempdir()} ({error.strerror}); set TMPDIR to a "
                              "disk with room, or raise --memory") from None
    handle.close()  # the mapping keeps the file
    return mapped


def _releaser(mapped: mmap.mmap, n_windows: int):
    """``release(start, stop)``: drop the resident pages of feature rows start..stop."""
    page = mmap.PAGESIZE

    def release(start: int, stop: int) -> None:
        low = -(-start * n_windows // page) * page
        high = stop * n_windows // page * page
        if high > low:
            mapped.madvise(mmap.MADV_DONTNEED, low, high - low)
    return release


def compact_features(windows: np.ndarray, pool, memory: int,
                     progress: bool = True) -> BinnedFeatures:
    """The windows' quantile bins for every feature of ``pool``, within ``memory`` bytes.

    Examples
    --------
    >>> import numpy as np
    >>> from facedetect.haar import haar_feature_pool
    >>> windows = np.random.default_rng(0).integers(0, 256, (50, 19, 19), dtype=np.uint8)
    >>> compact_features(windows, haar_feature_pool(19, 19), 2**30, progress=False).shape
    (63960, 50)
    """
    n_windows, n_features = len(windows), len(pool)
    check_memory_setting(memory, n_windows, n_features, exact=False)
    block = max(MIN_BLOCK_FEATURES, memory // BLOCK_SHARE // (5 * max(n_windows, 1)))
    # The windows' integral images, computed once for every block where they fit in a
    # quarter of the memory (each block recomputed them before: 80% of the feature step).
    prepared, prepared_bytes = None, 0
    if n_windows:
        prepared = PreparedWindows(pool)
        prepared_bytes = prepared.nbytes(n_windows)
        if prepared_bytes <= memory // PREPARED_SHARE:
            prepared.prepare(windows)
        else:
            prepared, prepared_bytes = None, 0
    spill = n_windows * n_features > memory - block * n_windows * 5 - prepared_bytes
    if spill:
        mapped = _spill_file(n_features, n_windows)
        bins = np.frombuffer(mapped, dtype=np.uint8,
                             count=n_features * n_windows).reshape(n_features, n_windows)
        release = _releaser(mapped, n_windows)
    else:
        bins, release = np.empty((n_features, n_windows), dtype=np.uint8), None
    edges = np.empty((n_features, 255), dtype=np.float32)
    n_edges = np.empty(n_features, dtype=np.int64)
    starts = range(0, n_features, block)
    for start in progress_bar(starts, desc="features", unit="block", disable=not progress,
                      leave=False):
        stop = min(n_features, start + block)
        values_t = (prepared.features(start, stop) if prepared is not None else
                    feature_matrix(windows, pool.subset(np.arange(start, stop)),
                                   progress=False).T)
        _, edges[start:stop], n_edges[start:stop] = quantile_bins(values_t,
                                                                  out=bins[start:stop])
        if release is not None:
            release(start, stop)
    return BinnedFeatures(bins, edges, n_edges, chunk_rows=block if spill else None,
                          release=release)


MIN_MEMORY_GB = 2 ** -20   # one KiB: less rounds to nothing (the minimum for data comes later)
MAX_MEMORY_GB = 1 << 20   # a pebibyte: more is a typo, and 1e308 GiB overflows any integer


def memory_bytes(gigabytes: float) -> int:
    """A ``--memory`` setting in GiB as bytes, checked finite and positive."""
    if not (isinstance(gigabytes, (int, float)) and MIN_MEMORY_GB <= gigabytes
            <= MAX_MEMORY_GB):
        raise FacedetectError(f"memory must be between 1 KiB and {MAX_MEMORY_GB:,} GiB, "
                              f"got {gigabytes!r} GiB")
    return int(gigabytes * 2**30)


class HaarColumns:
    """The feature store of Haar features ``start..stop`` of ``pool`` on some windows,
    exact or compact (within ``memory`` bytes): what a worker computes for its shard
    (:class:`facedetect.training._sharded.ShardedFeatures`), the same numbers as the one
    process computes for those columns.

    Examples
    --------
    >>> from facedetect.haar import haar_feature_pool
    >>> columns = HaarColumns(haar_feature_pool(19, 19), exact=False, memory=2**30)
    >>> columns(np.zeros((4, 19, 19), np.uint8), 100, 300).shape
    (200, 4)
    """

    def __init__(self, pool, exact: bool, memory: int, progress: bool = False):
        self.pool, self.exact, self.memory, self.progress = pool, exact, memory, progress

    def __call__(self, windows: np.ndarray, start: int, stop: int):
        part = (self.pool if (start, stop) == (0, len(self.pool))
                else self.pool.subset(np.arange(start, stop)))
        if self.exact:
            check_memory_setting(self.memory, len(windows), len(part), exact=True)
            return exact_features(windows, part, progress=self.progress)
        return compact_features(windows, part, self.memory, progress=self.progress)


class FeatureSource:
    """Where a run computes its training windows' features: in this process within
    ``memory`` bytes (exact or compact), or, given a ``dask.distributed.Client``, sharded
    over its workers (:mod:`facedetect.training._sharded`; ``shards`` defaults to one per
    worker). A sharded source keeps its shards across a run's stages, so that each stage
    sends the workers only the windows they do not hold yet.

    Examples
    --------
    >>> from facedetect.haar import haar_feature_pool
    >>> source = FeatureSource(2**30)
    >>> source(np.zeros((4, 19, 19), np.uint8), haar_feature_pool(19, 19), False).shape
    (63960, 4)
    """

    def __init__(self, memory: int, exact: bool = False, client=None,
                 shards: int | None = None):
        self.memory, self.exact, self.client, self.shards = memory, exact, client, shards
        self._sharded = None

    def __call__(self, images: np.ndarray, pool, progress: bool):
        if self.client is not None:
            return self._on_workers(pool).set_windows(images)
        return HaarColumns(pool, self.exact, self.memory, progress)(images, 0, len(pool))

    def _on_workers(self, pool):
        from ..training._sharded import ShardedFeatures, max_shards
        if self._sharded is None or self._sharded.n_features != len(pool):
            workers = len(self.client.nthreads())
            shards = self.shards or min(workers, max_shards(len(pool)))
            # A local cluster's workers share this machine's memory setting.
            local = getattr(self.client, "cluster", None) is not None
            memory = self.memory // shards if local else self.memory
            self._sharded = ShardedFeatures(self.client, HaarColumns(pool, self.exact,
                                                                     memory),
                                            len(pool), shards)
        return self._sharded
