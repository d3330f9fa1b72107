"""Compact features within a memory setting: computed a block of features at a time, held
in memory or spilled to a file, and windows added later binned at the edges already set
(:mod:`._storage` says where a run's features live).
"""

from __future__ import annotations

import math
import mmap
import os
import tempfile

import numpy as np

from .._utils.progress import progress_bar
from ..errors import FacedetectError
from ..haar import feature_matrix
from ..haar._matrix import PreparedWindows
from ..training._binned import BinnedFeatures, bins_at_edges, quantile_bins

__all__ = ["check_memory_setting", "compact_features", "extend_features", "minimum_memory",
           "spilled_bytes", "windows_at_edges"]

# Compact storage: the float32 values of one block of features are computed, binned and
# dropped. A block is at most this share of the memory setting.
BLOCK_SHARE = 8
PREPARED_SHARE = 4   # of the memory, at most, for the windows' integral images
MIN_BLOCK_FEATURES = 64


def _exact_bytes(n_windows: int, n_features: int) -> int:
    """float32 values plus the sort order (uint16 up to 32,767 windows, else uint32)."""
    return n_windows * n_features * (4 + (2 if n_windows <= 0x7FFF else 4))


def minimum_memory(n_windows: int) -> int:
    """The least memory setting compact storage works with: one block of the fewest
    features, as float32 and as bins, within a block's share of the setting. Below it the
    block outgrew its share (so 1 KiB was taken for 64 features of every window), and
    thousands of such blocks each computed the windows' integral images again."""
    return BLOCK_SHARE * MIN_BLOCK_FEATURES * n_windows * (4 + 1)


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
            f"{least / 2**20:.1f} MiB (--memory {math.ceil(least / 2**30 * 1000) / 1000:g})")


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


def _prepared(windows: np.ndarray, pool, memory: int):
    """``(prepared windows or None, their bytes)``: the windows' integral images, computed
    once for every block where they fit in a quarter of the memory (each block recomputed
    them before: 80% of the feature step)."""
    if not len(windows):
        return None, 0
    prepared = PreparedWindows(pool)
    nbytes = prepared.nbytes(len(windows))
    if nbytes > memory // PREPARED_SHARE:
        return None, 0
    return prepared.prepare(windows), nbytes


def _buffer(n_features: int, columns: int, spill: bool):
    """``(bins, release or None)``: a ``(n_features, columns)`` buffer in memory (its pages
    taken as they are written), or in a spill file."""
    if not spill:
        return np.empty((n_features, columns), dtype=np.uint8), None
    mapped = _spill_file(n_features, columns)
    bins = np.frombuffer(mapped, dtype=np.uint8,
                         count=n_features * columns).reshape(n_features, columns)
    return bins, _releaser(mapped, columns)


