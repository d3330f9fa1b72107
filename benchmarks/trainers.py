"""The cascade trainers side by side, on the same positives and negatives.

Run (``opencv_traincascade`` built from ``../shared/peers/opencv-traincascade``; dlib from the
``peers`` extra)::

    FACEDETECT_FACES=../shared/datasets/faces \\
    FACEDETECT_NEGATIVES=../shared/datasets/negatives \\
    python -m benchmarks.trainers --sizes 500,2000,cbcl --cap 1200 \\
        --opencv /tmp/opencv-apps/opencv_traincascade --label trainers

Positives: ``N`` windows (24x24, framed 2.2 eye distances as the ``faces`` recipe cuts them)
drawn with a fixed seed from the training part of the faces from the wild, or CBCL's 2,429
faces at 19x19 (``cbcl``). Negatives: the mining part of the negative pictures (never the
held-out fifth), as ``bg.txt``. Trainers, each in its own process under ``--cap`` seconds
of wall time (a stopped ``opencv_traincascade`` keeps the stages it finished):

- ``opencv_traincascade`` with the tutorial's flags: ``-featureType HAAR -mode ALL
  -numStages 20 -minHitRate 0.995 -maxFalseAlarmRate 0.5``, ``-numPos`` 0.9 N, ``-numNeg``
  N, 2 threads, 1 GiB buffers;
- ``facedetect traincascade`` with the same flags and files (``-numStages`` from
  ``--our-stages``), and (trainer ``heldout``) with
  ``--heldout-negatives N`` too: each stage measures its rate on N more fresh negatives;
- ``train-detector --recipe object`` on the same windows as a folder, exported by
  ``export-opencv``;
- dlib's ``train_simple_object_detector`` (HOG and a linear SVM): each positive enlarged to
  80x80 in the middle of a 160x160 cut of a mining picture, its box given; run with the
  picture doubled (its detection window is 80x80).

Reported: wall and CPU seconds, peak memory, stages reached and the product of their
false-alarm rates; every XML run by ``cv2.CascadeClassifier`` (dlib by dlib) on the
development images (TPR at 2, 5, 10, 20 false positives, boxes mapped as for the peers),
the held-out wild crops and the held-out face-free pictures (false alarms per megapixel),
and each detector's scan time (seconds per megapixel on scikit-image's photographs, medians
of 3, idle: :func:`benchmarks.detect_speed.seconds_per_mpx`). Then, for every cascade, the
stages and seconds its trainer took to get down to the held-out false alarms of
``opencv_traincascade``'s cascade, measured on its own first stages
(:mod:`benchmarks.trainer_stages`); ``--our-stages 30`` lets ours train past the
tutorial's 20 to get there. A cascade too permissive to evaluate (its stages' rates
multiply past ``MAX_EVALUATED_PRODUCT``, as a capped ``opencv_traincascade``'s first
stages may) is left out of the evaluation, and the time to its rate is then measured by
the share of mined windows the stages accept; a capped run of ours is measured on the
stages its checkpoint holds.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import cv2
import numpy as np

from .common import machine, wild_benchmark_parser, wild_data, write_results
from .detect_speed import seconds_per_mpx
from .peer_detectors import Detector, _above, _as_boxes, _score_knobs, opencv_cascade
from .trainer_stages import reach_opencv, reach_table

STATS = ("import resource, subprocess, sys, json, time\n"
         "log = open(sys.argv[2], 'w'); start = time.perf_counter()\n"
         "child = subprocess.Popen(sys.argv[3:], stdout=log, stderr=subprocess.STDOUT)\n"
         "try:\n    code = child.wait(timeout=float(sys.argv[1]))\n"
         "except subprocess.TimeoutExpired:\n    child.kill(); child.wait(); code = 'capped'\n"
         "use = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
         "print(json.dumps({'code': code, 'wall_s': round(time.perf_counter() - start, 1),"
         " 'cpu_s': round(use.ru_utime + use.ru_stime, 1),"
         " 'peak_rss_gib': round(use.ru_maxrss / 2**20, 2)}))\n")
BUDGETS = (2, 5, 10, 20)


def positives(size: str, faces, seed: int = 0) -> np.ndarray:
    """The positive windows of a run: ``size`` wild training faces, or CBCL's faces."""
    if size == "cbcl":
        from facedetect.data import load_cbcl
        cbcl = load_cbcl()
        return cbcl.images[cbcl.labels == 1]
    from facedetect.data import eye_line_for, face_windows
    from facedetect.data import heldout_mask
    training = faces.subset(~heldout_mask(faces.groups))
    windows, _ = face_windows(training, (24, 24), framing=2.2, eye_line=eye_line_for(2.2))
    pick = np.random.default_rng(seed).choice(len(windows), int(size), replace=False)
    return windows[np.sort(pick)]


