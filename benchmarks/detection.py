"""Detection speed: our detect against OpenCV's detectMultiScale, same images and settings.

Run: ``python -m benchmarks.detection [--model M] [--repeat 3]``

Images: scikit-image's bundled photographs of 640x480 class (astronaut, coffee, rocket,
chelsea, camera). Both detectors get the same grey image, scale factor and minimum window
size (24, OpenCV's default cascade window). Times are medians of repeats after a warm-up.
"""

from __future__ import annotations

import argparse
import time

import cv2
import numba
import numpy as np
from PIL import Image
from skimage import data

from facedetect.detector._api import load_model
from facedetect.detector._multiscale import DetectionParams, detect_faces, params_for, scanner_for
from facedetect.images import to_grey

from .common import machine, write_results

IMAGES = ("astronaut", "coffee", "rocket", "chelsea", "camera")


def median_time(function, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), result


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scale-factor", type=float, default=1.1)
    parser.add_argument("--min-size", type=int, default=24)
    args = parser.parse_args(argv)
    model = load_model(args.model)
    cascade = cv2.CascadeClassifier(cv2.data.haarcascades + "haarcascade_frontalface_default.xml")
    rows = []
    # (label, step, learnt rejection): the exact scan is the "before" of the pruning change.
    configs = (("exact, step 1", 1, False), ("pruned, step 1", 1, True),
               ("pruned, step auto (OpenCV's stepping)", "auto", True),
               ("pruned, step refine", "refine", True))
    configs = tuple((label + (" (the default)" if step == DetectionParams.step and pruning
                              else ""), step, pruning) for label, step, pruning in configs)
    for name in IMAGES:
        grey = to_grey(Image.fromarray(getattr(data, name)()))
        cascade.detectMultiScale(grey, args.scale_factor, 3,
                                 minSize=(args.min_size, args.min_size))
        theirs, _ = median_time(lambda: cascade.detectMultiScale(
            grey, args.scale_factor, 3, minSize=(args.min_size, args.min_size)), args.repeat)
        for label, step, pruning in configs:
            # The model's own image operating point (threshold, grouping) at these scan
            # settings: what detect does with no flags.
            params = params_for(model, scale_factor=args.scale_factor,
                                min_size=args.min_size, step=step)
            scanner = scanner_for(model, params, pruning=pruning)
            detect_faces(grey, model, params, scanner)  # warm-up (compilation)
            ours, found = median_time(lambda: detect_faces(grey, model, params, scanner),
                                      args.repeat)
            rows.append({"image": name, "size": f"{grey.shape[1]}x{grey.shape[0]}",
                         "config": label, "ours_s": ours, "opencv_s": theirs,
                         "ratio": ours / theirs, "windows": found.scanned,
                         "windows_per_s": found.scanned / ours, "faces": len(found.boxes)})
    ratios = {label: float(np.exp(np.mean([np.log(r["ratio"]) for r in rows
                                           if r["config"] == label])))
              for label, _, _ in configs}
    results = {"machine": machine(), "threads": cv2.getNumThreads(), "rows": rows,
               "scale_factor": args.scale_factor, "min_size": args.min_size,
               "geometric_mean_ratio": ratios}
    table = "\n".join(f"| {r['image']} | {r['size']} | {r['config']} | {r['ours_s'] * 1e3:.0f} | "
                      f"{r['opencv_s'] * 1e3:.0f} | {r['ratio']:.2f}x | {r['windows']:,} | "
                      f"{r['windows_per_s'] / 1e6:.2f} M |" for r in rows)
    summary = "\n".join(f"| {label} | {ratio:.2f}x |" for label, ratio in ratios.items())
    markdown = f"""# Detection speed against OpenCV

Machine: {results['machine']}; OpenCV threads {results['threads']}, numba threads
{numba.get_num_threads()}. Scale factor {args.scale_factor}, minimum window {args.min_size}
px, medians of {args.repeat} runs after a warm-up, OpenCV timed in the same run on the same
grey image. OpenCV: `haarcascade_frontalface_default.xml` (25 stages; it steps 2 px while
the window is at most twice its size, then 1). facedetect: the shipped one-stage model at
its own image operating point (threshold {params_for(model).threshold:.4g}, min-neighbors
{params_for(model).min_neighbors});
"exact" uses only the exact early rejection, "pruned" adds the model's learnt rejection
thresholds (the default), "step auto" uses OpenCV's stepping rule, "step refine" scans every
second window and then the step-1 windows around those near the threshold. Windows are those
of the step-1 grid for "refine" (it evaluates about a quarter of them).

Geometric mean of our time / OpenCV's time over the images:

| facedetect configuration | ours / OpenCV |
|---|---|
{summary}

| image | size | configuration | ours ms | OpenCV ms | ours / OpenCV | our windows | our windows/s |
|---|---|---|---|---|---|---|---|
{table}
"""
    write_results("detection", results, markdown)
    return results


if __name__ == "__main__":
    main()
