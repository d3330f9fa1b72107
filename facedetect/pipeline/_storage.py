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

With ``keep_features`` a run that mines hard negatives extends its compact features
stage by stage: the first stage's windows set the bins' edges (their quantiles) and the
windows mined later are binned at those edges (:func:`._compact.extend_features`), so that
no window's features are computed twice in the mining stages. Otherwise each stage
computes its windows' features anew, as the recipe does.
"""

from __future__ import annotations

import numpy as np

from ..errors import FacedetectError
from ..haar import feature_matrix
from ..training._stumps import presort
from ._compact import (check_memory_setting, compact_features, extend_features,  # noqa: F401
                       minimum_memory, spilled_bytes)


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

    def _part(self, start: int, stop: int):
        return (self.pool if (start, stop) == (0, len(self.pool))
                else self.pool.subset(np.arange(start, stop)))

    def __call__(self, windows: np.ndarray, start: int, stop: int,
                 edges_from: int | None = None, capacity: int | None = None):
        """The store of ``windows``; compact bins take their edges from the first
        ``edges_from`` windows (None: all), with room for ``capacity`` windows."""
        part = self._part(start, stop)
        if self.exact:
            check_memory_setting(self.memory, len(windows), len(part), exact=True)
            return exact_features(windows, part, progress=self.progress)
        return compact_features(windows, part, self.memory, progress=self.progress,
                                edges_from=edges_from, capacity=capacity)

    def extend(self, store, held: np.ndarray, windows: np.ndarray, start: int, stop: int):
        """The store of ``held`` windows (which ``store`` holds) followed by ``windows``:
        compact bins computed for the new windows alone, at the store's edges; exact
        features (values and their sort order) computed anew."""
        if self.exact:
            return self(np.concatenate([held, windows]), start, stop)
        return extend_features(store, windows, self._part(start, stop), self.memory,
                               progress=self.progress)


class FeatureSource:
    """Where a run computes its training windows' features: in this process within
    ``memory`` bytes (exact or compact), or, given a ``dask.distributed.Client``, sharded
    over its workers (:mod:`facedetect.training._sharded`; ``shards`` defaults to one per
    worker). Called with ``edges_from`` (a run that mines hard negatives: its first
    windows set the edges, and ``capacity`` says how many windows the run may reach), the
    source keeps the store, and a later call whose windows extend those computes only
    the new windows' features; a sharded source sends the workers only the windows they
    do not hold yet. ``scratch_bytes`` counts the stores' spill files.

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
        self._held = None         # (store, windows, edges_from) kept for the next stage
        self.scratch_bytes = 0
        self.computed = 0         # windows whose features the last call computed

    def __call__(self, images: np.ndarray, pool, progress: bool,
                 edges_from: int | None = None, capacity: int | None = None):
        if self.client is not None:
            sharded = self._on_workers(pool).set_windows(images, edges_from, capacity)
            self.computed = sharded.computed
            return sharded
        columns = HaarColumns(pool, self.exact, self.memory, progress)
        held, self._held = self._held, None   # the old store goes before a new one comes
        if held is not None and _extends(held, images, edges_from):
            store, windows, _ = held
            grown = columns.extend(store, windows, images[len(windows):], 0, len(pool))
            if getattr(grown, "buffer", None) is not getattr(store, "buffer", None):
                self.scratch_bytes += spilled_bytes(grown)   # a new buffer, not the room
            store = grown
            self.computed = len(images) - len(windows)
        else:
            held = None
            store = columns(images, 0, len(pool), edges_from, capacity)
            self.scratch_bytes += spilled_bytes(store)
            self.computed = len(images)
        if edges_from is not None:
            self._held = (store, images, edges_from)
        return store

    def release(self) -> None:
        """Forget the store kept for a next stage (the run's last stage has boosted)."""
        self._held = None

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


def _extends(held, images: np.ndarray, edges_from: int | None) -> bool:
    """Whether ``images`` are the held store's windows and more, with the same edges."""
    _, windows, held_edges_from = held
    return (held_edges_from == edges_from and len(windows) <= len(images)
            and images.shape[1:] == windows.shape[1:]
            and np.array_equal(images[:len(windows)], windows))
