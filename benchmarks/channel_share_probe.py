"""Issue 35's channel-share lever probed at the window, before it is built into the trainer:
each boosting round of the recipe searches 16,234 features drawn at random from the whole
pool (upright, tilted and channel features), so about one in eight of them is a channel
feature, yet the booster takes 330 of the default model's 900 stumps from the channels.
Would drawing channel features more often, at the same count a round, pay?

Run: ``python -m benchmarks.channel_share_probe [--rounds 200] [--label channel_share_probe]``
(``$FACEDETECT_FACES`` and ``$FACEDETECT_NEGATIVES`` as the user sets them).

Windows and measures are :mod:`benchmarks.lever_probe`'s (the recipe's last-stage task;
held-out faces, hard negatives and random windows of the held-out pictures measure). The
features are a seeded ``--pool``-feature sample of the recipe's own 24x24 pool (the five
basic types, the tilted ones and the channel features, in the pool's proportions), so each
arm searches the recipe's kind of features with the recipe's code. Each arm boosts
AdaBoostDB (cost 1,1) over ``--rounds`` rounds, round ``t`` searching ``--per-round``
features drawn from ``(seed, t)``: with the pool's own share of channel features (the
recipe), or with a set share of them.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from .common import machine, write_results
from .channel_probe import arm_rows
from .lever_probe import WINDOW, rates, windows_for_probe


def round_draw(is_channel: np.ndarray, count: int, share: float | None, seed: int,
               round_index: int) -> np.ndarray:
    """The sorted features round ``round_index`` searches: ``count`` drawn without
    replacement, ``share`` of them channel features (None: uniform over the pool; at most
    every channel feature)."""
    rng = np.random.default_rng([seed, round_index])
    if share is None:
        return np.sort(rng.choice(len(is_channel), count, replace=False))
    channel, haar = np.flatnonzero(is_channel), np.flatnonzero(~is_channel)
    n_channel = min(len(channel), round(share * count))
    return np.sort(np.r_[rng.choice(channel, n_channel, replace=False),
                         rng.choice(haar, count - n_channel, replace=False)])


def boost_with_share(X, y, rounds: int, per_round: int, is_channel, share, seed: int):
    """AdaBoostDB whose rounds search :func:`round_draw`'s features."""
    from facedetect.training import AdaBoostDB

    class Drawn(AdaBoostDB):
        def _round_features(self, round_index, n_features):
            return round_draw(is_channel, per_round, share, seed, round_index)
    return Drawn(n_rounds=rounds, cost=(1, 1), random_state=seed).fit(X, y)


def main(argv=None) -> dict:
    from facedetect.haar import feature_matrix, haar_feature_pool
    from facedetect.haar._channels import CHANNEL_TYPES
    from facedetect.haar._features import ALL_FEATURE_TYPES
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--pool", type=int, default=60000)
    parser.add_argument("--per-round", type=int, default=16234)
    parser.add_argument("--faces-used", type=int, default=6000)
    parser.add_argument("--shares", default="none,0.25,0.5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--label", default="channel_share_probe")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    windows, labels, *tests = windows_for_probe(args.faces_used, args.seed)
    full = haar_feature_pool(*WINDOW, ALL_FEATURE_TYPES + CHANNEL_TYPES)
    rng = np.random.default_rng(args.seed)
    pool = full.subset(np.sort(rng.choice(len(full), args.pool, replace=False)))
    is_channel = pool.channels >= 0
    X = feature_matrix(windows, pool, progress=False)
    results = {"machine": machine(), "windows": {
        "train": int(len(windows)), "train_faces": int(labels.sum()),
        "test_faces": len(tests[0]), "test_hard": len(tests[1]),
        "test_random": len(tests[2])}, "pool": len(pool), "full_pool": len(full),
        "pool_channel_share": round(float(is_channel.mean()), 4),
        "per_round": args.per_round, "data_seconds": round(time.perf_counter() - start)}
    for text in args.shares.split(","):
        share = None if text == "none" else float(text)
        begin = time.perf_counter()
        model = boost_with_share(X, labels, args.rounds, args.per_round, is_channel, share,
                                 args.seed)
        seconds = time.perf_counter() - begin
        used = np.asarray(model.features_)
        # only the chosen features of the test windows: the whole pool would not fit
        columns = np.unique(used)
        sub = pool.subset(columns)
        remap = np.searchsorted(columns, used)
        scores = []
        for test in tests:
            values = feature_matrix(test, sub, progress=False)[:, remap]
            scores.append(_scores(model, values))
        drawn = int(is_channel[round_draw(is_channel, args.per_round, share, args.seed,
                                          0)].sum())
        name = ("the pool's share (the recipe)" if share is None else f"share {share:g}") + \
            f": {drawn:,}"
        row = dict(rates(*scores), rounds=args.rounds, fit_seconds=round(seconds, 1),
                   channel_stumps=int(is_channel[used].sum()))
        results[name] = row
        print(name, row, flush=True)
    write_results(args.label, results, _table(args, results))
    return results


def _scores(model, values: np.ndarray) -> np.ndarray:
    """``sum_t alpha_t h_t(x)`` from the values of the model's stumps' features, in order
    (column t is stump t's feature)."""
    votes = np.where(values > model.thresholds_, model.polarities_, -model.polarities_)
    return votes @ model.alphas_


def _table(args, results: dict) -> str:
    lines = [f"# Channel share a round, probed at the window ({args.label})\n",
             f"Machine: {results['machine']}. Windows: {results['windows']}. Features: "
             f"{results['pool']:,} of the recipe's {results['full_pool']:,} (channel share "
             f"{results['pool_channel_share']}), {results['per_round']:,} searched a round.\n",
             "Faces (held-out) above the score letting through the given share of held-out "
             "hard negatives / random windows; AdaBoostDB, cost 1,1.\n",
             "| channel features a round: share, count | rounds | hard 1% | hard 5% "
             "| random 0.1% | random 0.01% | channel stumps | fit s |", "|---" * 8 + "|"]
    return "\n".join(lines + arm_rows(results)) + "\n"


if __name__ == "__main__":
    main()
