"""``facedetect evaluate-images DIR --annotations FILE``: whole-image TPR and false positives."""

from __future__ import annotations

import argparse
import csv
from dataclasses import replace
import io
import json
import sys

import numpy as np

from .._utils.threads import wait_passively
from .._utils.atomic import atomic_write_text
from ..errors import FacedetectError
from ._common import check_writable
from ._detect_cmd import add_scan_options, detector_from

OPENCV_CASCADES = ("haarcascade_frontalface_default.xml", "haarcascade_frontalface_alt2.xml")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "evaluate-images", help="TPR and false positives on annotated images",
        description="Scan a folder of images and score the detections against annotated "
                    "face boxes (IoU >= 0.5, one detection per face). The scorer expects "
                    "generous boxes, about 1.75x a tight face box and centred on the eyes, "
                    "nose and mouth (MIT+CMU's bboxes.txt); boxes that cross the image "
                    "border are clipped to it, and boxes wholly outside it are skipped, "
                    "each with a warning.")
    parser.add_argument("images_dir", help="folder of images")
    parser.add_argument("--annotations", required=True,
                        help="file of 'name x_min y_min x_max y_max' lines; images of "
                             "the folder it does not name are face-free")
    add_scan_options(parser)
    parser.add_argument("--baseline", choices=("opencv",), help="also run OpenCV's cascades")
    parser.add_argument("--curve", metavar="NAME",
                        help="write the TPR-vs-FP curve: NAME.csv and NAME.png (a NAME ending "
                             "in .csv or .png names that file, the other goes beside it); "
                             "scans exactly, and at step 1 instead of 'refine'")
    parser.add_argument("--calibrate", action="store_true",
                        help="search the window-to-box mapping (for development only)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)


def _curve_points(results, params, scale, shift, thresholds):
    from ..detector._image_evaluation import summarize
    points = []
    for threshold in thresholds:
        found, fps, total = summarize(results, threshold, params.min_neighbors, scale, shift,
                                      params.neighbor_margin)
        points.append({"threshold": float(threshold), "tpr": found / total,
                       "false_positives": fps, "found": found})
    return points


def _curve_paths(name: str) -> tuple[str, str]:
    """``(CSV, picture)`` for ``--curve NAME``: a ``.csv`` or ``.png`` name is that file,
    the other beside it; any other name gets both suffixes.

    Examples
    --------
    >>> _curve_paths("roc.csv"), _curve_paths("out/roc")
    (('roc.csv', 'roc.png'), ('out/roc.csv', 'out/roc.png'))
    """
    stem = name[:-4] if name.lower().endswith((".csv", ".png")) else name
    csv_name = name if name.lower().endswith(".csv") else f"{stem}.csv"
    png_name = name if name.lower().endswith(".png") else f"{stem}.png"
    return csv_name, png_name


def _write_curve(points, baselines, path_stem, n_images):
    csv_path, png_path = _curve_paths(path_stem)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=["threshold", "tpr", "false_positives", "found"])
    writer.writeheader()
    writer.writerows(points)
    atomic_write_text(csv_path, buffer.getvalue())
    from ..plots import _pyplot, _save_figure
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    ax.plot([p["false_positives"] / n_images for p in points], [p["tpr"] for p in points],
            marker=".", label="facedetect (threshold sweep)")
    for base in baselines:
        ax.scatter([base["false_positives"] / n_images], [base["tpr"]], marker="x", s=60,
                   label=f"OpenCV {base['cascade'].replace('haarcascade_', '')}")
    ax.set_xlabel("false positives per image")
    ax.set_ylabel("true positive rate")
    ax.set_ylim(0, 1)
    ax.set_xscale("symlog", linthresh=0.1)
    ax.set_xlim(left=0)  # counts are never negative; symlog would show -1 to 0
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    _save_figure(fig, png_path)
    plt.close(fig)


def _warn_near_misses(results, params, scale, shift) -> None:
    """Warn when most detections overlap a face just under the IoU rule: the annotations
    then use another box convention (tight face-only boxes) than the scorer expects."""
    from ..detector._image_evaluation import near_misses
    import warnings
    near, detections = near_misses(results, params.threshold, params.min_neighbors, scale,
                                   shift, params.neighbor_margin)
    if detections and near > detections / 2:
        warnings.warn(f"{near} of {detections} detections overlap an annotated face at IoU "
                      f"0.2-0.5, under the 0.5 that counts: the scorer expects generous "
                      "boxes (about 1.75x a tight face box, centred on eyes, nose and mouth, "
                      "as MIT+CMU's bboxes.txt); are these tight face-only boxes?")


