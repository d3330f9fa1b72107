"""A cascade for an object that is not a face, end to end, from data that ships with
scikit-image: the coins of ``skimage.data.coins()``.

Run: ``python -m benchmarks.coins_cascade [--stages 8] [--work DIR]``

1. Positives: the coins, found by Otsu thresholding and cut out as squares with a margin
   (a folder of PNGs, as a user's ``--positives`` folder would be).
2. Negatives: scikit-image's other bundled pictures, none of which shows a coin.
3. ``train-detector --stages N --positives DIR --window 20x20 --negatives DIR``, then
   ``detect`` on the coins picture, ``export-opencv``, and OpenCV's ``detectMultiScale``
   with the exported cascade on the same picture.

The coins are the training image's own, so this shows the tool chain working for any
object, not how well a coin detector generalises.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np
from PIL import Image
from scipy import ndimage
from skimage import data, filters, measure

from facedetect.detector import iou_matrix
from facedetect.pipeline import skimage_negatives

from .common import machine, write_results


def coin_boxes() -> np.ndarray:
    """``(x, y, w, h)`` squares around the coins of ``skimage.data.coins()``."""
    image = data.coins()
    smooth = filters.gaussian(image, 2)
    mask = ndimage.binary_fill_holes(ndimage.binary_closing(
        smooth > filters.threshold_otsu(smooth), iterations=3))
    boxes = []
    for region in measure.regionprops(measure.label(mask)):
        if not 400 < region.area < 5000:
            continue
        top, left, bottom, right = region.bbox
        side = int(round(1.1 * max(bottom - top, right - left)))
        cx, cy = (left + right) // 2, (top + bottom) // 2
        x = int(np.clip(cx - side // 2, 0, image.shape[1] - side))
        y = int(np.clip(cy - side // 2, 0, image.shape[0] - side))
        boxes.append((x, y, side, side))
    return np.array(sorted(boxes))


def write_data(work: Path) -> tuple[Path, Path, Path]:
    """The positives folder, the negatives folder and the coins picture, under ``work``."""
    positives, negatives = work / "coins", work / "no-coins"
    positives.mkdir(parents=True, exist_ok=True)
    negatives.mkdir(exist_ok=True)
    image = data.coins()
    for k, (x, y, w, h) in enumerate(coin_boxes()):
        Image.fromarray(image[y:y + h, x:x + w]).save(positives / f"coin_{k:02d}.png")
    for picture, name in zip(*skimage_negatives()):
        if name != "skimage.data.coins":
            Image.fromarray(picture).save(negatives / f"{name.rsplit('.', 1)[1]}.png")
    picture = work / "coins.png"
    Image.fromarray(image).save(picture)
    return positives, negatives, picture


def facedetect(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "facedetect", *args], capture_output=True,
                          text=True)
    if done.returncode:
        raise SystemExit(f"facedetect {args[0]} failed: {done.stderr.strip()}")
    return done.stdout


def found(boxes, truth) -> tuple[int, int]:
    """(coins found, boxes that are no coin), matching at IoU >= 0.3."""
    boxes = np.asarray(boxes).reshape(-1, 4)
    if len(boxes) == 0:
        return 0, 0
    overlap = iou_matrix(boxes, truth)
    return int((overlap.max(axis=0) >= 0.3).sum()), int((overlap.max(axis=1) < 0.3).sum())


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", type=int, default=8)
    parser.add_argument("--work", help="folder for the data and the model (default: temp)")
    parser.add_argument("--no-write", action="store_true", help="do not store the results")
    args = parser.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="coins-"))
    positives, negatives, picture = write_data(work)
    truth = coin_boxes()
    model, xml = work / "coins.json", work / "coins.xml"
    start = time.perf_counter()
    trained = json.loads(facedetect(
        "train-detector", "--stages", str(args.stages), "--positives", str(positives),
        "--window", "20x20", "--negatives", str(negatives), "--cost", "2,1", "--mirror",
        "--jitter", "4", "--min-hit-rate", "0.98", "--negatives-per-stage", "600",
        "--target-false-alarm-rate", "1e-9", "--holdout", "0.3",
        "--out", str(model), "--json"))
    seconds = time.perf_counter() - start
    detected = json.loads(facedetect("detect", str(picture), "--model", str(model), "--json"))
    ours = [f["box"] for f in detected[0]["faces"]]
    facedetect("export-opencv", str(model), str(xml))
    theirs = cv2.CascadeClassifier(str(xml)).detectMultiScale(data.coins(), 1.1, 3,
                                                              minSize=(20, 20))
    results = {"machine": machine(), "coins": len(truth), "train_seconds": round(seconds, 1),
               "stages": trained["stages"], "stop_reason": trained["stop_reason"],
               "facedetect": dict(zip(("found", "false_positives"), found(ours, truth))),
               "opencv_with_our_cascade": dict(zip(("found", "false_positives"),
                                                   found(theirs, truth)))}
    print(_markdown(results))
    if not args.no_write:
        write_results("coins_cascade", results, _markdown(results))
    return results


def _markdown(results: dict) -> str:
    ours, theirs = results["facedetect"], results["opencv_with_our_cascade"]
    exported = "OpenCV `detectMultiScale` with the exported cascade"
    return f"""# A cascade for coins (scikit-image's coins picture)

Machine: {results['machine']}. {len(results['stages'])} stages, trained in
{results['train_seconds']} s ({results['stop_reason']}).

| detector on the coins picture ({results['coins']} coins) | coins found | other boxes |
|---|---|---|
| facedetect `detect` | {ours['found']} | {ours['false_positives']} |
| {exported} | {theirs['found']} | {theirs['false_positives']} |
"""


if __name__ == "__main__":
    main()
