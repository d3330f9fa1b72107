"""The staged OpenCV export's rejection budget against its speed, on training data only.

``export-opencv`` cuts a one-stage model's stages at soft-rejection levels learnt at the
export's own threshold from the training faces (4% of those accepted there,
``pipeline/_export_point.py``). A smaller budget keeps more faces and evaluates more
stumps. For each budget, and for ``detect``'s levels lowered to that threshold (what the
export used before, ``--detect-levels``):

- the share of the training faces accepted at the threshold that the levels reject, with
  every stump checked (the soft cascade) and at the cuts only (the staged XML);
- stumps evaluated per window of training negative pictures
  (:func:`benchmarks.opencv_export.stumps_per_window`);
- ``detectMultiScale(grey, 1.1, 3)`` time of each XML against alt2's on training negative
  pictures, idle and with one core busy;
- for the other cut layouts of ``benchmarks.opencv_export.SCHEDULES`` at the same levels,
  the stumps per window and the faces lost at their cuts (no XML timed).

The held-out crops each finds are measured by ``python -m benchmarks.lever_curves``; the
development images by ``python -m benchmarks.opencv_export``.

Run: ``FACEDETECT_FACES=... FACEDETECT_NEGATIVES=... python -m benchmarks.export_budgets
[--label export_budgets]``
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

from .common import machine, one_core_busy, write_results

BUDGETS = (0.04, 0.03, 0.02, 0.01)


def training_faces(model):
    """The face windows the model's recipe boosted on, cut again from its config."""
    from facedetect.pipeline._config import TrainConfig
    from facedetect.pipeline._plan import plan_training
    from facedetect.pipeline._train import _training_faces
    config = dict(model.document["training"]["config"])
    for key in ("data_sha256", "faces_sha256", "negatives_sha256"):
        config.pop(key, None)
    plan = plan_training(TrainConfig(**config), os.environ.get("FACEDETECT_DATA"))
    base = _training_faces(plan.config, plan.cbcl, plan.faces, plan.train, plan.held)[1]
    return base[0][base[1] == 1]


def face_losses(model, faces, threshold: float, schedules: dict) -> tuple[float, dict]:
    """Share of the faces scoring above ``threshold`` that the model's levels reject:
    checked at every stump, and ``{label: share}`` checked at the cuts only of each of
    ``schedules`` (``{label: cuts}``)."""
    from facedetect.detector._scan import reject_levels
    from facedetect.detector._staging import stage_cuts
    running = model.running_scores(faces)
    above = (running >= reject_levels(model, threshold))[running[:, -1] > threshold]
    soft = np.logical_and.accumulate(above, axis=1)[:, -1]
    staged = {}
    for label, cuts in schedules.items():
        checked = [c - 1 for c in stage_cuts(model.n_stumps, cuts)][:-1]
        staged[label] = round(1 - float(above[:, checked].all(axis=1).mean()), 4)
    return round(1 - float(soft.mean()), 4), staged


def seconds(classifier, greys, repeat: int) -> float:
    """Median over ``repeat`` passes of detectMultiScale's total time on ``greys``."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for grey in greys:
            classifier.detectMultiScale(grey, 1.1, 3)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def level_forms(model, faces, threshold: float) -> tuple[dict, bool]:
    """``{label: model carrying those levels}`` for ``detect``'s levels and each budget,
    and whether the first budget's levels are those the model file records (the faces
    cut again are the run's)."""
    forms = {"detect's levels (--detect-levels)": model}
    for budget in BUDGETS:
        forms[f"learnt at the threshold, {budget:g} budget"] = model.with_rejection(
            faces, threshold=threshold, max_loss=budget)
    recorded = model.detection["opencv"].get("rejection")
    same = recorded is not None and np.array_equal(
        forms[f"learnt at the threshold, {BUDGETS[0]:g} budget"].rejection[1],
        recorded["thresholds"])
    return forms, bool(same)


def training_pictures(count: int) -> list:
    """``count`` of the training negative pictures, drawn with a fixed seed, as grey."""
    from facedetect.data._negatives import find_negatives, negative_files, split_negatives
    from facedetect.images import read_grey
    train, _ = split_negatives(negative_files(find_negatives(
        os.environ.get("FACEDETECT_NEGATIVES"))))
    rng = np.random.default_rng(1)
    return [read_grey(p) for p in rng.choice(train, count, replace=False)]


