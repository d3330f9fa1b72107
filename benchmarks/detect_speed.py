"""Detection speed on scikit-image's five photographs, against OpenCV's default cascade.

``detect`` idle and with one core busy, and the one timing helper the benchmarks share.

Run:

- ``python -m benchmarks.detect_speed [MODEL ...] [--repeat 5] [--label detect_speed]``:
  seconds per megapixel of each model (default: the shipped one) at its own settings and
  of OpenCV's ``haarcascade_frontalface_default.xml`` (scale 1.1, 3 neighbours, min size
  19), idle and beside a busy-loop process holding one core.
- ``python -m benchmarks.detect_speed --scans [MODEL] [--scale-factor 1.1] [--min-size 24]
  [--repeat 3]`` (label ``detection``): the model's scan configurations against OpenCV at
  the same scale factor and minimum window, per photograph, with the windows each scans:
  the exact early rejection only, the learnt rejection thresholds, OpenCV's stepping, and
  the refined step (the default).
- ``python -m benchmarks.detect_speed --wait-policies [MODEL] [--processes 3] [--repeat 5]``
  (label ``under_load``): the model's time a pass, idle and with one core busy, under
  OpenMP's spin-waiting with every scan call parallel (before), passive waiting with every
  call parallel, and the default (passive waiting, scan calls under
  ``PARALLEL_MIN_WINDOWS`` windows of ``detector/_scan.py`` on the calling thread). Each
  figure is the median of ``--processes`` fresh processes: the OpenMP runtime reads the
  policy once, when it loads.

Timing (:func:`seconds_per_picture`): each detector is called once on each photograph
(compilation, caches), then the detectors take turns within each of ``repeat`` rounds, so
that a slow spell of a shared machine falls on all of them, not on one's runs; each
figure is the median of the rounds. With ``busy``, a ``while True: pass`` process holds one
core meanwhile.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

from .common import machine, one_core_busy, write_results

PICTURES = ("astronaut", "coffee", "rocket", "chelsea", "camera")   # scikit-image's
OPENCV_CASCADE = "haarcascade_frontalface_default.xml"
OPENCV_DEFAULT = "OpenCV default"


def photographs() -> dict[str, np.ndarray]:
    """``{name: grey picture}`` of :data:`PICTURES` (512x512 to 640x480)."""
    from PIL import Image
    from skimage import data

    from facedetect.images import to_grey
    return {name: to_grey(Image.fromarray(getattr(data, name)())) for name in PICTURES}


def seconds_per_picture(detectors: dict[str, Callable[[np.ndarray], object]], repeat: int,
                        busy: bool = False) -> dict[str, dict[str, float]]:
    """``{detector: {picture: median seconds}}`` for ``{name: detect(grey)}``, the
    detectors taking turns within each of ``repeat`` rounds after a warm-up call, idle or
    (``busy``) beside a busy-loop process holding one core."""
    greys = photographs()
    times = {name: {picture: [] for picture in greys} for name in detectors}
    with one_core_busy() if busy else contextlib.nullcontext():
        for picture, grey in greys.items():
            for detect in detectors.values():   # warm: first calls compile and fill caches
                detect(grey)
            for _ in range(repeat):
                for name, detect in detectors.items():
                    start = time.perf_counter()
                    detect(grey)
                    times[name][picture].append(time.perf_counter() - start)
    return {name: {picture: float(np.median(t)) for picture, t in per.items()}
            for name, per in times.items()}


def seconds_per_mpx(detectors: dict[str, Callable[[np.ndarray], object]], repeat: int,
                    busy: bool = False) -> dict[str, float]:
    """``{detector: seconds per megapixel}``: the geometric mean over the photographs of
    :func:`seconds_per_picture` over each picture's size."""
    megapixels = {picture: grey.size / 1e6 for picture, grey in photographs().items()}
    times = seconds_per_picture(detectors, repeat, busy)
    return {name: float(np.exp(np.mean([np.log(s / megapixels[p]) for p, s in per.items()])))
            for name, per in times.items()}


def picture_rows(times: dict[str, dict[str, float]]) -> list[dict]:
    """:func:`seconds_per_picture`'s figures as one row a photograph: ``{"image", "size",
    detector: seconds, ...}``."""
    sizes = {picture: f"{grey.shape[1]}x{grey.shape[0]}"
             for picture, grey in photographs().items()}
    return [{"image": picture, "size": sizes[picture],
             **{name: per[picture] for name, per in times.items()}} for picture in PICTURES]


def geometric_ratio(rows: list[dict], ours: str, theirs: str) -> float:
    """The geometric mean over :func:`picture_rows` of ``ours`` / ``theirs``."""
    return float(np.exp(np.mean([np.log(r[ours] / r[theirs]) for r in rows])))


def _detector(model, params, scanner):
    """``detect(grey)``: the model's scan at ``params``."""
    from facedetect.detector import detect_faces
    return lambda grey: detect_faces(grey, model, params, scanner)


