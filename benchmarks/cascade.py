"""The cascade against the one-stage model and OpenCV's cascades, in one run: accuracy on the
MIT+CMU development images, false alarms on the held-out negative pictures, and speed.

Run: ``python -m benchmarks.cascade [--cascade cascade] [--repeat 3]``

- Development images: ``evaluate-images`` for the cascade, the one-stage default model and
  OpenCV's ``haarcascade_frontalface_default.xml`` and ``alt2`` (their own settings: scale
  1.1, 3 neighbours). They only measure; nothing is chosen on them.
- Speed: ``detect`` on scikit-image's 640x480-class photographs with the cascade and with
  the one-stage model, against OpenCV's default cascade, and OpenCV running our exported
  cascade against OpenCV running its own; medians of repeats after a warm-up, the
  detectors taking turns (:func:`benchmarks.detect_speed.seconds_per_picture`). Once on
  the idle machine, once beside a busy-loop process holding one core.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

import cv2

from facedetect.detector import load_model
from facedetect.detector import detect_faces, params_for, scanner_for
from facedetect.detector import export_opencv

from .common import machine, write_results
from .detect_speed import geometric_ratio, picture_rows, seconds_per_picture

OPENCV = ("haarcascade_frontalface_default.xml", "haarcascade_frontalface_alt2.xml")


def dev_images(model: str, dev: Path, baseline: bool) -> dict:
    command = [sys.executable, "-m", "facedetect", "evaluate-images", str(dev / "images"),
               "--annotations", str(dev / "bboxes.txt"), "--model", model, "--json", "--quiet"]
    done = subprocess.run(command + (["--baseline", "opencv"] if baseline else []),
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def speed(cascade_name: str, repeat: int, busy: bool = False) -> list[dict]:
    """Per image: our detect with each model, OpenCV with its cascade and with ours."""
    models = {"cascade": load_model(cascade_name), "one-stage": load_model(None)}
    exported = Path(tempfile.mkdtemp()) / "cascade.xml"
    export_opencv(models["cascade"], exported, params_for(models["cascade"]).threshold)
    detectors = {}
    for label, model in models.items():
        params = params_for(model)
        scanner = scanner_for(model, params)
        detectors[label] = partial(detect_faces, model=model, params=params, scanner=scanner)
    for label, path in (("opencv default", cv2.data.haarcascades + OPENCV[0]),
                        ("opencv running ours", str(exported))):
        detectors[label] = partial(cv2.CascadeClassifier(path).detectMultiScale,
                                   scaleFactor=1.1, minNeighbors=3, minSize=(19, 19))
    return picture_rows(seconds_per_picture(detectors, repeat, busy))


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cascade", default=str(Path(__file__).resolve().parents[1] / "tests"
                                                 / "models" / "cascade.json"),
                        help="cascade model (default: the reference cascade the tests use)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dev", default=str(Path(__file__).resolve().parents[2] / "shared"
                                             / "datasets" / "mit-cmu-dev"))
    args = parser.parse_args(argv)
    dev = Path(args.dev)
    cascade_dev = dev_images(args.cascade, dev, baseline=True)
    one_stage_dev = dev_images("default", dev, baseline=False)
    rows = speed(args.cascade, args.repeat)
    busy_rows = speed(args.cascade, args.repeat, busy=True)
    stages = load_model(args.cascade).document["training"].get("cascade_stages", [])
    results = {"machine": machine(), "dev": {"cascade": cascade_dev, "one-stage": one_stage_dev},
               "speed": rows, "speed_one_core_busy": busy_rows, "stages": stages,
               "ratios": {"cascade / opencv default": geometric_ratio(rows, "cascade",
                                                                      "opencv default"),
                          "one-stage / opencv default": geometric_ratio(rows, "one-stage",
                                                                        "opencv default"),
                          "opencv running ours / opencv default": geometric_ratio(
                              rows, "opencv running ours", "opencv default"),
                          "one core busy: cascade / opencv default": geometric_ratio(
                              busy_rows, "cascade", "opencv default"),
                          "one core busy: opencv running ours / opencv default":
                              geometric_ratio(busy_rows, "opencv running ours",
                                              "opencv default")}}
    accuracy = [f"| facedetect cascade ({len(stages)} stages) | {cascade_dev['tpr']:.3f} | "
                f"{cascade_dev['false_positives']} |",
                f"| facedetect one-stage (default.json) | {one_stage_dev['tpr']:.3f} | "
                f"{one_stage_dev['false_positives']} |"]
    accuracy += [f"| OpenCV {b['cascade']} | {b['tpr']:.3f} | {b['false_positives']} |"
                 for b in cascade_dev.get("opencv", [])]
    timing = "\n".join(f"| {r['image']} | {r['size']} | " + " | ".join(
        f"{r[k] * 1e3:.1f}" for k in ("cascade", "one-stage", "opencv default",
                                      "opencv running ours")) + " |" for r in rows)
    ratios = "\n".join(f"| {k} | {v:.2f}x |" for k, v in results["ratios"].items())
    speed_header = ("| image | size | facedetect cascade | facedetect one-stage "
                    "| OpenCV default cascade | OpenCV running our cascade |")
    markdown = f"""# Cascade against one stage and OpenCV

Machine: {results['machine']}. Same run for every figure.

## MIT+CMU development images (44 images, 218 faces)

| detector | TPR | false positives |
|---|---|---|
{chr(10).join(accuracy)}

## Speed (ms, medians of {args.repeat} after a warm-up; OpenCV at scale 1.1, 3 neighbours)

{speed_header}
|---|---|---|---|---|---|
{timing}

Geometric means:

| ratio | value |
|---|---|
{ratios}
"""
    write_results("cascade", results, markdown)
    return results


if __name__ == "__main__":
    main()