def write_inputs(folder: Path, windows: np.ndarray, pictures: list) -> dict:
    """``pos/`` (one PNG a window), ``info.dat``, ``pos.vec`` (by ``facedetect
    createsamples``, byte for byte OpenCV's) and ``bg.txt``."""
    (folder / "pos").mkdir(parents=True)
    height, width = windows.shape[1:]
    lines = []
    for k, window in enumerate(windows):
        cv2.imwrite(str(folder / "pos" / f"p{k:05d}.png"), window)
        lines.append(f"pos/p{k:05d}.png 1 0 0 {width} {height}")
    (folder / "info.dat").write_text("\n".join(lines) + "\n")
    (folder / "bg.txt").write_text("\n".join(str(Path(p).resolve()) for p in pictures) + "\n")
    subprocess.run([sys.executable, "-m", "facedetect", "createsamples", "-info", "info.dat",
                    "-vec", "pos.vec", "-num", str(len(windows)), "-w", str(width), "-h",
                    str(height)], cwd=folder, check=True, capture_output=True)
    return {"w": width, "h": height, "n": len(windows)}


def tutorial_flags(shape: dict, stages: int = 20) -> list[str]:
    return ["-vec", "pos.vec", "-bg", "bg.txt", "-numPos", str(int(0.9 * shape["n"])),
            "-numNeg", str(shape["n"]), "-numStages", str(stages), "-w", str(shape["w"]), "-h",
            str(shape["h"]), "-featureType", "HAAR", "-mode", "ALL", "-minHitRate", "0.995",
            "-maxFalseAlarmRate", "0.5", "-precalcValBufSize", "1024",
            "-precalcIdxBufSize", "1024", "-numThreads", "2"]


# --reuse: a trainer whose stats file a run left is not trained again (its outputs are read).
REUSE = {"on": False}


def timed_run(command: list[str], cap: float, folder: Path, name: str) -> dict:
    """Run ``command`` in ``folder`` under ``cap`` seconds: its wall, CPU, peak memory
    (kept in ``NAME.stats.json`` beside its log)."""
    saved = folder / f"{name}.stats.json"
    if REUSE["on"] and saved.exists():
        return json.loads(saved.read_text())
    done = subprocess.run([sys.executable, "-c", STATS, str(cap), f"{name}.log", *command],
                          cwd=folder, capture_output=True, text=True)
    stats = json.loads(done.stdout.strip().splitlines()[-1])
    stats["log"] = str(folder / f"{name}.log")
    saved.write_text(json.dumps(stats))
    print(name, stats, flush=True)
    return stats


def opencv_stages(log: Path) -> tuple[list[float], list[float], list[float]]:
    """Each finished stage's false-alarm rate on its negatives and the seconds it took,
    from OpenCV's log ("Training until now has taken 0 days 0 hours 5 minutes 12
    seconds" after each stage), and the share of windows its first ``k`` stages accept
    ("NEG count : acceptanceRatio 2000 : 0.0234", logged as stage ``k`` begins).

    Examples
    --------
    >>> import tempfile
    >>> log = Path(tempfile.mkdtemp()) / "log"
    >>> _ = log.write_text(
    ...     "===== TRAINING 0-stage =====\\nNEG count : acceptanceRatio    20 : 1\\n"
    ...     "|   3|        1|     0.45|\\nEND>\\nTraining until now has taken 0 days 0 hours "
    ...     "1 minutes 5 seconds.\\n===== TRAINING 1-stage =====\\n"
    ...     "NEG count : acceptanceRatio    20 : 0.0412\\n")
    >>> opencv_stages(log)
    ([0.45], [65.0], [1.0, 0.0412])
    """
    text = log.read_text(errors="replace")
    rates, seconds, before, acceptance = [], [], 0.0, []
    for block in text.split("===== TRAINING ")[1:]:
        accepted = re.search(r"acceptanceRatio\s+\d+\s*:\s*([\d.eE+-]+)", block)
        if accepted:
            acceptance.append(float(accepted.group(1)))
        table = re.findall(r"\|\s*\d+\|\s*[\d.]+\|\s*([\d.]+)\|", block)
        taken = re.search(r"(\d+) days (\d+) hours (\d+) minutes (\d+) seconds", block)
        if table and "END>" in block and taken:
            days, hours, minutes, secs = (int(v) for v in taken.groups())
            total = ((days * 24 + hours) * 60 + minutes) * 60 + secs
            rates.append(float(table[-1]))
            seconds.append(float(total - before))
            before = total
    return rates, seconds, acceptance


