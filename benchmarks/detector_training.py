"""The detector recipe end to end: train-detector's time and peak memory, then the model on
the held-out CBCL split, the held-out negative pictures and the MIT+CMU development images,
beside OpenCV's cascades in the same run.

Run: ``python -m benchmarks.detector_training [--runs default,4x,exact] [--label NAME]``

Each run is ``train-detector --cost 1,10`` plus the run's flags, in a child process whose
peak resident memory (``ru_maxrss``) is read from the parent. Data: ``$FACEDETECT_DATA``
(CBCL) and ``$FACEDETECT_NEGATIVES`` (the negatives folder) as the user sets them; the
development images from ``../shared/datasets/mit-cmu-dev`` (or ``--dev DIR``). The
development images only measure: nothing is chosen on them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from facedetect.data import find_negatives, negative_files, split_negatives
from facedetect.detector import detect_faces, params_for
from facedetect.modelfile._detection import without_stump_lists
from facedetect.images import read_grey
from facedetect.detector import HaarDetectorModel

from .common import machine, write_results

RUNS = {"default": [], "2x": ["--bootstrap-limit", "8000"], "4x": ["--bootstrap-limit", "16000"],
        "exact": ["--exact", "--memory", "12"], "no-bootstrap": ["--no-bootstrap"],
        "no-bootstrap-exact": ["--no-bootstrap", "--exact", "--memory", "12"]}
CASCADES = ("haarcascade_frontalface_default.xml", "haarcascade_frontalface_alt2.xml")
WRAPPER = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[1:]); "
           "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(code)")


def train(name: str, out: Path) -> dict:
    command = [sys.executable, "-m", "facedetect", "train", "--recipe", "cbcl", "--cost", "1,10",
               "--quiet", "--out", str(out), *RUNS[name]]
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", WRAPPER, *command], capture_output=True,
                          text=True)
    if done.returncode:
        raise SystemExit(f"{name}: train-detector failed: {done.stderr.strip()}")
    return {"command": "train-detector --cost 1,10 " + " ".join(RUNS[name]),
            "seconds": round(time.perf_counter() - start, 1),
            "peak_rss_gib": round(int(done.stdout.split()[-1]) / 2**20, 2)}


def cbcl_heldout(model_path: Path) -> dict:
    done = subprocess.run([sys.executable, "-m", "facedetect", "evaluate", str(model_path),
                           "--json"], capture_output=True, text=True, check=True)
    report = json.loads(done.stdout)
    return {k: report[k] for k in ("false_negative_rate", "false_positive_rate",
                                   "n_positive", "n_negative")}


def heldout_negatives(model_path: Path, held: list[Path], transform=None) -> dict:
    """False alarms per megapixel on the held-out fifth: our detect at the model's own
    operating point, and OpenCV's cascades (scale 1.1, 3 neighbours, min size 19); each
    picture through ``transform`` first if one is given (the grainy pictures)."""
    import cv2
    model = HaarDetectorModel.load(model_path)
    params = params_for(model)
    cascades = {n: cv2.CascadeClassifier(cv2.data.haarcascades + n) for n in CASCADES}
    counts = {"facedetect": 0, **{n: 0 for n in CASCADES}}
    seconds = {k: 0.0 for k in counts}
    megapixels = 0.0
    for path in held:
        grey = read_grey(path)
        grey = transform(grey) if transform is not None else grey
        megapixels += grey.size / 1e6
        start = time.perf_counter()
        counts["facedetect"] += len(detect_faces(grey, model, params).boxes)
        seconds["facedetect"] += time.perf_counter() - start
        for name, cascade in cascades.items():
            start = time.perf_counter()
            counts[name] += len(cascade.detectMultiScale(grey, 1.1, 3, minSize=(19, 19)))
            seconds[name] += time.perf_counter() - start
    return {"pictures": len(held), "megapixels": round(megapixels, 1),
            "false_alarms": counts,
            "per_megapixel": {k: round(v / megapixels, 3) for k, v in counts.items()},
            "seconds": {k: round(v, 1) for k, v in seconds.items()}}


def dev_images(model_path: Path, dev: Path) -> dict:
    done = subprocess.run([sys.executable, "-m", "facedetect", "evaluate-images",
                           str(dev / "images"), "--annotations", str(dev / "bboxes.txt"),
                           "--model", str(model_path), "--baseline", "opencv", "--json",
                           "--quiet"], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def _row(name, result):
    ours, neg = result["dev"], result["negatives"]["per_megapixel"]
    return (f"| {name} | {result['train']['seconds']:.0f} | "
            f"{result['train']['peak_rss_gib']:.2f} | "
            f"{result['cbcl']['false_negative_rate']:.4f} / "
            f"{result['cbcl']['false_positive_rate']:.4f} | "
            f"{ours['tpr']:.3f} at {ours['false_positives']} FP | {neg['facedetect']:.3f} |")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="default", help=f"comma list of {', '.join(RUNS)}")
    parser.add_argument("--dev", default=str(Path(__file__).resolve().parents[2] / "shared"
                                             / "datasets" / "mit-cmu-dev"))
    parser.add_argument("--label", default="detector_training")
    parser.add_argument("--models", default="data/models", help="where the models go")
    args = parser.parse_args(argv)
    folder = find_negatives(os.environ.get("FACEDETECT_NEGATIVES"))
    if folder is None:
        raise SystemExit("set FACEDETECT_NEGATIVES to the negatives folder")
    _, held = split_negatives(negative_files(folder))
    results = {"machine": machine(), "runs": {}}
    work = Path(args.models)
    work.mkdir(parents=True, exist_ok=True)
    for name in args.runs.split(","):
        out = work / f"{args.label}_{name}.json"
        result = {"train": train(name, out)}
        result["cbcl"] = cbcl_heldout(out)
        result["negatives"] = heldout_negatives(out, held)
        result["dev"] = dev_images(out, Path(args.dev))
        point = HaarDetectorModel.load(out).image_point
        result["detection"] = None if point is None else {
            k: v for k, v in without_stump_lists(point).items() if k != "curve"}
        results["runs"][name] = result
        print(json.dumps(result, indent=2), flush=True)
    first = next(iter(results["runs"].values()))
    lines = ["# Detector training (train-detector --cost 1,10)\n",
             f"Machine: {results['machine']}. Idle machine unless stated.\n",
             "| run | train s | peak RSS GiB | CBCL held-out FN / FP | dev TPR at FP "
             "(44 images, 218 faces) | held-out negatives FA/Mpx |",
             "|---|---|---|---|---|---|"]
    lines += [_row(name, result) for name, result in results["runs"].items()]
    neg = first["negatives"]
    lines += ["", f"OpenCV in the same run, held-out negatives ({neg['pictures']} pictures, "
              f"{neg['megapixels']} Mpx): "
              + ", ".join(f"{n}: {neg['per_megapixel'][n]:.3f} FA/Mpx" for n in CASCADES),
              "", "OpenCV on the development images, same run: "
              + ", ".join(f"{b['cascade']}: TPR {b['tpr']:.3f} at {b['false_positives']} FP"
                          for b in first["dev"].get("opencv", [])), ""]
    write_results(args.label, results, "\n".join(lines) + "\n")
    return results


if __name__ == "__main__":
    main()
