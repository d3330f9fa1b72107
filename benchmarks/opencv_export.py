"""``export-opencv default`` inside OpenCV: the staged XML and the one-stage XML against
OpenCV's own cascades, all run by ``cv2.CascadeClassifier.detectMultiScale`` at its
defaults (scale 1.1, 3 neighbours, the cascade's window as min size), in one run.

Run: ``FACEDETECT_NEGATIVES=../shared/datasets/negatives python -m benchmarks.opencv_export``

- Development images (MIT+CMU, 44 pictures, 218 faces): faces found (IoU >= 0.5) and
  false positives; our XML's boxes mapped by the model's own box mapping (what
  ``export-opencv`` prints), OpenCV's raw and with the one mapping
  :mod:`benchmarks.peers` fits for them on these images. Total seconds over the images,
  median of ``--repeat``.
- The staged export's curve inside OpenCV: its last-stage threshold moved from the
  exported one (``SWEEP``), each written and run as above, so its faces can be read at
  alt2's false positives; for the stages cut at the levels learnt at the export's
  threshold (what ``export-opencv`` writes) and at ``detect``'s levels
  (``--detect-levels``). This measures; the export's threshold stays the one chosen at
  training on the calibration pictures.
- Stage cuts: the stumps evaluated per window, from windows of the training negative
  pictures (never the held-out or development ones), for the soft cascade our scanner
  runs and for each cut schedule.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

import facedetect
from facedetect.detector import exported_form, with_export_levels
from facedetect.detector import box_mapping, window_to_box
from facedetect.detector import export_opencv
from facedetect.detector import (evaluation_images, inside_boxes, match,
                                                  read_annotations)
from facedetect.images import read_grey

from .common import machine, one_core_busy, write_results
from .peers import fit_mapping, mapped

CASCADES = {"OpenCV default": "haarcascade_frontalface_default.xml",
            "OpenCV alt2": "haarcascade_frontalface_alt2.xml"}


def score(boxes_per_image, images) -> dict:
    found = fps = 0
    for boxes, (_, truth) in zip(boxes_per_image, images):
        hits = match(boxes, np.zeros(len(boxes)), truth)
        found, fps = found + hits, fps + len(boxes) - hits
    total = sum(len(t) for _, t in images)
    return {"tpr": round(found / total, 4), "found": found, "false_positives": fps}


def run_cascade(classifier, images, repeat: int):
    """Boxes per image and the median total seconds over ``repeat`` passes."""
    times, boxes = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        boxes = [np.asarray(classifier.detectMultiScale(grey, 1.1, 3), np.float64
                            ).reshape(-1, 4) for grey, _ in images]
        times.append(time.perf_counter() - start)
    return boxes, float(np.median(times))


SHIPPED = "4, 8, 16, ... (shipped)"   # the cuts export-opencv writes (DEFAULT_CUTS)
SCHEDULES = {SHIPPED: (4, 8, 16, 32, 64, 128, 256, 512),
             "2, 4, 8, ...": (2, 4, 8, 16, 32, 64, 128, 256, 512),
             "6, 12, 24, ...": (6, 12, 24, 48, 96, 192, 384, 768),
             "3, 9, 27, ...": (3, 9, 27, 81, 243, 729),
             "4, 12, 36, ...": (4, 12, 36, 108, 324, 972)}


# offsets from the exported last-stage threshold (the model's sums run to about 40)
SWEEP = (-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 6.0, 8.0, 10.0)
# the staged forms export-opencv writes: (label, --detect-levels)
STAGED = (("staged export", False), ("staged export, detect's levels", True))


def staged_curve(model, images, folder: Path, detect_levels: bool = False) -> list[dict]:
    """TPR and false positives (mapped boxes) of the staged XML inside OpenCV at each
    last-stage threshold of ``SWEEP`` from the exported one."""
    scale, shift = box_mapping(model)
    exported = exported_form(model, None)[1]
    rows = []
    for offset in SWEEP:
        staged, threshold = exported_form(model, exported + offset, False, detect_levels)
        path = export_opencv(staged, folder / f"sweep{offset:+g}.xml", threshold)
        boxes, _ = run_cascade(cv2.CascadeClassifier(str(path)), images, 1)
        rows.append({"offset": offset, "threshold": round(threshold, 4),
                     **score([window_to_box(b, scale, shift) for b in boxes], images)})
    return rows


def tpr_at(curve: list[dict], budget: int) -> float:
    """The most faces found at no more than ``budget`` false positives (0 if none)."""
    return max([row["tpr"] for row in curve if row["false_positives"] <= budget], default=0.0)


def stumps_per_window(model, threshold: float, pictures: int = 30) -> dict:
    """Mean stumps evaluated per window of ``pictures`` training negative pictures (at
    three scales, every fourth window): the soft cascade, and each cut schedule of
    :mod:`facedetect.detector._staging` (a stage re-evaluates its prefix)."""
    import os

    from facedetect.data import find_negatives, negative_files, split_negatives
    from facedetect.detector._scan import reject_levels
    from facedetect.detector._staging import stage_cuts
    folder = find_negatives(os.environ.get("FACEDETECT_NEGATIVES"))
    if folder is None:
        return {}
    train, _ = split_negatives(negative_files(folder))
    rng = np.random.default_rng(0)
    windows = []
    for path in rng.choice(train, pictures, replace=False):
        grey = read_grey(path)
        for factor in (1.0, 0.5, 0.25):
            level = cv2.resize(grey, None, fx=factor, fy=factor, interpolation=cv2.INTER_AREA)
            if min(level.shape) >= 2 * max(model.window):
                views = np.lib.stride_tricks.sliding_window_view(level, model.window[::-1])
                views = views[::4, ::4].reshape(-1, *model.window[::-1])
                windows.append(views[rng.choice(len(views), min(len(views), 400), False)])
    running = model.running_scores(np.concatenate(windows))
    levels = reject_levels(model, threshold)
    alive = np.logical_and.accumulate(running >= levels, axis=1)
    result = {"soft cascade": round(float(alive.sum(axis=1).mean() + 1), 2)}
    for label, cuts in SCHEDULES.items():
        passing, work = np.ones(len(running), bool), 0.0
        for cut in stage_cuts(model.n_stumps, cuts):
            work += passing.mean() * cut
            passing &= running[:, cut - 1] >= levels[cut - 1]
        result[label] = round(work, 2)
    return result


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # what export-opencv default writes: the default's Haar companion (OPENCV_FORMS)
    parser.add_argument("--model", default="haar")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dev", default=str(Path(__file__).resolve().parents[2] / "shared"
                                             / "datasets" / "mit-cmu-dev"))
    args = parser.parse_args(argv)
    dev = Path(args.dev)
    images = []
    for path, truth in evaluation_images(dev / "images", read_annotations(dev / "bboxes.txt")):
        grey = read_grey(path)
        images.append((grey, inside_boxes(path, truth, grey.shape)))
    model = facedetect.load_model(args.model)
    folder = Path(tempfile.mkdtemp())
    classifiers = {}
    forms = [(label, False, levels) for label, levels in STAGED] + [
        ("one-stage export", True, False)]
    for k, (label, one_stage, detect_levels) in enumerate(forms):
        exported, threshold = exported_form(model, None, one_stage, detect_levels)
        path = export_opencv(exported, folder / f"form{k}.xml", threshold)
        classifiers[label] = cv2.CascadeClassifier(str(path))
    classifiers.update({label: cv2.CascadeClassifier(cv2.data.haarcascades + name)
                        for label, name in CASCADES.items()})
    results = {"machine": machine(), "model": args.model, "dev": {}}
    scale, shift = box_mapping(model)
    for label, classifier in classifiers.items():
        boxes, seconds = run_cascade(classifier, images, args.repeat)
        row = {"seconds": round(seconds, 3)}
        if "export" in label:   # ours: the model's own box mapping
            row["mapped"] = score([window_to_box(b, scale, shift) for b in boxes], images)
        else:
            row["raw"] = score(boxes, images)
            fitted = fit_mapping([(b, t) for b, (_, t) in zip(boxes, images)])
            row["mapping"] = fitted
            row["mapped"] = score([mapped(b, *fitted[:2]) for b in boxes], images)
        results["dev"][label] = row
        print(label, row, flush=True)
    with one_core_busy():   # the same scans beside a busy-loop process
        for label, classifier in classifiers.items():
            results["dev"][label]["seconds_busy"] = round(
                run_cascade(classifier, images, args.repeat)[1], 3)
    results["staged_curves"] = {label: staged_curve(model, images, folder, levels)
                                for label, levels in STAGED}
    print(results["staged_curves"], flush=True)
    shutil.rmtree(folder, ignore_errors=True)   # the XMLs are loaded or measured by now
    threshold = exported_form(model, None)[1]
    results["stumps_per_window"] = {
        label: stumps_per_window(model if levels else with_export_levels(model), threshold)
        for label, levels in STAGED}
    print(results["stumps_per_window"], flush=True)
    alt2 = results["dev"]["OpenCV alt2"]["seconds"]
    alt2_busy = results["dev"]["OpenCV alt2"]["seconds_busy"]
    lines = [f"# export-opencv {args.model} inside OpenCV\n", f"Machine: {results['machine']}.\n",
             "detectMultiScale(grey, 1.1, 3) on the 44 MIT+CMU development images (218 "
             "faces); seconds: all images, median of "
             f"{args.repeat}.\n",
             "| cascade | raw boxes: TPR at FP | mapped boxes: TPR at FP | seconds | "
             "/ alt2's time | one core busy: / alt2's time |", "|---|---|---|---|---|---|"]
    for label, row in results["dev"].items():
        raw = (f"{row['raw']['tpr']:.3f} at {row['raw']['false_positives']}"
               if "raw" in row else "")
        lines.append(f"| {label} | {raw} | {row['mapped']['tpr']:.3f} at "
                     f"{row['mapped']['false_positives']} | {row['seconds']:.2f} | "
                     f"{row['seconds'] / alt2:.2f}x | {row['seconds_busy'] / alt2_busy:.2f}x |")
    alt2_row = results["dev"]["OpenCV alt2"]
    curves = results["staged_curves"]
    lines += ["\nThe staged exports' last-stage threshold moved (mapped boxes), and their "
              "faces at alt2's false positives:\n",
              "| offset | threshold | " + " | ".join(f"{label}: TPR at FP" for label in curves)
              + " |", "|---|---|" + "---|" * len(curves)]
    for k, offset in enumerate(SWEEP):
        cells = [f"{c[k]['tpr']:.3f} at {c[k]['false_positives']}" for c in curves.values()]
        lines.append(f"| {offset:+g} | {curves['staged export'][k]['threshold']:.2f} | "
                     + " | ".join(cells) + " |")
    for kind in ("raw", "mapped"):
        budget = alt2_row[kind]["false_positives"]
        found = "; ".join(f"{label} {tpr_at(c, budget):.3f}" for label, c in curves.items())
        lines.append(f"\nAt alt2's {budget} false positives ({kind} boxes, alt2 "
                     f"{alt2_row[kind]['tpr']:.3f}): {found}.")
    lines += ["\nStumps evaluated per window of the training negative pictures:\n",
              "| scan | " + " | ".join(results["stumps_per_window"]) + " |",
              "|---|" + "---|" * len(results["stumps_per_window"])]
    per_form = list(results["stumps_per_window"].values())
    lines += [f"| {k} | " + " | ".join(str(f[k]) for f in per_form) + " |"
              for k in per_form[0]]
    write_results("opencv_export", results, "\n".join(lines) + "\n")
    return results


if __name__ == "__main__":
    main()