def against_opencv(args) -> dict:
    """Each model and OpenCV's default cascade, seconds per megapixel, idle and busy."""
    import cv2

    from .peer_detectors import opencv_cascade, ours
    detectors = [ours(m) for m in args.models] + [opencv_cascade(
        cv2.data.haarcascades + OPENCV_CASCADE, OPENCV_DEFAULT)]
    detectors = {d.name: d.boxes for d in detectors}
    results = {"machine": machine(), "idle": seconds_per_mpx(detectors, args.repeat),
               "one_core_busy": seconds_per_mpx(detectors, args.repeat, busy=True)}
    lines = [f"# detect against OpenCV's default cascade ({args.label})\n",
             f"Machine: {results['machine']}.\n",
             "| detector | s/Mpx idle | / OpenCV idle | s/Mpx one core busy | / OpenCV busy |",
             "|---|---|---|---|---|"]
    for name in results["idle"]:
        idle, busy = results["idle"][name], results["one_core_busy"][name]
        lines.append(f"| {name} | {idle:.4f} | {idle / results['idle'][OPENCV_DEFAULT]:.2f}x | "
                     f"{busy:.4f} | {busy / results['one_core_busy'][OPENCV_DEFAULT]:.2f}x |")
    write_results(args.label, results, "\n".join(lines) + "\n")   # and prints it
    return results