def train_opencv(binary: str, folder: Path, shape: dict, cap: float) -> dict:
    (folder / "opencv").mkdir(exist_ok=True)
    stats = timed_run([binary, "-data", "opencv", *tutorial_flags(shape)], cap, folder,
                      "opencv_traincascade")
    done = len(list((folder / "opencv").glob("stage*.xml")))
    if done and not (folder / "opencv" / "cascade.xml").exists():
        # Capped, or stopped for want of positives ("Can not get new positive sample"): it
        # writes cascade.xml of the stages it finished when run again with that many.
        flags = tutorial_flags(shape)
        flags[flags.index("-numStages") + 1] = str(done)
        subprocess.run([binary, "-data", "opencv", *flags], cwd=folder, capture_output=True)
    (stats["stage_false_alarms"], stats["stage_seconds"],
     stats["stage_acceptance"]) = opencv_stages(Path(stats["log"]))
    stats["xml"] = str(folder / "opencv" / "cascade.xml")
    return stats


HELDOUT = "facedetect traincascade --heldout-negatives"
TRAINING_RULE = "facedetect traincascade --hit-rate-on training"
# Our variants: (output folder, log name, extra flags of a run at N positives).
VARIANTS = {"ours": ("ours", "facedetect_traincascade", lambda n: []),
            "heldout": ("ours_heldout", "facedetect_heldout",
                        lambda n: ["--heldout-negatives", str(n)]),
            "training": ("ours_training", "facedetect_training",
                         lambda n: ["--hit-rate-on", "training"])}


def train_ours(folder: Path, shape: dict, cap: float, variant: str = "ours",
               stages: int = 20) -> dict:
    out, name, flags = VARIANTS[variant]
    extra = flags(shape["n"])
    if not (REUSE["on"] and (folder / f"{name}.stats.json").exists()):
        # traincascade continues a checkpoint it finds: a run is timed from nothing
        shutil.rmtree(folder / out, ignore_errors=True)
    stats = timed_run([sys.executable, "-m", "facedetect", "traincascade", "-data", out,
                       *tutorial_flags(shape, stages), *extra, "--quiet"], cap, folder, name)
    model, xml = folder / out / "cascade.json", folder / out / "cascade.xml"
    checkpoint = model.with_name(model.name + ".checkpoint.json")
    if stats.get("code") == "capped" and not model.exists() and checkpoint.exists():
        # Capped: its finished stages are in its checkpoint, a model file, exported as a
        # capped opencv_traincascade's cascade is written from its finished stages.
        from facedetect.detector._api import load_model
        from facedetect.detector._export import export_opencv
        from facedetect.detector._staging import exported_form
        exported, threshold = exported_form(load_model(str(checkpoint)))
        export_opencv(exported, xml, threshold)
        model = checkpoint
    return dict(stats, **_our_stages(model), xml=str(xml))


def train_recipe(folder: Path, shape: dict, negatives: str, cap: float) -> dict:
    model = folder / "object.json"
    stats = timed_run([sys.executable, "-m", "facedetect", "train", "--recipe", "object",
                       "--positives", "pos", "--window", f"{shape['w']}x{shape['h']}",
                       "--negatives", negatives, "--out", str(model), "--quiet"], cap, folder,
                      "recipe_object")
    subprocess.run([sys.executable, "-m", "facedetect", "export-opencv", str(model),
                    str(folder / "object.xml")], capture_output=True)
    return dict(stats, **_our_stages(model), xml=str(folder / "object.xml"))


def _our_stages(model: Path) -> dict:
    if not model.exists():
        return {"stage_false_alarms": [], "stage_seconds": []}
    training = json.loads(model.read_text())["training"]
    stages = training["cascade_stages"]
    found = {"stage_false_alarms": [s["false_alarm_rate"] for s in stages],
             "stage_acceptance": [s.get("acceptance_ratio") for s in stages],
             "stage_seconds": [s["seconds"] for s in stages]}
    if all("elapsed_seconds" in s for s in stages):
        found["stage_elapsed"] = [s["elapsed_seconds"] for s in stages]
    if "seconds" in training:   # a checkpoint's training has not ended
        found["training_seconds"] = training["seconds"]
    return found


DLIB_TRAIN = """
import sys, numpy as np, cv2, dlib
data = np.load(sys.argv[1])
options = dlib.simple_object_detector_training_options()
options.add_left_right_image_flips = True
options.C = 5
options.num_threads = 2
boxes = [[dlib.rectangle(40, 40, 119, 119)] for _ in range(len(data["images"]))]
detector = dlib.train_simple_object_detector(list(data["images"]), boxes, options)
detector.save(sys.argv[2])
"""