def run(args: argparse.Namespace) -> int:
    from ..detector._multiscale import box_mapping
    from ..detector._image_evaluation import (evaluation_images, opencv_baseline,
                                             read_annotations, scan_dataset, summarize)
    from ..detector._scan import LevelScanner
    from ..images import read_grey
    from .._utils.progress import progress_bar
    wait_passively()   # scanning beside other work: see facedetect._utils.threads
    if args.curve:  # before hours of scanning, not after
        for path in _curve_paths(args.curve):
            check_writable(path, "--curve")
    annotations = read_annotations(args.annotations)
    if not annotations:
        raise FacedetectError(f"{args.annotations}: no annotated faces")
    images = evaluation_images(args.images_dir, annotations)
    # Its curves regroup the raw windows at each threshold: the one-stage model's
    detector = detector_from(args, verifier=False)
    if detector.model.verifier is not None:
        print(f"{args.prog}: note: this scores the model's one-stage form; its verifier "
              "is not run here (benchmarks.peers measures it)", file=sys.stderr)
    model, params, scanner = detector.model, detector.params, detector.scanner
    if args.curve or args.calibrate:
        low = min(params.threshold, 0.0)
        # Curves reach below the score of every training face, where learnt rejection
        # would cut windows: they use the exact scan. And which windows a refined scan
        # visits depends on its threshold, which a curve sweeps: it scans the step-1 grid.
        # With step auto, a one-stage model's step-over after a rejection (OpenCV's row
        # loop) is set at the lowest threshold: a point above it may keep a few windows
        # OpenCV at that threshold steps over. A cascade's first stage does not move.
        if params.step == "refine":
            params = replace(params, step=1)
        scanner = LevelScanner(model, low - params.neighbor_margin, pruning=False,
                               like_opencv=params.step == "auto", decision_threshold=low)
    bar = (None if args.quiet
           else lambda items: progress_bar(items, desc="scanning", unit="image"))
    results = scan_dataset(images, scanner, params, read_grey, bar)
    scale, shift = box_mapping(model)   # the model's own: a --positives cascade's is 1, 0
    if args.calibrate:
        best = max(((summarize(results, params.threshold, params.min_neighbors, s, d,
                               params.neighbor_margin)[0], s, d)
                    for s in np.arange(1.0, 3.01, 0.1) for d in np.arange(-0.2, 0.31, 0.05)))
        print(f"calibration: scale {best[1]:.2f}, shift {best[2]:.2f} finds {best[0]} faces")
        scale, shift = best[1], best[2]
    found, fps, total = summarize(results, params.threshold, params.min_neighbors, scale, shift,
                                  params.neighbor_margin)
    n_images = len(results)
    _warn_near_misses(results, params, scale, shift)
    report = {"images": n_images, "faces": total, "found": found, "tpr": found / total,
              "false_positives": fps, "false_positives_per_image": fps / n_images,
              "seconds": sum(r.seconds for r in results),
              "params": vars(params), "box_mapping": {"scale": scale, "shift": shift}}
    baselines = []
    if args.baseline == "opencv":
        baselines = [opencv_baseline(images, read_grey, name,
                                     params.scale_factor, 3, params.min_size)
                     for name in OPENCV_CASCADES]
        report["opencv"] = baselines
    if args.curve:
        thresholds = np.unique(np.r_[np.linspace(low, max(low + 1, 120), 41), params.threshold])
        report["curve"] = _curve_points(results, params, scale, shift, thresholds)
        _write_curve(report["curve"], baselines, args.curve, n_images)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{n_images} images, {total} faces: found {found} (TPR {found / total:.3f}), "
          f"{fps} false positives ({fps / n_images:.2f} per image), {report['seconds']:.1f} s")
    for base in baselines:
        print(f"  OpenCV {base['cascade']}: TPR {base['tpr']:.3f}, {base['false_positives']} "
              f"false positives ({base['false_positives'] / n_images:.2f} per image), "
              f"{base['seconds']:.1f} s")
    if args.curve:
        print(f"curve: {', '.join(_curve_paths(args.curve))}")
    return 0
