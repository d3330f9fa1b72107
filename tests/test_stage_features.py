"""A cascade's stage features: the bins of what a store computed at once with the first
stage's positives setting the edges, each positive computed once."""

from __future__ import annotations

import numpy as np
import pytest

from facedetect.haar import haar_feature_pool
from facedetect.pipeline._compact import compact_features
from facedetect.pipeline._stage_features import StageFeatures
from facedetect.pipeline._storage import FeatureSource
from facedetect.training._binned import BinnedFeatures

POOL = haar_feature_pool(19, 19, "type-2-x")


def _windows(n, seed):
    return np.random.default_rng(seed).integers(0, 256, (n, 19, 19), np.uint8)


FACES, NEGATIVES = _windows(40, 0), _windows(90, 1)
# (positives, negatives) of three stages: the positives overlap, the negatives are new.
STAGES = [(FACES[:20], NEGATIVES[:30]), (FACES[10:30], NEGATIVES[30:60]),
          (FACES[[0, 35, 12, 36, 25]], NEGATIVES[60:])]


def _at_once(first, later):
    """The later windows' store where the first stage's positives set the edges, its
    empty bins dropped."""
    windows = np.concatenate([*first, *later])
    whole = compact_features(windows, POOL, 2**30, progress=False, edges_from=len(first[0]))
    later = np.ascontiguousarray(whole.bins[:, sum(map(len, first)):])
    return BinnedFeatures(later, whole.edges, whole.n_edges).compacted()


# Room for all, for 15 positives beside a first stage of 50 windows, for none.
PARTIAL = 2 * len(POOL) * (15 + 50)


@pytest.mark.parametrize("memory", [2**30, PARTIAL, 400_000])
def test_later_stages_are_binned_at_the_first_stages_edges(memory):
    """At any memory setting: with room the positives' bins are kept, without it they are
    computed again; the bins are the same."""
    features = StageFeatures(FeatureSource(memory), POOL, positives=len(FACES))
    first = features(*STAGES[0], progress=False)
    alone = compact_features(np.concatenate(STAGES[0]), POOL, 2**30, progress=False,
                             edges_from=len(STAGES[0][0]))
    assert np.array_equal(first.bins, alone.bins)
    assert np.array_equal(first.edges, alone.edges)
    assert np.array_equal(first.edges, compact_features(STAGES[0][0], POOL, 2**30,
                                                        progress=False).edges)
    for stage in STAGES[1:]:
        store = features(*stage, progress=False)
        expected = _at_once(STAGES[0], stage)
        assert np.array_equal(store.bins, expected.bins)
        assert np.array_equal(store.edges, expected.edges)
        assert np.array_equal(store.n_edges, expected.n_edges)
        assert store.dense


def test_each_positive_is_computed_once_where_it_fits():
    features = StageFeatures(FeatureSource(2**30), POOL)
    computed = []
    for stage in STAGES:
        features(*stage, progress=False)
        computed.append(features.computed)
    # stage 2: faces 20..29 are new; stage 3: faces 35 and 36
    assert computed == [50, 10 + 30, 2 + 30]
    partial = StageFeatures(FeatureSource(PARTIAL), POOL, positives=len(FACES))
    partial(*STAGES[0], progress=False)
    partial(*STAGES[1], progress=False)
    assert partial.computed == 15 + 30     # faces 10..14 kept, 15..29 computed
    tight = StageFeatures(FeatureSource(400_000), POOL)
    for stage in STAGES:
        tight(*stage, progress=False)
    assert tight.computed == 5 + 30


def test_repeated_positives_are_kept_once_and_bins_stay_right():
    """A positive twice in one stage (a duplicate in a .vec) is computed twice that stage
    and kept once; the positives kept after it keep their own bins."""
    a, b, c = FACES[30:31], FACES[31:32], FACES[32:33]
    stages = [STAGES[0], (np.concatenate([a, a, b]), NEGATIVES[30:40]),
              (c, NEGATIVES[40:50]), (np.concatenate([b, a, c, FACES[:3]]), NEGATIVES[50:60])]
    features = StageFeatures(FeatureSource(2**30), POOL)
    for stage in stages:
        store = features(*stage, progress=False)
        assert np.array_equal(store.bins, _at_once(STAGES[0], stage).bins)
    assert features.computed == 10


def test_a_primed_run_bins_as_an_uninterrupted_one():
    """A resumed cascade primes the edges with the first stage's windows."""
    straight = StageFeatures(FeatureSource(2**30), POOL)
    for stage in STAGES[:2]:
        expected = straight(*stage, progress=False)
    resumed = StageFeatures(FeatureSource(2**30), POOL)
    resumed.prime(*STAGES[0], progress=False)
    assert np.array_equal(resumed(*STAGES[1], progress=False).bins, expected.bins)


def test_exact_features_are_computed_anew_each_stage():
    features = StageFeatures(FeatureSource(2**30, exact=True), POOL)
    assert not features.reuses
    for stage in STAGES:
        X, order = features(*stage, progress=False)
        assert X.shape == (sum(map(len, stage)), len(POOL))
    assert features.computed == 5 + 30
