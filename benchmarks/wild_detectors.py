"""Detectors against OpenCV's cascades in one run: held-out faces from the wild, held-out
face-free pictures, the MIT+CMU development images, and detect's speed.

Run: ``python -m benchmarks.wild_detectors --models default,cascade [--label NAME]``

- Held-out wild faces: ``detect`` on each crop of the fixed held-out part of
  ``$FACEDETECT_FACES`` (or ``--faces``) at the model's own settings; OpenCV's
  ``haarcascade_frontalface_default.xml`` and ``alt2`` at theirs (scale 1.1, 3 neighbours,
  min size 19). A face is found when a box holds both eyes and is at most 1.5 times the
  detector's own median box width (:func:`facedetect.pipeline._wild.crop_recall`). OpenCV
  is compared on MTFL and Caltech, whose crops are loose enough for its framing; UTKFace and
  Yale B are reported apart.
- Grainy held-out faces: the same MTFL and Caltech crops with Gaussian grain (sd
  ``GRAIN``, seeded by each crop's bytes) added at the crop's own resolution, as a scan
  or a high-ISO print has it: what a pyramid that averages (or aliases) the grain does.
- Posterised held-out faces: the same crops in ``LEVELS`` grey levels (equal bins of
  0..255, each pixel its bin's middle), as a photocopy or a cheap print has them.
- Held-out negatives: false alarms per megapixel on the held-out fifth of
  ``$FACEDETECT_NEGATIVES`` (``benchmarks.detector_training``), clean, with the same
  grain and posterised alike: a detector that learnt grain or flat patches as a face cue
  fires on such pictures.
- Development images: ``evaluate-images`` with OpenCV's baseline. They only measure.
- Speed: ``detect`` on scikit-image's five photographs against OpenCV's default cascade,
  medians of ``--repeat`` (:func:`benchmarks.detect_speed.seconds_per_picture`), idle and
  beside a busy-loop process holding one core.
"""

from __future__ import annotations

import zlib
from functools import partial
from pathlib import Path

import cv2
import numpy as np

from facedetect.detector import load_model
from facedetect.pipeline import posterize_window
from facedetect.pipeline import crop_recall, heldout_faces
from facedetect.detector import detect_faces, params_for
from facedetect._utils.threads import wait_passively

from .cascade import OPENCV, dev_images
from .common import machine, wild_benchmark_parser, wild_data, write_results
from .detect_speed import geometric_ratio, picture_rows, seconds_per_picture
from .detector_training import heldout_negatives

COMPARED = ("mtfl", "mtfl-sun2013", "caltech-webfaces")
GRAIN = 20.0   # grey levels, sd
LEVELS = 4


def grainy(crop):
    """``crop`` with Gaussian grain of sd ``GRAIN``, the same every run."""
    rng = np.random.default_rng(zlib.crc32(crop.tobytes()))
    return np.clip(crop + rng.normal(0.0, GRAIN, crop.shape), 0, 255).astype(np.uint8)


def posterised(picture):
    """``picture`` in ``LEVELS`` grey levels: equal bins of 0..255, each its middle."""
    return posterize_window(picture, LEVELS, 0.0)


def compared_only(faces):
    """The faces of the ``COMPARED`` sources."""
    return faces.subset(np.isin(faces.sources, COMPARED))


def opencv_detector(name: str):
    cascade = cv2.CascadeClassifier(cv2.data.haarcascades + name)
    return lambda grey: cascade.detectMultiScale(grey, 1.1, 3, minSize=(19, 19))


def speed(models: dict, repeat: int, busy: bool = False) -> list[dict]:
    """Per photograph: each model's detect and OpenCV's default cascade, in seconds."""
    from facedetect.detector import scanner_for
    detectors = {"opencv default": opencv_detector(OPENCV[0])}
    for label, model in models.items():
        params = params_for(model)
        detectors[label] = partial(detect_faces, model=model, params=params,
                                   scanner=scanner_for(model, params))
    return picture_rows(seconds_per_picture(detectors, repeat, busy))


def pooled(recall: dict, sources) -> float:
    faces = sum(recall[s]["faces"] for s in sources if s in recall)
    return round(sum(recall[s]["recall"] * recall[s]["faces"] for s in sources
                     if s in recall) / max(faces, 1), 4)


