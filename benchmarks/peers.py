"""Our models beside YuNet, libfacedetection, MTCNN, dlib and OpenCV's cascades, in one run.

Run (needs the ``peers`` extra, ``pip install -e '.[peers]'``)::

    FACEDETECT_FACES=../shared/datasets/faces \
    FACEDETECT_NEGATIVES=../shared/datasets/negatives \
    python -m benchmarks.peers --models default,cascade --label peers

- Development images (MIT+CMU, 44 pictures, 218 faces): the curve of faces found (IoU >=
  0.5, one detection a face) against false positives, each detector's own knob swept
  (OpenCV's ``minNeighbors``, MTCNN's confidence, dlib's score, our threshold), read at
  ``BUDGETS`` false positives. Each peer twice: with its raw boxes, and with one box
  mapping (a scale about the box centre and a downward shift, in box heights) fitted on
  these images to the annotation convention (medians over the faces it finds at its
  shipped setting). Our models keep the mapping their file records (derived from the
  training framing, never fitted here). These images only measure.
- Held-out wild crops (MTFL and Caltech; UTKFace and Yale B apart), clean, with grain and
  posterised, as :mod:`benchmarks.heldout_sets` makes them, each detector at its
  shipped setting.
- Held-out face-free pictures: false alarms per megapixel, clean, grainy and posterised.
- Speed: seconds per megapixel on scikit-image's five photographs (grey), medians of
  ``--repeat``, as a ratio to OpenCV's default cascade, idle and beside a busy loop
  (:func:`benchmarks.detect_speed.seconds_per_mpx`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from facedetect.detector import (evaluation_images, inside_boxes,
                                                  iou_matrix, match, read_annotations)
from facedetect.images import read_grey
from facedetect.pipeline import crop_recall, heldout_faces
from facedetect._utils.threads import wait_passively

from .common import machine, wild_benchmark_parser, wild_data, write_results
from .detect_speed import seconds_per_mpx
from .peer_detectors import Detector, model_options, ours, peers
from .heldout_sets import COMPARED, compared_only, grainy, pooled, posterised

BUDGETS = (2, 5, 10, 20, 50)
FIT_IOU = 0.3   # a detection pairs with a face for the mapping fit at this overlap


def mapped(boxes: np.ndarray, scale: float, shift: float) -> np.ndarray:
    """Boxes scaled by ``scale`` about their centre, moved down ``shift`` box heights.

    >>> mapped(np.array([[10., 10., 20., 20.]]), 1.5, 0.1)
    array([[ 5.,  7., 30., 30.]])
    """
    boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
    cx = boxes[:, 0] + boxes[:, 2] / 2
    cy = boxes[:, 1] + boxes[:, 3] / 2 + shift * boxes[:, 3]
    w, h = boxes[:, 2] * scale, boxes[:, 3] * scale
    return np.stack([cx - w / 2, cy - h / 2, w, h], axis=1)


def fit_mapping(pairs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[float, float, int]:
    """``(scale, shift, faces paired)`` from ``(boxes, truth)`` per image: each annotated
    face paired with its best-overlapping box (IoU >= ``FIT_IOU``), then the median size
    ratio and the median downward offset of the centres, in box heights.

    >>> fit_mapping([(np.array([[0., 0., 10., 10.]]), np.array([[-3., -1., 16., 16.]]))])
    (1.6, 0.2, 1)
    """
    ratios, shifts = [], []
    for boxes, truth in pairs:
        if len(boxes) == 0 or len(truth) == 0:
            continue
        overlap = iou_matrix(truth, boxes)
        for face, best in enumerate(overlap.argmax(axis=1)):
            if overlap[face, best] < FIT_IOU:
                continue
            box, true = boxes[best], truth[face]
            ratios.append(np.sqrt(true[2] * true[3] / (box[2] * box[3])))
            shifts.append((true[1] + true[3] / 2 - box[1] - box[3] / 2) / box[3])
    if not ratios:
        return 1.0, 0.0, 0
    return round(float(np.median(ratios)), 4), round(float(np.median(shifts)), 4), len(ratios)


def dev_curve(detector: Detector, images, mapping=(1.0, 0.0)) -> dict:
    """Faces found and false positives at every knob setting, and TPR at each budget."""
    raws = [detector.scan(grey) for grey, _ in images]
    total = sum(len(truth) for _, truth in images)
    points = []
    for knob in detector.knobs(raws):
        found = fps = 0
        for raw, (_, truth) in zip(raws, images):
            boxes, scores = detector.at(raw, knob)
            hits = match(mapped(boxes, *mapping), scores, truth)
            found, fps = found + hits, fps + len(boxes) - hits
        points.append((float(knob), found, fps))
    at_budget = {str(b): round(max([f for _, f, p in points if p <= b] or [0]) / total, 4)
                 for b in BUDGETS}
    shipped = [(f, p) for k, f, p in points if np.isclose(k, detector.default)]
    if not shipped:
        found = fps = 0
        for raw, (_, truth) in zip(raws, images):
            boxes, scores = detector.at(raw, detector.default)
            hits = match(mapped(boxes, *mapping), scores, truth)
            found, fps = found + hits, fps + len(boxes) - hits
        shipped = [(found, fps)]
    return {"faces": total, "tpr_at_fp": at_budget,
            "shipped": {"tpr": round(shipped[0][0] / total, 4),
                        "false_positives": shipped[0][1]},
            "points": [{"knob": k, "found": f, "false_positives": p} for k, f, p in points]}


def development(detectors, dev: Path) -> dict:
    annotations = read_annotations(dev / "bboxes.txt")
    images = []
    for path, truth in evaluation_images(dev / "images", annotations):
        grey = read_grey(path)
        images.append((grey, inside_boxes(path, truth, grey.shape)))
    results = {}
    for detector in detectors:
        row = {"raw": dev_curve(detector, images)}
        if detector.kind != "ours":
            scale, shift, paired = fit_mapping([(detector.boxes(grey), truth)
                                                for grey, truth in images])
            row["mapping"] = {"scale": scale, "shift": shift, "faces_paired": paired}
            row["mapped"] = dev_curve(detector, images, (scale, shift))
        results[detector.name] = row
        print(detector.name, row["raw"]["tpr_at_fp"], row.get("mapped", {}).get("tpr_at_fp"),
              flush=True)
    return results


def crops(detectors, held) -> dict:
    compared = compared_only(held)
    results = {}
    for detector in detectors:
        results[detector.name] = {
            "clean": crop_recall(detector.boxes, held)._asdict(),
            "grainy": crop_recall(lambda c: detector.boxes(grainy(c)), compared)._asdict(),
            "posterised": crop_recall(lambda c: detector.boxes(posterised(c)),
                                      compared)._asdict()}
        print(detector.name, "crops", pooled(results[detector.name]["clean"]["by_source"],
                                             COMPARED), flush=True)
    return results


def false_alarms(detectors, pictures) -> dict:
    results = {d.name: {} for d in detectors}
    for label, transform in (("clean", None), ("grainy", grainy), ("posterised", posterised)):
        counts, megapixels = {d.name: 0 for d in detectors}, 0.0
        for path in pictures:
            grey = read_grey(path)
            grey = transform(grey) if transform else grey
            megapixels += grey.size / 1e6
            for detector in detectors:
                counts[detector.name] += len(detector.boxes(grey))
        for name, count in counts.items():
            results[name][label] = round(count / megapixels, 3)
        print(label, results, flush=True)
    return results


def main(argv=None) -> dict:
    wait_passively()   # as the detect command does
    parser = wild_benchmark_parser(__doc__.splitlines()[0], "peers", 5)
    parser.add_argument("--peers", default="opencv,yunet,yunet2x,yuface,mtcnn,dlib1,dlib2")
    args = parser.parse_args(argv)
    faces, held_pictures = wild_data(args.faces)
    names = args.models.split(",")
    detectors = [ours(name) for name in names] + peers(args.peers.split(","))
    import facedetect
    held = heldout_faces(facedetect.load_model(model_options(names[0])[0]), faces)
    results = {"machine": machine(), "detectors": [d.name for d in detectors],
               "budgets": BUDGETS,
               "sha256": {n: facedetect.load_model(model_options(n)[0]).document[
                   "sha256"] for n in names}}
    results["dev"] = development(detectors, Path(args.dev))
    results["crops"] = crops(detectors, held)
    results["false_alarms_per_mpx"] = false_alarms(detectors, held_pictures)
    timed = {d.name: d.boxes for d in detectors}
    results["seconds_per_mpx"] = seconds_per_mpx(timed, args.repeat)
    results["seconds_per_mpx_one_core_busy"] = seconds_per_mpx(timed, args.repeat, busy=True)
    from .peers_report import markdown, plot_curves
    plot_curves(results, args.label)
    write_results(args.label, results, markdown(results, args.label))
    return results


if __name__ == "__main__":
    main()
