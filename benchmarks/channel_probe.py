"""Issue 35's channel-features lever probed at the window, before it is built into the
trainer, the model format and the scanner: Dollár's integral channel features (box sums
over gradient-magnitude and gradient-orientation channels) beside the Haar features.

Run: ``python -m benchmarks.channel_probe [--rounds 200] [--label channel_probe]``
(``$FACEDETECT_FACES`` and ``$FACEDETECT_NEGATIVES`` as the user sets them).

Same windows and measures as :mod:`benchmarks.lever_probe` (the recipe's last-stage task:
recipe-cut training faces against the shipped model's hard negatives and random windows of
the mining pictures; held-out faces, hard negatives and random windows of the held-out
pictures measure). The channels of a 24x24 window, after the window is normalised to zero
mean and unit variance as the Haar features are (OpenCV's variance factor): the grey
levels, the gradient magnitude, and the magnitude split into six orientation bins over
0..180 degrees (Dollár et al., "Integral Channel Features", BMVC 2009; greyscale, so
without the LUV channels). A channel feature is the sum of one channel over one rectangle
(first-order ICF), drawn at random as the paper draws them. Each arm boosts AdaBoostDB
(cost 1,1) on a fixed seeded feature set.

OpenCV's cascade format cannot hold channel features: a model that used them would need
our scanner, and its export would have to leave them out.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from .common import machine, write_results
from .lever_probe import WINDOW, boost_ours, rates, windows_for_probe

N_ORIENTATIONS = 6
CHANNELS = ["grey", "gradient magnitude",
            *(f"orientation {k * 180 // N_ORIENTATIONS}-{(k + 1) * 180 // N_ORIENTATIONS}"
              for k in range(N_ORIENTATIONS))]


def window_channels(windows: np.ndarray) -> np.ndarray:
    """``(n, 8, h, w)`` float32 channels of ``(n, h, w)`` grey windows, each normalised to
    zero mean and unit variance first."""
    import cv2
    x = windows.astype(np.float32)
    x -= x.mean(axis=(1, 2), keepdims=True)
    x /= np.maximum(x.std(axis=(1, 2), keepdims=True), 1.0 / 255)
    out = np.empty((len(x), len(CHANNELS), *x.shape[1:]), np.float32)
    for i, window in enumerate(x):
        gx = cv2.Sobel(window, cv2.CV_32F, 1, 0, ksize=3)
        gy = cv2.Sobel(window, cv2.CV_32F, 0, 1, ksize=3)
        magnitude = np.hypot(gx, gy)
        angle = np.mod(np.arctan2(gy, gx), np.pi)   # 0..pi: a gradient's sign is lighting
        bins = np.minimum((angle / np.pi * N_ORIENTATIONS).astype(int), N_ORIENTATIONS - 1)
        out[i, 0], out[i, 1] = window, magnitude
        for k in range(N_ORIENTATIONS):
            out[i, 2 + k] = magnitude * (bins == k)
    return out


def channel_rectangles(count: int, seed: int) -> np.ndarray:
    """``(count, 5)`` random ``(channel, x, y, w, h)`` rectangles of sides 2 or more inside
    the window."""
    width, height = WINDOW
    rng = np.random.default_rng(seed)
    channel = rng.integers(0, len(CHANNELS), count)
    w = rng.integers(2, width + 1, count)
    h = rng.integers(2, height + 1, count)
    x = (rng.random(count) * (width - w + 1)).astype(int)
    y = (rng.random(count) * (height - h + 1)).astype(int)
    return np.stack([channel, x, y, w, h], axis=1)


def channel_matrix(windows: np.ndarray, rects: np.ndarray, batch: int = 2000) -> np.ndarray:
    """``(n, len(rects))`` float32: each rectangle's sum over its channel, per window."""
    c, x, y, w, h = rects.T
    out = np.empty((len(windows), len(rects)), np.float32)
    for start in range(0, len(windows), batch):
        channels = window_channels(windows[start:start + batch]).astype(np.float64)
        integral = np.pad(channels.cumsum(axis=2).cumsum(axis=3),
                          ((0, 0), (0, 0), (1, 0), (1, 0)))
        out[start:start + batch] = (integral[:, c, y + h, x + w] - integral[:, c, y, x + w]
                                    - integral[:, c, y + h, x] + integral[:, c, y, x])
    return out