def train_dlib(folder: Path, windows: np.ndarray, pictures: list, cap: float) -> dict:
    from facedetect.images import read_grey
    rng = np.random.default_rng(1)
    images = []
    for k, window in enumerate(windows):
        picture = read_grey(pictures[k % len(pictures)])
        if min(picture.shape) < 160:
            picture = cv2.resize(picture, (160, 160))
        y, x = (rng.integers(0, s - 159) for s in picture.shape)
        canvas = picture[y:y + 160, x:x + 160].copy()
        canvas[40:120, 40:120] = cv2.resize(window, (80, 80), interpolation=cv2.INTER_LINEAR)
        images.append(canvas)
    np.savez(folder / "dlib_images.npz", images=np.stack(images))
    stats = timed_run([sys.executable, "-c", DLIB_TRAIN, "dlib_images.npz", "dlib.svm"], cap,
                      folder, "dlib_train")
    stats["model"] = str(folder / "dlib.svm")
    return stats


def dlib_detector(path: str, label: str) -> Detector:
    import dlib
    detector = dlib.fhog_object_detector(path)

    def run(grey, floor):
        rects, scores, _ = detector.run(np.ascontiguousarray(grey), 1, floor)
        return (_as_boxes([(r.left(), r.top(), r.width(), r.height()) for r in rects]),
                np.asarray(scores, np.float64))
    return Detector(label, lambda grey: run(grey, -0.5), _above,
                    lambda raws: _score_knobs(raws, -0.5), -1e-9,
                    detect=lambda grey: run(grey, 0.0)[0])


# A cascade whose stages' false-alarm rates multiply to more than this is not run on the
# evaluation images: in an earlier run at 2,000 faces opencv_traincascade, capped in its
# fifth stage, left 4 stages that accept 2.3% of windows, and OpenCV had not scanned the
# 44 development pictures with them in 7 minutes. The time to its rate is then measured
# by acceptance.
MAX_EVALUATED_PRODUCT = 0.01


def too_permissive(stats: dict) -> bool:
    """Whether a trained cascade's stages accept too much to be evaluated.

    Examples
    --------
    >>> too_permissive({"stage_false_alarms": [0.5, 0.5, 0.5, 0.5]})
    True
    >>> too_permissive({"stage_false_alarms": [0.5] * 7}), too_permissive({})
    (False, False)
    """
    rates = stats.get("stage_false_alarms") or []
    return bool(rates) and float(np.prod(rates)) > MAX_EVALUATED_PRODUCT


def detectors_of(run: dict) -> list[Detector]:
    found = []
    for name in ("opencv_traincascade", "facedetect traincascade", HELDOUT, TRAINING_RULE,
                 "recipe object"):
        if too_permissive(run["trainers"].get(name, {})):
            continue
        xml = run["trainers"].get(name, {}).get("xml")
        if xml and Path(xml).exists() and not cv2.CascadeClassifier(xml).empty():
            found.append(opencv_cascade(xml, f"{run['size']}: {name}"))
    model = run["trainers"].get("dlib", {}).get("model")
    if model and Path(model).exists():
        found.append(dlib_detector(model, f"{run['size']}: dlib"))
    return found


