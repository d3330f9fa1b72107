"""Feature-matrix speed: our pool over all CBCL windows against scikit-image.

Run: ``python -m benchmarks.haar_features [--skimage-windows N]``

scikit-image's ``haar_like_feature`` takes about 0.13 s per 19x19 window for the full pool,
so it is timed on the first N windows (default 40) of the same data and its per-window time
is scaled to the full set. Both outputs are compared on those windows.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from skimage.feature import haar_like_feature, haar_like_feature_coord
from skimage.transform import integral_image

from facedetect.data import load_cbcl
from facedetect.haar import feature_matrix, haar_feature_pool

from .common import machine, peak_rss_mb, timed, write_results


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="CBCL folder (default: the usual search)")
    parser.add_argument("--skimage-windows", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    windows = load_cbcl(args.data).images
    pool = haar_feature_pool(19, 19)
    feature_matrix(windows[:8], pool, progress=False)  # compile the kernel
    rss_before = peak_rss_mb()
    ours_normalized, X = timed(feature_matrix, windows, pool, progress=False,
                               repeat=args.repeat)
    rss_after = peak_rss_mb()
    # Into an existing buffer: the kernel alone, without the page faults of a new 1.7 GB.
    out = np.empty((len(pool), len(windows)), np.float32)
    ours, X = timed(feature_matrix, windows, pool, normalize=False, progress=False,
                    out=out, repeat=args.repeat)

    coords, types = haar_like_feature_coord(19, 19)
    sample = windows[:args.skimage_windows]
    start = time.perf_counter()
    reference = np.stack([haar_like_feature(integral_image(w.astype(np.float64)), 0, 0, 19, 19,
                                            feature_type=types, feature_coord=coords)
                          for w in sample])
    skimage_per_window = (time.perf_counter() - start) / len(sample)
    identical = bool(np.array_equal(reference.astype(np.float32), X[:len(sample)]))
    skimage_full = skimage_per_window * len(windows)

    results = {
        "machine": machine(), "windows": len(windows), "features": len(pool),
        "ours_raw_s": ours, "ours_normalized_s": ours_normalized,
        "skimage_s_per_window": skimage_per_window, "skimage_windows_timed": len(sample),
        "skimage_full_set_s_estimated": skimage_full, "speedup": skimage_full / ours,
        "speedup_with_allocation": skimage_full / ours_normalized,
        "values_identical_to_skimage": identical,
        "matrix_mb": X.nbytes / 2**20, "peak_rss_mb": rss_after,
        "peak_rss_increase_mb": rss_after - rss_before,
    }
    rows = "\n".join([
        "| facedetect `feature_matrix` (raw, into an existing buffer) "
        f"| {ours:.2f} s | {ours / len(windows) * 1e6:.0f} us |",
        "| facedetect `feature_matrix` (normalised, new matrix allocated) "
        f"| {ours_normalized:.2f} s | {ours_normalized / len(windows) * 1e6:.0f} us |",
        f"| scikit-image `haar_like_feature` | {skimage_full:.0f} s (from {len(sample)} windows) "
        f"| {skimage_per_window * 1e3:.1f} ms |",
    ])
    with_allocation = results["speedup_with_allocation"]
    markdown = f"""# Haar feature matrix: {len(pool):,} features x {len(windows):,} CBCL windows

Machine: {results['machine']}

| method | time for the full set | per window |
|---|---|---|
{rows}

Speed-up over scikit-image: **{results['speedup']:.0f}x** (kernel), {with_allocation:.0f}x
with the allocation. Values identical on the
{len(sample)} compared windows: {identical}. Matrix: {results['matrix_mb']:.0f} MiB float32;
peak RSS of the benchmark process {rss_after:.0f} MiB (data, matrix and numba runtime).
"""
    write_results("haar_features", results, markdown)
    return results


if __name__ == "__main__":
    main()
