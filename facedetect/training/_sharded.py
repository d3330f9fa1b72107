"""Feature-sharded boosting on a Dask cluster (``dask.distributed``).

Boosting over features splits by column, as XGBoost and LightGBM split it: every worker
holds a contiguous shard of the feature columns for all windows, computed there from the
windows, and a round is

1. the driver sends the round's sample weights (O(n)) to every shard;
2. each shard finds its best stump with the estimator's own rule (the conditional search,
   on exact or compact features) and returns it;
3. the driver keeps the best over the shards: the largest root (or the smallest loss);
   equal scores go to the lower shard, whose features all come first, which is the one
   process's tie rule (the lowest candidate index);
4. the shard that owns the winner sends its n outputs, and the driver updates the weights.

A shard's search gives the same candidate as the one process: every candidate's root
depends only on its own errors, and the errors on the feature's own sort order, so the
winner does not depend on which features share a search (tested bit for bit).

The feature matrix never moves. The windows go to the workers once per stage, as a task
whose output each shard's task reads; a worker lost mid-round is recovered by Dask
itself: its shards are recomputed from the windows on the workers left and the round's
searches run again there (``tests/test_sharded.py`` kills one). Dask is imported only
inside functions, here and in :mod:`._cluster` (connecting), when a cluster is asked for.
"""

from __future__ import annotations

import hashlib
import pickle
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
from sklearn.base import clone

from ..errors import FacedetectError
from ._rules import RoundState

# A shard smaller than this spends more time on messages than on its search.
MIN_SHARD_FEATURES = 256
# A round's shards return their best candidate's outputs with it while all of them come to
# at most this many bytes (then only the winner's owner sends its outputs, a second message).
INLINE_OUTPUT_BYTES = 16 * 2**20


