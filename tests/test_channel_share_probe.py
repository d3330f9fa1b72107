"""The channel-share probe's draw (benchmarks/channel_share_probe.py): what it reports as
a share is the share each round searched."""

import numpy as np

from benchmarks.channel_share_probe import round_draw


def test_a_round_draws_its_share_of_channel_features_without_repeats():
    is_channel = np.zeros(1000, bool)
    is_channel[::8] = True                        # 125 channel features
    drawn = round_draw(is_channel, 200, 0.25, 3, 7)
    assert len(np.unique(drawn)) == 200 and np.all(np.diff(drawn) > 0)
    assert is_channel[drawn].sum() == 50
    # a share above what the pool holds takes every channel feature
    assert is_channel[round_draw(is_channel, 200, 0.9, 3, 7)].sum() == 125


def test_the_draw_is_seeded_by_run_and_round():
    is_channel = np.arange(500) % 3 == 0
    first = round_draw(is_channel, 100, None, 1, 4)
    assert np.array_equal(first, round_draw(is_channel, 100, None, 1, 4))
    assert not np.array_equal(first, round_draw(is_channel, 100, None, 1, 5))
    assert not np.array_equal(first, round_draw(is_channel, 100, None, 2, 4))