def markdown(results: dict, faces: int, repeat: int) -> str:
    """The results as the table ``docs/cascades.md`` quotes."""
    lines = [f"# The staged export's rejection budget ({results['model']}, threshold "
             f"{results['threshold']:.2f})\n",
             f"Machine: {results['machine']}. Training data only: {faces} training faces, "
             f"{results['pictures']} training negative pictures ({results['megapixels']} "
             f"Mpx); detectMultiScale(grey, 1.1, 3), median of {repeat}. The faces, cut "
             "again from the model's config, give the levels its file records: "
             f"{'yes' if results['recorded_levels_reproduced'] else 'NO'}.\n",
             "| stage levels | faces lost, every stump | faces lost, at the cuts | stumps per "
             "window | time / alt2's | one core busy |", "|---|---|---|---|---|---|"]
    for label, row in results["forms"].items():
        lines.append(f"| {label} | {row['face_loss_soft']:.4f} | "
                     f"{row['face_loss_staged']:.4f} | {row['stumps_per_window']:.2f} | "
                     f"{row['time_vs_alt2']:.2f}x | {row['time_vs_alt2_busy']:.2f}x |")
    lines += ["", "Other cut layouts at the same levels (stumps per window; faces lost at "
              "the cuts):\n", "| stage levels | " + " | ".join(
                  next(iter(results["forms"].values()))["layouts"]) + " |",
              "|---" * (1 + len(next(iter(results["forms"].values()))["layouts"])) + "|"]
    for label, row in results["forms"].items():
        lines.append(f"| {label} | " + " | ".join(
            f"{cell['stumps_per_window']:.2f}; {cell['face_loss_staged']:.4f}"
            for cell in row["layouts"].values()) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="haar")
    parser.add_argument("--pictures", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--label", default="export_budgets")
    args = parser.parse_args(argv)
    import facedetect
    from facedetect.detector._export import export_opencv
    from facedetect.detector._staging import staged_model

    from .opencv_export import SCHEDULES, SHIPPED, stumps_per_window
    model = facedetect.load_model(args.model)
    point = model.detection["opencv"]
    threshold = float(point["threshold"])
    faces = training_faces(model)
    forms, same = level_forms(model, faces, threshold)
    greys = training_pictures(args.pictures)
    folder = Path(tempfile.mkdtemp())
    classifiers = {"OpenCV alt2": cv2.CascadeClassifier(
        cv2.data.haarcascades + "haarcascade_frontalface_alt2.xml")}
    results = {"machine": machine(), "model": args.model, "threshold": threshold,
               "pictures": args.pictures,
               "megapixels": round(sum(g.size for g in greys) / 1e6, 2),
               "recorded_levels_reproduced": same, "forms": {}}
    for k, (label, levelled) in enumerate(forms.items()):
        path = export_opencv(staged_model(levelled, threshold, point["cuts"]),
                             folder / f"form{k}.xml", threshold)
        classifiers[label] = cv2.CascadeClassifier(str(path))
        soft, staged = face_losses(levelled, faces, threshold, SCHEDULES)
        work = stumps_per_window(levelled, threshold)
        results["forms"][label] = {
            "face_loss_soft": soft, "face_loss_staged": staged[SHIPPED],
            "stumps_per_window": work[SHIPPED],
            # other cut layouts at the same levels: work and faces lost, no XML timed
            "layouts": {s: {"stumps_per_window": work[s], "face_loss_staged": staged[s]}
                        for s in SCHEDULES}}
        print(label, results["forms"][label], flush=True)
    idle = {label: seconds(c, greys, args.repeat) for label, c in classifiers.items()}
    with one_core_busy():
        busy = {label: seconds(c, greys, args.repeat) for label, c in classifiers.items()}
    for label in forms:
        results["forms"][label].update(
            time_vs_alt2=round(idle[label] / idle["OpenCV alt2"], 3),
            time_vs_alt2_busy=round(busy[label] / busy["OpenCV alt2"], 3))
    results["alt2_seconds"] = {"idle": round(idle["OpenCV alt2"], 3),
                               "busy": round(busy["OpenCV alt2"], 3)}
    write_results(args.label, results, markdown(results, len(faces), args.repeat))
    return results


if __name__ == "__main__":
    main()