def main(argv=None) -> dict:
    wait_passively()   # as the detect command does
    parser = wild_benchmark_parser(__doc__.splitlines()[0], "wild_detectors", 3)
    args = parser.parse_args(argv)
    faces, held_pictures = wild_data(args.faces)
    names = args.models.split(",")
    models = {name: load_model(name) for name in names}
    results = {"machine": machine(), "models": {}, "opencv": {}}
    first_held = None
    for name, model in models.items():
        held = heldout_faces(model, faces)
        first_held = first_held or held
        path = _model_path(name)
        negatives_result = heldout_negatives(path, held_pictures)
        grainy_negatives = heldout_negatives(path, held_pictures, transform=grainy)
        posterised_negatives = heldout_negatives(path, held_pictures, transform=posterised)
        results["models"][name] = {
            "wild_faces": crop_recall(lambda crop: detect_faces(
                crop, model, params_for(model)).boxes, held)._asdict(),
            "grainy_faces": crop_recall(lambda crop: detect_faces(
                grainy(crop), model, params_for(model)).boxes,
                compared_only(held))._asdict(),
            "posterised_faces": crop_recall(lambda crop: detect_faces(
                posterised(crop), model, params_for(model)).boxes,
                compared_only(held))._asdict(),
            "negatives_fa_per_mpx": negatives_result["per_megapixel"]["facedetect"],
            "grainy_negatives_fa_per_mpx": grainy_negatives["per_megapixel"]["facedetect"],
            "posterised_negatives_fa_per_mpx":
                posterised_negatives["per_megapixel"]["facedetect"],
            "dev": dev_images(str(path), Path(args.dev), baseline=False)}
        results["opencv_negatives"] = negatives_result
        results["opencv_grainy_negatives"] = grainy_negatives
        results["opencv_posterised_negatives"] = posterised_negatives
        print(name, results["models"][name], flush=True)
    for cascade in OPENCV:
        opencv = opencv_detector(cascade)
        results["opencv"][cascade] = {
            "wild_faces": crop_recall(opencv, first_held)._asdict(),
            "grainy_faces": crop_recall(lambda crop: opencv(grainy(crop)),
                                        compared_only(first_held))._asdict(),
            "posterised_faces": crop_recall(lambda crop: opencv(posterised(crop)),
                                            compared_only(first_held))._asdict()}
    baseline = dev_images(str(_model_path(names[0])), Path(args.dev), baseline=True)
    for row in baseline.get("opencv", []):
        results["opencv"][row["cascade"]]["dev"] = row
    results["speed"] = speed(models, args.repeat)
    results["speed_one_core_busy"] = speed(models, args.repeat, busy=True)
    write_results(args.label, results, _markdown(results, names))
    return results


def _model_path(name: str) -> Path:
    if Path(name).is_file():
        return Path(name)
    import importlib.resources
    return Path(str(importlib.resources.files("facedetect") / "models" / f"{name}.json"))


def _markdown(results: dict, names) -> str:
    lines = ["# Detectors and OpenCV's cascades, one run\n", f"Machine: {results['machine']}.\n",
             "| detector | dev images: TPR at FP | held-out wild faces, MTFL + Caltech | "
             "the same, grainy | the same, posterised | UTKFace | Yale B | "
             "held-out negatives FA/Mpx | the same, grainy | the same, posterised | "
             "detect time / OpenCV, idle | one core busy |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    negatives = results["opencv_negatives"]["per_megapixel"]
    grainy_negatives = results["opencv_grainy_negatives"]["per_megapixel"]
    posterised_negatives = results["opencv_posterised_negatives"]["per_megapixel"]
    for name in names:
        row = results["models"][name]
        lines.append(
            f"| {name} | {row['dev']['tpr']:.3f} at {row['dev']['false_positives']} | "
            f"{pooled(row['wild_faces']['by_source'], COMPARED):.3f} | "
            f"{pooled(row['grainy_faces']['by_source'], COMPARED):.3f} | "
            f"{pooled(row['posterised_faces']['by_source'], COMPARED):.3f} | "
            f"{pooled(row['wild_faces']['by_source'], ['utkface']):.3f} | "
            f"{pooled(row['wild_faces']['by_source'], ['extended-yale-b']):.3f} | "
            f"{row['negatives_fa_per_mpx']:.3f} | "
            f"{row['grainy_negatives_fa_per_mpx']:.3f} | "
            f"{row['posterised_negatives_fa_per_mpx']:.3f} | "
            f"{geometric_ratio(results['speed'], name, 'opencv default'):.2f}x | "
            f"{geometric_ratio(results['speed_one_core_busy'], name, 'opencv default'):.2f}x |")
    for cascade, row in results["opencv"].items():
        dev = row.get("dev", {})
        lines.append(
            f"| OpenCV {cascade} | {dev.get('tpr', float('nan')):.3f} at "
            f"{dev.get('false_positives', '-')} | "
            f"{pooled(row['wild_faces']['by_source'], COMPARED):.3f} | "
            f"{pooled(row['grainy_faces']['by_source'], COMPARED):.3f} | "
            f"{pooled(row['posterised_faces']['by_source'], COMPARED):.3f} | "
            f"({pooled(row['wild_faces']['by_source'], ['utkface']):.3f}) | "
            f"({pooled(row['wild_faces']['by_source'], ['extended-yale-b']):.3f}) | "
            f"{negatives.get(cascade, float('nan')):.3f} | "
            f"{grainy_negatives.get(cascade, float('nan')):.3f} | "
            f"{posterised_negatives.get(cascade, float('nan')):.3f} | "
            "1.00x (default) | |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
