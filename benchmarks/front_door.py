"""The model loaded once: ``facedetect.detect`` per image against one ``Detector`` and
against OpenCV's cascade loaded once, on 100 small images, idle and with one core busy.

Run: ``python -m benchmarks.front_door``

Images: the MIT+CMU development images (a copy of ``mit-cmu-dev`` beside the checkout),
each resized to 320x240 and taken in turn to make 100. Rows:

- ``load per call``: what ``facedetect.detect(path)`` cost before it cached: the model file
  read, parsed, checked and the scan prepared on every call (``Detector(path)`` each time);
- ``facedetect.detect``: the front door as it is, the model file named on every call;
- ``Detector``: one ``facedetect.Detector()``, then ``.detect`` per image;
- ``OpenCV``: one ``cv2.CascadeClassifier`` (its default cascade), then
  ``detectMultiScale`` per image (scale 1.1, 3 neighbours, 24 px).

Each row: milliseconds per image, median of 5 passes over the 100 images, after a pass to
warm up. Also the first and second call of ``facedetect.detect`` in a fresh process (the
second costs no model load).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

import cv2
import numpy as np

from .common import DEV_IMAGES, machine, one_core_busy, write_results

N_IMAGES = 100
SIZE = (320, 240)
PASSES = 5


def small_images() -> list[np.ndarray]:
    from facedetect.images import read_grey
    files = sorted((DEV_IMAGES / "images").iterdir())
    if not files:
        raise SystemExit(f"no development images in {DEV_IMAGES}")
    greys = [cv2.resize(read_grey(f), SIZE, interpolation=cv2.INTER_AREA) for f in files]
    return [greys[i % len(greys)] for i in range(N_IMAGES)]


def per_image_ms(call, images) -> float:
    for image in images:
        call(image)
    passes = []
    for _ in range(PASSES):
        start = time.perf_counter()
        for image in images:
            call(image)
        passes.append((time.perf_counter() - start) / len(images) * 1000)
    return statistics.median(passes)


def rows(images) -> dict:
    import facedetect
    from facedetect.detector import shipped_model_path
    path = shipped_model_path("default")
    detector = facedetect.Detector()
    cascade = cv2.CascadeClassifier(cv2.data.haarcascades +
                                    "haarcascade_frontalface_default.xml")
    return {
        "load per call": per_image_ms(lambda g: facedetect.Detector(path).detect(g), images),
        "facedetect.detect": per_image_ms(lambda g: facedetect.detect(g, path), images),
        "Detector": per_image_ms(detector.detect, images),
        "OpenCV": per_image_ms(lambda g: cascade.detectMultiScale(
            g, scaleFactor=1.1, minNeighbors=3, minSize=(24, 24)), images),
    }


FIRST_CALLS = r"""
import time, numpy as np, facedetect
image = np.full((240, 320), 128, np.uint8)
times = []
for _ in range(3):
    start = time.perf_counter(); facedetect.detect(image); times.append(time.perf_counter() - start)
print(*times)
"""


def first_calls() -> list[float]:
    """Seconds of the first three ``facedetect.detect`` calls in a fresh process."""
    out = subprocess.run([sys.executable, "-c", FIRST_CALLS], capture_output=True, text=True,
                         check=True).stdout
    return [float(v) for v in out.split()]


def main(argv=None) -> dict:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    images = small_images()
    results = {"machine": machine(), "images": N_IMAGES, "size": list(SIZE),
               "idle": rows(images)}
    with one_core_busy():
        results["one core busy"] = rows(images)
    results["first calls s"] = first_calls()
    lines = ["# The model loaded once\n",
             f"Machine: {results['machine']}. {N_IMAGES} development images at "
             f"{SIZE[0]}x{SIZE[1]}; milliseconds per image, median of {PASSES} passes.\n",
             "| way | idle ms | one core busy ms | / OpenCV idle |", "|---|---|---|---|"]
    for name, idle in results["idle"].items():
        lines.append(f"| {name} | {idle:.2f} | {results['one core busy'][name]:.2f} | "
                     f"{idle / results['idle']['OpenCV']:.2f}x |")
    first = results["first calls s"]
    lines.append(f"\nIn a fresh process `facedetect.detect` takes {first[0]:.2f} s the first "
                 f"time (imports, model load, compiled kernels), then {first[1] * 1000:.1f} "
                 f"and {first[2] * 1000:.1f} ms on a 320x240 image.")
    write_results("front_door", results, "\n".join(lines) + "\n")
    print("\n".join(lines))
    return results


if __name__ == "__main__":
    main()
