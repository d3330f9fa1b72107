"""How deep the scan's windows run: stumps evaluated per window, and where the work goes.

For each model file, windows are drawn from every pyramid level of the five speed
photographs (:data:`benchmarks.detection.IMAGES`, the ones ``detect``'s time is measured
on) on the coarse grid a refined scan scores first; each window's running score is
compared with the coarse pass's rejection levels (:func:`facedetect.detector._scan.
reject_levels`), which is where the scanner stops it. Reported: the mean number of
stumps a window runs, the share still running after stumps 5, 10, 20 and 100, and the
share of the stump evaluations spent in the first 20 stumps. The scanner's time follows
the first column: this tells a slower model's extra work from a slower scanner's.

Run: ``python -m benchmarks.rejection_depth MODEL ... [--label rejection_depth]``
"""

from __future__ import annotations

import argparse

import numpy as np

from .common import machine, write_results

WINDOWS_PER_LEVEL = 400
SEED = 0
AFTER = (5, 10, 20, 100)


def sample_windows(window, params) -> np.ndarray:
    """``WINDOWS_PER_LEVEL`` windows (or all) of each level of each speed photograph, on
    the refined scan's coarse grid, drawn with a fixed seed."""
    from PIL import Image
    from skimage import data

    from facedetect.detector._multiscale import pyramid_scales
    from facedetect.detector._pyramid import Pyramid
    from facedetect.detector._scan import REFINE_STEP
    from facedetect.images import to_grey

    from .detection import IMAGES
    rng = np.random.default_rng(SEED)
    win_w, win_h = window
    windows = []
    for name in IMAGES:
        grey = to_grey(Image.fromarray(getattr(data, name)()))
        height, width = grey.shape
        sizes = [(int(round(width / scale)), int(round(height / scale)))
                 for scale in pyramid_scales(width, height, window, params)]
        pyramid = Pyramid(grey, params.pyramid, smallest=sizes[-1])   # as the scan makes it
        for size in sizes:
            level = pyramid.level(size)
            ys, xs = (g.ravel() for g in np.mgrid[0:level.shape[0] - win_h + 1:REFINE_STEP,
                                                  0:level.shape[1] - win_w + 1:REFINE_STEP])
            pick = rng.choice(ys.size, min(ys.size, WINDOWS_PER_LEVEL), replace=False)
            windows += [level[y:y + win_h, x:x + win_w] for y, x in zip(ys[pick], xs[pick])]
    return np.stack(windows)


def stopping_stumps(running_scores: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """The stump at which each window's running score first falls below its level (the
    scanner stops it there), or the number of stumps for a window that is never stopped.

    Examples
    --------
    >>> stopping_stumps(np.array([[1.0, -2.0, 3.0], [1.0, 2.0, 3.0]]), np.zeros(3))
    array([1, 3])
    """
    below = running_scores < levels
    return np.where(below.any(axis=1), below.argmax(axis=1), running_scores.shape[1])


def depth(path: str) -> dict:
    """The figures of one model file (its own detection settings)."""
    import facedetect
    from facedetect.detector._multiscale import params_for, scanner_for
    model = facedetect.load_model(path)
    params = params_for(model)
    scanner = scanner_for(model, params)
    scores = model.running_scores(sample_windows(scanner.window, params))
    stopped_at = stopping_stumps(scores, scanner.coarse_reject_at)
    evaluated = np.minimum(stopped_at + 1, model.n_stumps)
    rejection = (model.detection or {}).get("rejection", {})
    return {"windows": int(len(evaluated)), "stumps": int(model.n_stumps),
            "quantile": rejection.get("quantile"), "loss": rejection.get("loss"),
            "mean_stumps": float(evaluated.mean()),
            "running_after": {str(t): float(np.mean(stopped_at >= t)) for t in AFTER},
            "share_in_first_20": float(np.minimum(evaluated, 20).sum() / evaluated.sum())}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--label", default="rejection_depth")
    args = parser.parse_args(argv)
    results = {"machine": machine(), "models": {m: depth(m) for m in args.models}}
    lines = [f"# How deep the scan's windows run ({args.label})\n",
             f"Machine: {results['machine']}. Windows of the five speed photographs' "
             "levels, on the coarse grid, against the coarse pass's rejection levels.\n",
             "| model | stumps | soft-rejection quantile | training faces lost | "
             "windows | stumps a window | running after " + ", ".join(map(str, AFTER))
             + " | work in the first 20 |", "|---|---|---|---|---|---|---|---|"]
    for name, row in results["models"].items():
        after = " / ".join(f"{row['running_after'][str(t)]:.3f}" for t in AFTER)
        lines.append(f"| {name} | {row['stumps']} | {row['quantile']} | {row['loss']} | "
                     f"{row['windows']:,} | {row['mean_stumps']:.2f} | {after} | "
                     f"{row['share_in_first_20']:.2f} |")
    write_results(args.label, results, "\n".join(lines) + "\n")   # and prints it
    return results


if __name__ == "__main__":
    main()