def scans(args) -> dict:
    """The model's scan configurations against OpenCV, per photograph."""
    import cv2
    import numba

    from facedetect.detector import load_model
    from facedetect.detector import DetectionParams, params_for, scanner_for
    model = load_model(args.models[0])
    size = (args.min_size, args.min_size)
    cascade = cv2.CascadeClassifier(cv2.data.haarcascades + OPENCV_CASCADE)
    detectors = {"OpenCV": lambda grey: cascade.detectMultiScale(grey, args.scale_factor, 3,
                                                                 minSize=size)}
    # (label, step, learnt rejection): the exact scan is the "before" of the pruning change.
    configs = (("exact, step 1", 1, False), ("pruned, step 1", 1, True),
               ("pruned, step auto (OpenCV's stepping)", "auto", True),
               ("pruned, step refine", "refine", True))
    for label, step, pruning in configs:
        if step == DetectionParams.step and pruning:
            label += " (the default)"
        # The model's own image operating point (threshold, grouping) at these scan
        # settings: what detect does with no flags.
        params = params_for(model, scale_factor=args.scale_factor, min_size=args.min_size,
                            step=step)
        detectors[label] = _detector(model, params,
                                     scanner_for(model, params, pruning=pruning))
    times = seconds_per_picture(detectors, args.repeat)
    labels = [label for label in detectors if label != "OpenCV"]
    rows = []
    for picture, grey in photographs().items():
        theirs = times["OpenCV"][picture]
        for label in labels:
            found = detectors[label](grey)
            ours = times[label][picture]
            rows.append({"image": picture, "size": f"{grey.shape[1]}x{grey.shape[0]}",
                         "config": label, "ours_s": ours, "opencv_s": theirs,
                         "ratio": ours / theirs, "windows": found.scanned,
                         "windows_per_s": found.scanned / ours, "faces": len(found.boxes)})
    ratios = {label: float(np.exp(np.mean([np.log(r["ratio"]) for r in rows
                                           if r["config"] == label]))) for label in labels}
    results = {"machine": machine(), "threads": cv2.getNumThreads(), "rows": rows,
               "scale_factor": args.scale_factor, "min_size": args.min_size,
               "geometric_mean_ratio": ratios}
    table = "\n".join(f"| {r['image']} | {r['size']} | {r['config']} | {r['ours_s'] * 1e3:.0f} | "
                      f"{r['opencv_s'] * 1e3:.0f} | {r['ratio']:.2f}x | {r['windows']:,} | "
                      f"{r['windows_per_s'] / 1e6:.2f} M |" for r in rows)
    summary = "\n".join(f"| {label} | {ratio:.2f}x |" for label, ratio in ratios.items())
    own = params_for(model)
    markdown = f"""# Detection speed against OpenCV

Machine: {results['machine']}; OpenCV threads {results['threads']}, numba threads
{numba.get_num_threads()}. Scale factor {args.scale_factor}, minimum window {args.min_size}
px, medians of {args.repeat} runs after a warm-up, OpenCV timed in the same run on the same
grey image, the detectors taking turns. OpenCV: `{OPENCV_CASCADE}` (25 stages; it steps
2 px while the window is at most twice its size, then 1). facedetect: the model at its own
image operating point (threshold {own.threshold:.4g}, min-neighbors {own.min_neighbors});
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
    write_results(args.label, results, markdown)
    return results


# (label, OMP_WAIT_POLICY, scan calls this many windows or more run in parallel)
POLICIES = (("before: spin-waiting, every scan call parallel", "ACTIVE", "0"),
            ("passive waiting, every scan call parallel", "PASSIVE", "0"),
            ("after: passive, small scan calls serial (the default)", "PASSIVE", "default"))
CHILD = ("import json, sys; from benchmarks.detect_speed import one_process; "
         "print(json.dumps(one_process(*sys.argv[1:])))")


def one_process(model: str, parallel_min: str, busy: str, repeat: str) -> dict:
    """Seconds a pass over the photographs (the sum of their medians) in this process,
    with scan calls of ``parallel_min`` windows or more in parallel (``"default"``: the
    product's), beside a busy core when ``busy == "busy"``: one figure of
    :func:`wait_policies`, which runs it in a fresh process."""
    import numba

    from facedetect.detector import _scan as scan
    from facedetect.detector import load_model
    from facedetect.detector import params_for, scanner_for
    if parallel_min != "default":
        scan.PARALLEL_MIN_WINDOWS = int(parallel_min)
    detector = load_model(model)
    params = params_for(detector)
    times = seconds_per_picture({"detect": _detector(detector, params,
                                                     scanner_for(detector, params))},
                                int(repeat), busy == "busy")
    try:
        layer = numba.threading_layer()
    except ValueError:   # no parallel kernel ran
        layer = "none loaded"
    return {"detect_s": sum(times["detect"].values()), "layer": layer,
            "threads": numba.get_num_threads()}


def wait_policies(args) -> dict:
    """The model's time a pass under each of :data:`POLICIES`, idle and with one core busy,
    each the median of ``args.processes`` fresh processes."""
    model = args.models[0]
    if Path(model).is_file():
        model = str(Path(model).resolve())
    root = str(Path(__file__).resolve().parents[1])   # benchmarks importable in the child

    def measure(policy: str, parallel_min: str, busy: bool) -> dict:
        env = dict(os.environ, OMP_WAIT_POLICY=policy,
                   PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
        runs = [json.loads(subprocess.run(
            [sys.executable, "-c", CHILD, model, parallel_min, "busy" if busy else "idle",
             str(args.repeat)], env=env, check=True, capture_output=True, text=True
        ).stdout.strip().splitlines()[-1]) for _ in range(args.processes)]
        return dict(runs[0], detect_s=float(np.median([run["detect_s"] for run in runs])))

    rows = []
    for label, policy, parallel_min in POLICIES:
        idle, loaded = (measure(policy, parallel_min, busy) for busy in (False, True))
        rows.append({"setting": label, "policy": policy, "idle": idle, "busy": loaded,
                     "detect_ratio": loaded["detect_s"] / idle["detect_s"]})
    results = {"machine": machine(), "cpus": os.cpu_count(), "model": args.models[0],
               "rows": rows}
    table = "\n".join(f"| {r['setting']} | {r['idle']['detect_s'] * 1e3:.0f} | "
                      f"{r['busy']['detect_s'] * 1e3:.0f} | {r['detect_ratio']:.2f}x |"
                      for r in rows)
    markdown = f"""# Detection speed with one core busy

Machine: {results['machine']}, {results['cpus']} CPUs; numba threading layer
{rows[0]['idle']['layer']}, {rows[0]['idle']['threads']} threads. Busy: one `while True:
pass` process beside the measurement. Detect: the model ({results['model']}) at its own
operating point, milliseconds a pass over scikit-image's five photographs (the sum of each
picture's median of {args.repeat}). Each figure is the median of {args.processes} fresh
processes. Target: at most 1.2x the idle time. Boosting beside a busy core:
`python -m benchmarks.boosting --busy`.

| setting | detect idle ms | detect busy ms | ratio |
|---|---|---|---|
{table}
"""
    write_results(args.label, results, markdown)
    return results


MODES = {"detect_speed": (against_opencv, 5), "detection": (scans, 3),
         "under_load": (wait_policies, 5)}   # default label: (measurement, repeats)


def main(argv=None) -> dict:
    from facedetect._utils.threads import wait_passively
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help="model files or shipped names "
                        "(default: the shipped model; one with --scans or --wait-policies)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--scans", action="store_const", dest="mode", const="detection",
                      help="the model's scan configurations against OpenCV, per photograph")
    mode.add_argument("--wait-policies", action="store_const", dest="mode", const="under_load",
                      help="idle and busy under each OpenMP wait policy, in fresh processes")
    parser.add_argument("--repeat", type=int, help="rounds of timing (default 5; --scans 3)")
    parser.add_argument("--label", help="results file name (default: detect_speed; --scans "
                        "detection; --wait-policies under_load)")
    parser.add_argument("--scale-factor", type=float, default=1.1, help="--scans only")
    parser.add_argument("--min-size", type=int, default=24, help="--scans only")
    parser.add_argument("--processes", type=int, default=3,
                        help="fresh processes a figure (--wait-policies only)")
    args = parser.parse_args(argv)
    args.mode = args.mode or "detect_speed"
    measure, repeat = MODES[args.mode]
    if args.mode != "detect_speed" and len(args.models) > 1:
        parser.error("--scans and --wait-policies take one model")
    args.models = args.models or ["default"]
    args.repeat = repeat if args.repeat is None else args.repeat
    args.label = args.label or args.mode
    if args.repeat < 1 or args.processes < 1:
        parser.error("--repeat and --processes must be at least 1")
    wait_passively()   # as the detect command does (--wait-policies sets each child's)
    return measure(args)


if __name__ == "__main__":
    main()
