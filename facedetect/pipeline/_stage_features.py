"""A cascade's stage features, each positive's computed once (:class:`StageFeatures`).

Each stage of a cascade trains on the positives the stages before it accept and on
negatives mined anew. Computed anew, every stage would compute the features of all its
windows and cut each feature at its own quantiles: about 3 s a stage for 950 windows of
213,536 features on two cores, most of a short stage. Here the first stage's positives
set the bins' edges (their quantiles: a stage keeps nearly every positive, so its cuts lie
among them, and the later stages' negatives look like them), and every stage computes only
what it has not seen: its negatives, and positives no stage sampled before, binned at those
edges. A positive's bins are kept once computed, since the positives come back stage after
stage. A stage's store drops the bins none of its windows holds (as
:meth:`BinnedFeatures.compacted` does), and holds until the next stage's is made.
"""

from __future__ import annotations

import numpy as np

from ..training._binned import BinnedFeatures
from ._compact import compact_features, windows_at_edges
from ._stage_kernels import assemble_compacted
from ._storage import FeatureSource


class StageFeatures:
    """The feature store of each stage of one cascade run, from ``source``.

    Call it with a stage's ``(positives, negatives)``; the store holds the positives'
    columns first. ``positives``: how many distinct positives the run has, the most it
    keeps. The first call (or :meth:`prime`, which a resumed run calls with the first
    stage's windows) sets the edges from its positives. A source that shards the features
    over workers or keeps them exact computes every stage anew, at its own windows'
    quantiles. Positive bins are kept only while they fit in the memory setting beside a
    stage's bins; past that they are computed again, at the same edges: the same cascade
    at any setting.

    Examples
    --------
    >>> from facedetect.haar import haar_feature_pool
    >>> rng = np.random.default_rng(0)
    >>> faces, other = (rng.integers(0, 256, (n, 19, 19), np.uint8) for n in (20, 30))
    >>> pool = haar_feature_pool(19, 19, "type-2-x")
    >>> features = StageFeatures(FeatureSource(2**30), pool, positives=len(faces))
    >>> features(faces[:10], other[:10], progress=False).shape
    (17100, 20)
    >>> features(faces[5:15], other[10:], progress=False).shape   # 5 positives kept
    (17100, 30)
    >>> features.computed
    25
    """

    def __init__(self, source: FeatureSource, pool, positives: int | None = None):
        self.source, self.pool, self.positives = source, pool, positives
        self.edges = None            # (edges, n_edges) the first stage's positives set
        self.columns = {}            # a kept positive's bytes -> its column of self.kept
        self.kept = np.empty((len(pool), 0), np.uint8)   # the room; the first n_kept used
        self.n_kept = 0
        self.computed = 0            # windows whose features the last call computed
        self.stage_edges = None      # the last stage's cuts: valid until the next call

    @property
    def reuses(self) -> bool:
        """Whether stages after the first reuse the first one's edges and kept positives."""
        return self.source.client is None and not self.source.exact

    def prime(self, positives: np.ndarray, negatives: np.ndarray,
              progress: bool) -> BinnedFeatures:
        """The first stage's store; its positives' quantiles set the edges."""
        windows = np.concatenate([positives, negatives])
        self.computed = len(windows)
        if not self.reuses:
            return self.source(windows, self.pool, progress)
        # Edges at the positives' quantiles (the module says why); measured against the
        # first stage's windows' quantiles, at OpenCV's rule the cascade reached OpenCV's
        # false alarms in 64.7 s instead of 85.2 s keeping more faces (trainers_positive_edges).
        store = compact_features(windows, self.pool, self.source.memory, progress,
                                 edges_from=len(positives))
        self.edges = (store.edges, store.n_edges)
        self.columns, self.n_kept = {}, 0
        self._keep(positives, store.bins, len(store.bins[0]))
        return store

    def __call__(self, positives: np.ndarray, negatives: np.ndarray, progress: bool):
        if self.edges is None or not self.reuses:
            return self.prime(positives, negatives, progress)
        kept_column = np.array([self.columns.get(p.tobytes(), -1) for p in positives],
                               np.intp)
        new = np.flatnonzero(kept_column < 0)
        fresh = windows_at_edges(np.concatenate([positives[new], negatives]), self.pool,
                                 *self.edges, self.source.memory, progress)
        self.computed = len(fresh[0])
        n = len(positives) + len(negatives)
        fresh_column = np.full(n, -1, np.intp)
        fresh_column[new] = np.arange(len(new))
        fresh_column[len(positives):] = np.arange(len(new), len(fresh[0]))
        kept_column = np.r_[kept_column, np.full(len(negatives), -1, np.intp)]
        bins = np.empty((len(self.pool), n), np.uint8)
        if self.stage_edges is None:   # one buffer for every stage's cuts
            self.stage_edges = (np.empty_like(self.edges[0]), np.empty_like(self.edges[1]))
        # Binned at the first stage's edges, a stage's windows leave bins empty: dropped
        # as they are written (BinnedFeatures.compacted), or the search would count every
        # feature's bins each round.
        assemble_compacted(self.kept, fresh, kept_column, fresh_column, self.edges[0], bins,
                           *self.stage_edges, max(1, min(64, len(self.pool))))
        self._keep(positives[new], fresh, n)
        return BinnedFeatures(bins, *self.stage_edges, dense=True)

    def _keep(self, positives: np.ndarray, bins: np.ndarray, stage_columns: int) -> None:
        """Keep the bins of ``positives`` (the first columns of ``bins``) while there is
        room: the room is made once, for every positive of the run where half the memory
        setting holds them beside a stage's bins, else for as many as it holds."""
        if not self.kept.shape[1]:
            budget = self.source.memory // 2 // len(self.pool) - stage_columns
            room = max(0, min(budget, self.positives or budget))
            self.kept = np.empty((len(self.pool), room), np.uint8)
        take = min(len(positives), self.kept.shape[1] - self.n_kept)
        if take <= 0:
            return
        held = self.n_kept
        self.kept[:, held:held + take] = bins[:, :take]
        self.n_kept += take
        for column, positive in enumerate(positives[:take], start=held):
            self.columns.setdefault(positive.tobytes(), column)