def _blocks_of_values(windows: np.ndarray, pool, memory: int, stored: int,
                      progress: bool):
    """``(block, spill, blocks)``: the features a block holds, whether ``stored`` bytes
    of bins do not fit in memory beside the work, and the float32 values ``(start, stop,
    values_t)`` of each block in turn."""
    n_windows, n_features = len(windows), len(pool)
    block = max(MIN_BLOCK_FEATURES, memory // BLOCK_SHARE // (5 * max(n_windows, 1)))
    prepared, prepared_bytes = _prepared(windows, pool, memory)
    spill = stored > memory - block * n_windows * 5 - prepared_bytes

    def blocks():
        for start in progress_bar(range(0, n_features, block), desc="features",
                                  unit="block", disable=not progress, leave=False):
            stop = min(n_features, start + block)
            yield start, stop, (prepared.features(start, stop) if prepared is not None else
                                feature_matrix(windows, pool.subset(np.arange(start, stop)),
                                               progress=False).T)
    return block, spill, blocks()


def compact_features(windows: np.ndarray, pool, memory: int, progress: bool = True,
                     edges_from: int | None = None,
                     capacity: int | None = None) -> BinnedFeatures:
    """The windows' quantile bins for every feature of ``pool``, within ``memory`` bytes.
    ``edges_from``: only the first that many windows' quantiles set the edges, and the
    rest are binned at them, as :func:`extend_features` bins the windows it adds: the
    store a run extended stage by stage, computed at once. ``capacity``: room for that
    many windows in all, which :func:`extend_features` fills without a copy.

    Examples
    --------
    >>> import numpy as np
    >>> from facedetect.haar import haar_feature_pool
    >>> windows = np.random.default_rng(0).integers(0, 256, (50, 19, 19), dtype=np.uint8)
    >>> compact_features(windows, haar_feature_pool(19, 19), 2**30, progress=False).shape
    (63960, 50)
    """
    n_windows, n_features = len(windows), len(pool)
    first = n_windows if edges_from is None else int(edges_from)
    if not 0 < first <= n_windows:
        raise ValueError(f"edges_from must be in 1..{n_windows}, got {edges_from!r}")
    columns = max(n_windows, capacity or 0)
    check_memory_setting(memory, n_windows, n_features, exact=False)
    block, spill, blocks = _blocks_of_values(windows, pool, memory, n_features * columns,
                                             progress)
    room, release = _buffer(n_features, columns, spill)
    edges = np.empty((n_features, 255), dtype=np.float32)
    n_edges = np.empty(n_features, dtype=np.int64)
    for start, stop, values_t in blocks:
        head = values_t if first == n_windows else np.ascontiguousarray(values_t[:, :first])
        # Written in place when the buffer has no room left over, else through a block.
        out = room[start:stop] if columns == first else np.empty(head.shape, np.uint8)
        _, edges[start:stop], n_edges[start:stop] = quantile_bins(head, out=out)
        if columns != first:
            room[start:stop, :first] = out
        if first < n_windows:
            room[start:stop, first:n_windows] = bins_at_edges(
                values_t[:, first:], edges[start:stop], n_edges[start:stop])
        if release is not None:
            release(start, stop)
    return BinnedFeatures(room[:, :n_windows], edges, n_edges,
                          chunk_rows=block if spill else None, release=release, dense=True,
                          room=room if columns > n_windows else None)


def extend_features(store: BinnedFeatures, windows: np.ndarray, pool, memory: int,
                    progress: bool = True) -> BinnedFeatures:
    """A store of ``store``'s windows and ``windows``, these binned at its edges: only
    their features are computed. They go into the room ``store`` was made with; where
    there is none, both go to a new buffer (in memory, or a spill file past ``memory``).

    Examples
    --------
    >>> from facedetect.haar import haar_feature_pool
    >>> rng = np.random.default_rng(0)
    >>> windows = rng.integers(0, 256, (30, 19, 19), dtype=np.uint8)
    >>> pool = haar_feature_pool(19, 19, "type-2-x")
    >>> store = compact_features(windows[:20], pool, 2**30, progress=False, capacity=30)
    >>> grown = extend_features(store, windows[20:], pool, 2**30, progress=False)
    >>> whole = compact_features(windows, pool, 2**30, progress=False, edges_from=20)
    >>> grown.shape, bool((grown.bins == whole.bins).all()), store.shape
    ((17100, 30), True, (17100, 20))
    """
    if not len(windows):
        return store
    n_features, held = store.shape
    check_memory_setting(memory, len(windows), n_features, exact=False)
    has_room = store.room is not None and store.room.shape[1] >= held + len(windows)
    stored = 0 if has_room else n_features * (held + len(windows))
    block, spill, blocks = _blocks_of_values(windows, pool, memory, stored, progress)
    if has_room:
        grown = store.grown(len(windows))
    else:   # no room: a new buffer, the bins so far copied a block at a time below
        room, release = _buffer(n_features, held + len(windows), spill)
        grown = BinnedFeatures(room, store.edges, store.n_edges,
                               chunk_rows=block if spill else None, release=release,
                               dense=store.dense)
    for start, stop, values_t in blocks:
        if not has_room:
            grown.bins[start:stop, :held] = store.bins[start:stop]
        grown.bins[start:stop, held:] = bins_at_edges(values_t, store.edges[start:stop],
                                                      store.n_edges[start:stop])
        if grown.release is not None:
            grown.release(start, stop)
    return grown


def windows_at_edges(windows: np.ndarray, pool, edges: np.ndarray, n_edges: np.ndarray,
                     memory: int, progress: bool = True) -> np.ndarray:
    """The ``(n_features, n)`` bins of ``windows`` at edges already set, their features
    computed a block at a time within ``memory`` bytes: the bins :func:`compact_features`
    gives windows past ``edges_from``.

    Examples
    --------
    >>> from facedetect.haar import haar_feature_pool
    >>> rng = np.random.default_rng(0)
    >>> windows = rng.integers(0, 256, (30, 19, 19), dtype=np.uint8)
    >>> pool = haar_feature_pool(19, 19, "type-2-x")
    >>> whole = compact_features(windows, pool, 2**30, progress=False, edges_from=20)
    >>> bins = windows_at_edges(windows[20:], pool, whole.edges, whole.n_edges, 2**30,
    ...                         progress=False)
    >>> bool((bins == whole.bins[:, 20:]).all())
    True
    """
    n_features = len(pool)
    out = np.empty((n_features, len(windows)), np.uint8)
    if not len(windows):
        return out
    check_memory_setting(memory, len(windows), n_features, exact=False)
    _, _, blocks = _blocks_of_values(windows, pool, memory, 0, progress)
    for start, stop, values_t in blocks:
        bins_at_edges(values_t, edges[start:stop], n_edges[start:stop], out=out[start:stop])
    return out


def spilled_bytes(store) -> int:
    """Bytes of a compact store's bins in a spill file."""
    if not isinstance(store, BinnedFeatures) or store.release is None:
        return 0
    return int(store.buffer.nbytes)