def shard_bounds(n_features: int, n_shards: int) -> list[tuple[int, int]]:
    """Contiguous, balanced ``(start, stop)`` feature ranges, lowest first.

    Examples
    --------
    >>> shard_bounds(1000, 3)
    [(0, 333), (333, 666), (666, 1000)]
    """
    return [(i * n_features // n_shards, (i + 1) * n_features // n_shards)
            for i in range(n_shards)]


def max_shards(n_features: int) -> int:
    """The most shards a pool splits into (at least ``MIN_SHARD_FEATURES`` each)."""
    return max(1, n_features // MIN_SHARD_FEATURES)


@dataclass
class _Shard:
    """One worker's features: ``store`` is ``(values_t, order)`` (exact) or a
    :class:`._binned.BinnedFeatures` (compact), for the features ``start..stop``."""

    start: int
    stop: int
    store: object

    @property
    def nbytes(self) -> int:
        if isinstance(self.store, tuple):
            return int(sum(a.nbytes for a in self.store))
        return self.store.nbytes

    def __sizeof__(self) -> int:
        # Dask sizes results with sys.getsizeof on every worker: the real size, so that
        # the scheduler never thinks a shard cheap to move.
        return object.__sizeof__(self) + self.nbytes


def _build_shard(windows: np.ndarray, columns: Callable, start: int, stop: int,
                 edges_from: int | None = None, capacity: int | None = None) -> _Shard:
    """On a worker: the shard's features, computed from the windows there."""
    return _Shard(start, stop, columns(windows, start, stop, edges_from, capacity))


def _extend_shard(shard: _Shard, windows: np.ndarray, held: int, columns) -> _Shard:
    """On a worker: the shard's features on ``windows``, of which it holds the first
    ``held``: only the new windows' features are computed."""
    return _Shard(shard.start, shard.stop, columns.extend(shard.store, windows[:held],
                                                          windows[held:], shard.start,
                                                          shard.stop))


def search_shard(shard: _Shard, estimator, fields: tuple, with_stump: bool = False):
    """On a worker: the estimator's rule over the shard's features, with global feature
    indices, and the seconds it took. ``fields`` are the round's :class:`._rules.RoundState`
    numbers. ``with_stump``: the choice carries its ``(threshold, outputs)`` too."""
    start = time.perf_counter()
    weights, is_positive, p, q, a, b, cp, cn, features = fields
    if features is not None:   # the round's features that live on this shard, locally
        features = features[(features >= shard.start) & (features < shard.stop)] - shard.start
        if features.size == 0:
            return None, time.perf_counter() - start
    if isinstance(shard.store, tuple):
        values_t, order, binned = shard.store[0].T, shard.store[1], None
    else:
        values_t, order, binned = None, None, shard.store
    choice = estimator._select(RoundState(values_t, order, weights, is_positive, p, q, a, b,
                                          cp, cn, binned, features))
    if choice is not None:
        choice = dict(choice, feature=choice["feature"] + shard.start)
        if with_stump:
            choice["stump"] = _shard_stump(shard, choice["feature"], choice["position"],
                                          choice["polarity"])
    return choice, time.perf_counter() - start


def _shard_stump(shard: _Shard, feature: int, position: int, polarity: int):
    """On a worker: ``(threshold, outputs)`` of one of the shard's candidates."""
    from ._stumps import stump_predict, stump_threshold
    local = feature - shard.start
    if isinstance(shard.store, tuple):
        values_t, order = shard.store[0].T, shard.store[1]
        threshold = stump_threshold(values_t, order, local, position)
        return threshold, stump_predict(values_t[local], threshold, polarity).astype(np.int8)
    return shard.store.threshold(local, position), shard.store.outputs(local, position,
                                                                       polarity)


def merge_shards(choices: list, larger_is_better: bool = True) -> dict | None:
    """The best of the shards' choices (in shard order): equal scores go to the first.

    Examples
    --------
    >>> merge_shards([{"score": 2.0, "feature": 1, "roots": 3},
    ...               {"score": 2.0, "feature": 700, "roots": 4}])
    {'score': 2.0, 'feature': 1, 'roots': 7}
    """
    best, roots = None, 0
    for choice in choices:
        if choice is None:
            continue
        roots += int(choice["roots"])
        score = choice["score"] if larger_is_better else -choice["score"]
        if best is None or score > best[0]:
            best = (score, choice)
    return None if best is None else dict(best[1], roots=roots)


class ShardedFeatures:
    """The feature columns of some windows, sharded over a Dask cluster's workers.

    ``columns(windows, start, stop, edges_from)`` computes the store of features
    ``start..stop`` on the windows (:func:`_build_shard`) and ``columns.extend`` adds
    windows to one (:class:`facedetect.pipeline._storage.HaarColumns`); it must be
    picklable. :meth:`set_windows` sends the windows (only those the workers do not hold
    yet, when the new set extends the old) and builds every shard on its worker, or
    extends it with the new windows' features alone.

    Examples
    --------
    >>> from facedetect.training._sharded import shard_bounds
    >>> len(shard_bounds(63960, 2))
    2
    """

    def __init__(self, client, columns: Callable, n_features: int, n_shards: int):
        if not isinstance(n_shards, int) or not 1 <= n_shards <= max_shards(n_features):
            raise FacedetectError(
                f"cannot split {n_features:,} features into {n_shards!r} shards: choose "
                f"1 to {max_shards(n_features)} (at least {MIN_SHARD_FEATURES} features "
                "each)")
        self.client = client
        self.columns = columns
        self.bounds = shard_bounds(n_features, n_shards)
        self.n_features = n_features
        self.n_windows = 0
        self._windows = None       # the future of the windows the workers hold
        self._digest = None        # and their digest
        self._edges_from = None    # the windows that set the compact bins' edges
        self._shards = []
        self._last = None          # (feature, position, polarity) -> (threshold, outputs)
        self._selector = None      # (estimator, its unfitted copy, pickled size)
        self.bytes_sent = 0        # the last round's payload: weights out, outputs back
        self.search_seconds = []   # the last round's search time on each shard

    @property
    def shape(self) -> tuple[int, int]:
        return self.n_features, self.n_windows

    def set_windows(self, windows: np.ndarray, edges_from: int | None = None,
                    capacity: int | None = None) -> "ShardedFeatures":
        """Compute every shard's features on ``windows`` (uint8, ``(n, h, w)``); compact
        bins take their edges from the first ``edges_from`` windows (None: all), with
        room for ``capacity`` windows."""
        windows = np.ascontiguousarray(windows)
        client = self.client
        held = self.n_windows
        appends = (self._windows is not None and 0 < held <= len(windows)
                   and windows_digest(windows[:held]) == self._digest)
        if appends:
            # Bootstrapping appends windows to the ones the workers hold: send only those.
            self._windows = client.submit(np.concatenate, [self._windows, windows[held:]],
                                          pure=False)
        else:
            self._windows = client.submit(np.array, windows, pure=False)
        self.computed = len(windows)   # windows whose features this call computes
        if appends and edges_from is not None and edges_from == self._edges_from:
            # ... and compute only their features, at the edges the shards have.
            self.computed = len(windows) - held
            self._shards = [client.submit(_extend_shard, shard, self._windows, held,
                                          self.columns, pure=False)
                            for shard in self._shards]
        else:
            self._shards = []  # drop the old features before the new are built
            workers = sorted(client.nthreads())   # every worker (scheduler_info lists five)
            self._shards = [client.submit(_build_shard, self._windows, self.columns, start,
                                          stop, edges_from, capacity,
                                          workers=[workers[i % len(workers)]],
                                          allow_other_workers=True, pure=False)
                            for i, (start, stop) in enumerate(self.bounds)]
        self._digest, self._edges_from = windows_digest(windows), edges_from
        _wait(self._shards)
        for future in self._shards:   # a build's error is the user's, not Dask's
            if future.status == "error":
                future.result()
        self.n_windows = len(windows)
        self._last = None
        return self

    def select(self, estimator, state: RoundState) -> dict | None:
        """The round's stump: every shard's best, merged with the one process's tie rule."""
        fields = (np.ascontiguousarray(state.weights, np.float64),
                  np.ascontiguousarray(state.is_positive, np.bool_),
                  state.p, state.q, state.a, state.b, state.cp, state.cn, state.features)
        if self._selector is None or self._selector[0] is not estimator:
            # The rule needs only the estimator's parameters: ship an unfitted copy, a few
            # hundred bytes, rather than the growing fitted one.
            selector = clone(estimator)
            self._selector = (estimator, selector, len(pickle.dumps(selector)))
        _, selector, selector_bytes = self._selector
        # While every shard's outputs together are small, each shard returns its best
        # candidate's outputs with it, saving the winner's owner a second message.
        with_stump = len(self._shards) * self.n_windows <= INLINE_OUTPUT_BYTES
        futures = [self.client.submit(search_shard, shard, selector, fields, with_stump,
                                      pure=False) for shard in self._shards]
        results = self.client.gather(futures)
        choices = [choice for choice, _ in results]
        stumps = [c.pop("stump", None) if c is not None else None for c in choices]
        # What a round moves, for the benchmark: the weights, classes and rule to every
        # shard, the outputs back; and each shard's search time.
        self.bytes_sent = len(self._shards) * (fields[0].nbytes + fields[1].nbytes
                                               + selector_bytes)
        self.bytes_sent += sum(stump[1].nbytes for stump in stumps if stump is not None)
        self.search_seconds = [seconds for _, seconds in results]
        best = merge_shards(choices, larger_is_better=estimator.selection == "root")
        if best is not None and with_stump:
            winner = stumps[self._owner(best["feature"])]
            self._last = ((best["feature"], best["position"], best["polarity"]), winner)
        return best

    def stump(self, feature: int, position: int, polarity: int):
        """``(threshold, outputs)`` of a candidate, from the shard that owns its feature."""
        key = (feature, position, polarity)
        if self._last is None or self._last[0] != key:
            result = self.client.submit(_shard_stump, self._shards[self._owner(feature)],
                                        feature, position, polarity, pure=False).result()
            self.bytes_sent += result[1].nbytes
            self._last = (key, result)
        return self._last[1]

    def _owner(self, feature: int) -> int:
        return next(i for i, (start, stop) in enumerate(self.bounds) if start <= feature < stop)

    def outputs_at(self, feature: int, threshold: float, polarity: int) -> np.ndarray:
        """Outputs of a stump already chosen in this run (the last one, or recomputed)."""
        if self._last is not None:
            (f, _, p), (t, outputs) = self._last
            if (f, p) == (feature, polarity) and t == threshold:
                return outputs
        return self.client.submit(_outputs_at, self._shards[self._owner(feature)], feature,
                                  threshold, polarity, pure=False).result()


def _outputs_at(shard: _Shard, feature: int, threshold: float, polarity: int) -> np.ndarray:
    local = feature - shard.start
    if isinstance(shard.store, tuple):
        values = shard.store[0][:, local]
    else:
        return shard.store.outputs_at(local, threshold, polarity)
    return np.where(values > threshold, polarity, -polarity).astype(np.int8)


def windows_digest(windows: np.ndarray) -> bytes:
    """A digest of a stack of windows, their shape and type."""
    return hashlib.blake2b(windows.tobytes(), digest_size=16).digest() + repr(
        (windows.shape, windows.dtype.str)).encode()


def _wait(futures):
    from dask.distributed import wait
    wait(futures)