def check_channels() -> None:
    """Oracles: a rectangle's sum against summing its pixels, and a flat window's gradient
    channels are zero."""
    rng = np.random.default_rng(1)
    windows = rng.integers(0, 256, (3, *WINDOW[::-1]), dtype=np.uint8)
    rects = channel_rectangles(50, 2)
    channels = window_channels(windows)
    brute = np.array([[channels[n, c, y:y + h, x:x + w].sum() for c, x, y, w, h in rects]
                      for n in range(len(windows))])
    assert np.allclose(channel_matrix(windows, rects), brute, rtol=1e-4, atol=1e-3), \
        "channel rectangle sums disagree with summing the pixels"
    flat = window_channels(np.full((1, *WINDOW[::-1]), 9, np.uint8))
    assert np.allclose(flat[:, 1:], 0.0), "a flat window has gradients"


def arm_rows(results: dict) -> list[str]:
    """The table row of each arm of a probe's results (rounds, the four rates, channel
    stumps, fit seconds)."""
    return [f"| {name} | {row['rounds']} | {row['tpr_at_hard_0.01']:.3f} | "
            f"{row['tpr_at_hard_0.05']:.3f} | {row['tpr_at_random_0.001']:.3f} | "
            f"{row['tpr_at_random_0.0001']:.3f} | {row['channel_stumps']} | "
            f"{row['fit_seconds']} |"
            for name, row in results.items() if isinstance(row, dict) and "rounds" in row]


def main(argv=None) -> dict:
    from facedetect.haar import feature_matrix, haar_feature_pool
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--features", type=int, default=12000)
    parser.add_argument("--faces-used", type=int, default=6000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--label", default="channel_probe")
    args = parser.parse_args(argv)
    check_channels()
    start = time.perf_counter()
    windows, labels, *tests = windows_for_probe(args.faces_used, args.seed)
    pool = haar_feature_pool(*WINDOW)
    n = args.features
    upright = pool.subset(np.sort(np.random.default_rng(args.seed).choice(len(pool), n,
                                                                          replace=False)))
    rects = channel_rectangles(n, args.seed)

    def columns(w):
        return np.hstack([feature_matrix(w, upright, progress=False), channel_matrix(w, rects)])
    X, test_X = columns(windows), [columns(t) for t in tests]
    results = {"machine": machine(), "windows": {
        "train": int(len(windows)), "train_faces": int(labels.sum()),
        "test_faces": len(tests[0]), "test_hard": len(tests[1]),
        "test_random": len(tests[2])}, "data_seconds": round(time.perf_counter() - start),
        "channels": CHANNELS}
    half = n // 2
    arms = {f"AdaBoostDB stumps, {n:,} upright Haar": np.arange(n),
            f"AdaBoostDB stumps, {n:,} channel rectangles": n + np.arange(n),
            f"AdaBoostDB stumps, {half:,} Haar + {half:,} channel rectangles":
                np.r_[np.arange(half), n + np.arange(half)],
            f"AdaBoostDB stumps, {n:,} Haar + {n:,} channel rectangles": np.arange(2 * n)}
    for name, cols in arms.items():
        begin = time.perf_counter()
        model = boost_ours(np.asfortranarray(X[:, cols]), labels, args.rounds)
        seconds = time.perf_counter() - begin
        scores = [model.decision_function(np.ascontiguousarray(t[:, cols])) for t in test_X]
        row = dict(rates(*scores), rounds=args.rounds, fit_seconds=round(seconds, 1),
                   channel_stumps=int((cols[np.asarray(model.features_)] >= n).sum()))
        results[name] = row
        print(name, row, flush=True)
    lines = [f"# Channel features probed at the window ({args.label})\n",
             f"Machine: {results['machine']}. Windows: {results['windows']}.\n",
             "Faces (held-out) above the score letting through the given share of held-out "
             "hard negatives / random windows; AdaBoostDB, cost 1,1.\n",
             "| arm | rounds | hard 1% | hard 5% | random 0.1% | random 0.01% | channel stumps | "
             "fit s |", "|---" * 8 + "|"]
    lines += arm_rows(results)
    write_results(args.label, results, "\n".join(lines) + "\n")
    return results


if __name__ == "__main__":
    main()