def main(argv=None) -> dict:
    from facedetect.pipeline import NegativeSet
    from facedetect.pipeline import heldout_faces
    import facedetect
    from facedetect.pipeline import crop_recall
    from .heldout_sets import COMPARED, pooled
    from .peers import crops, development, false_alarms
    parser = wild_benchmark_parser(__doc__.splitlines()[0], "trainers", 1)
    parser.add_argument("--sizes", default="500,2000,cbcl")
    parser.add_argument("--cap", type=float, default=1200.0)
    parser.add_argument("--opencv", default="/tmp/opencv-apps/opencv_traincascade")
    parser.add_argument("--reuse", metavar="DIR",
                        help="the work folder of an earlier run: trainers that finished "
                             "there are not trained again")
    parser.add_argument("--trainers", default="opencv,ours,heldout,recipe,dlib",
                        help="which to train, of opencv, ours, heldout, training (ours at "
                             "OpenCV's hit-rate rule), recipe and dlib (default: all but "
                             "training)")
    parser.add_argument("--our-stages", type=int, default=20,
                        help="-numStages for facedetect traincascade (OpenCV keeps the "
                             "tutorial's 20): more, to see where ours reaches OpenCV's "
                             "false-alarm rate")
    args = parser.parse_args(argv)
    chosen = set(args.trainers.split(","))
    faces, held_pictures = wild_data(args.faces)
    import os
    negatives_folder = os.environ["FACEDETECT_NEGATIVES"]
    mining = NegativeSet.find(negatives_folder).mining
    results = {"machine": machine(), "cap_s": args.cap, "runs": []}
    REUSE["on"] = bool(args.reuse)
    work = Path(args.reuse or tempfile.mkdtemp(prefix="trainers-"))
    for size in args.sizes.split(","):
        folder = work / size
        windows = positives(size, faces)
        shape = (write_inputs(folder, windows, mining) if not (folder / "pos.vec").exists()
                 else {"w": windows.shape[2], "h": windows.shape[1], "n": len(windows)})
        run = {"size": size, "positives": shape, "trainers": {}}
        if "opencv" in chosen:
            run["trainers"]["opencv_traincascade"] = (
                train_opencv(args.opencv, folder, shape, args.cap) if Path(args.opencv).exists()
                else {"skipped": f"{args.opencv} is not built (../shared/peers/)"})
        if "ours" in chosen:
            run["trainers"]["facedetect traincascade"] = train_ours(folder, shape, args.cap,
                                                                    stages=args.our_stages)
        if "heldout" in chosen:
            run["trainers"][HELDOUT] = train_ours(folder, shape, args.cap, "heldout",
                                                  stages=args.our_stages)
        if "training" in chosen:
            run["trainers"][TRAINING_RULE] = train_ours(folder, shape, args.cap, "training",
                                                        stages=args.our_stages)
        if "recipe" in chosen:
            run["trainers"]["recipe object"] = train_recipe(folder, shape, negatives_folder,
                                                            args.cap)
        if "dlib" in chosen:
            try:
                import dlib  # noqa: F401   the peers extra
                run["trainers"]["dlib"] = train_dlib(folder, windows, mining, args.cap)
            except ImportError:
                run["trainers"]["dlib"] = {"skipped": "dlib is not installed (peers extra)"}
        detectors = detectors_of(run)
        held = heldout_faces(facedetect.load_model("default"), faces)
        run["dev"] = {name: row["mapped"]["tpr_at_fp"]
                      for name, row in development(detectors, Path(args.dev)).items()}
        run["crops"] = {name: row["clean"] for name, row in crops(detectors, held).items()}
        run["false_alarms_per_mpx"] = {name: row["clean"] for name, row in
                                       false_alarms(detectors, held_pictures).items()}
        run["seconds_per_mpx"] = seconds_per_mpx({d.name: d.boxes for d in detectors}, 3)
        run["reach"] = reach_opencv(run, held_pictures, folder, recall_of=lambda xml: pooled(
            crop_recall(opencv_cascade(str(xml), str(xml)).boxes, held)._asdict()[
                "by_source"], COMPARED))
        results["runs"].append(run)
        write_results(args.label, results, markdown(results))
    return results


def markdown(results: dict) -> str:
    from .heldout_sets import COMPARED, pooled
    lines = [f"# Cascade trainers side by side ({results['machine']}, cap "
             f"{results['cap_s']:.0f} s a trainer)", "",
             "| positives | trainer | wall s | CPU s | peak GiB | stages | false alarms "
             "(product) | dev TPR at 2 / 5 / 10 / 20 FP | held-out crops | FA / Mpx | "
             "scan s / Mpx |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for run in results["runs"]:
        for name, stats in run["trainers"].items():
            label = f"{run['size']}: {'dlib' if name == 'dlib' else name}"
            if "skipped" in stats:
                lines.append(f"| {run['size']} | {name} | {stats['skipped']} ||||||||")
                continue
            rates = stats.get("stage_false_alarms", [])
            product = f"{np.prod(rates):.2e}" if rates else ""
            if too_permissive(stats):
                product += " (too permissive to evaluate)"
            dev = run["dev"].get(label, {})
            tpr = " / ".join(f"{dev.get(str(b), 0):.3f}" for b in BUDGETS) if dev else ""
            crop = run["crops"].get(label)
            crop = f"{pooled(crop['by_source'], COMPARED):.3f}" if crop else ""
            fa = run["false_alarms_per_mpx"].get(label, "")
            speed = run.get("seconds_per_mpx", {}).get(label)
            speed = "" if speed is None else f"{speed:.3f}"
            lines.append(f"| {run['size']} | {name} | {stats['wall_s']} | {stats['cpu_s']} | "
                         f"{stats['peak_rss_gib']} | {len(rates) or ''} | {product} | {tpr} | "
                         f"{crop} | {fa} | {speed} |")
    return "\n".join(lines + reach_table(results)) + "\n"


if __name__ == "__main__":
    main()
