"""Propose and verify (issue 54): does a model's verifier find more held-out faces at the
same false-alarm rate than its one-stage model?

Run, on a model ``train-verifier`` wrote (the faces and the negatives found as
``train-detector`` finds them)::

    FACEDETECT_FACES=../shared/datasets/faces \
    FACEDETECT_NEGATIVES=../shared/datasets/negatives \
    python -m benchmarks.verifier --model data/models/verified.json --label verifier_model

- **Propose.** The model's proposer (the one-stage model at its verifier's proposer
  threshold, with the soft rejection learnt there), grouped as ``detect`` groups.
- **Verify.** The model's verifier on the patch around each group
  (:mod:`facedetect.detector._verifier`). A group's score is the proposer's plus
  ``weight`` times the verifier's; at each target the weight is chosen on the
  calibration faces and the threshold on the calibration pictures, as ``train-verifier``
  chooses them at the model's own target.
- **Compare.** At each false-alarm target, the one-stage model's threshold and the
  two-stage score's are each chosen on the calibration pictures (never the held-out
  fifth); the held-out crops (MTFL and Caltech pooled, and all sources) and the held-out
  face-free pictures measure both. ``detect`` itself, with and without the verifier, is
  timed beside OpenCV's default cascade.
"""

from __future__ import annotations

import argparse
import time

import cv2
import numpy as np

import facedetect
from facedetect.data._wild_faces import calibration_mask, heldout_mask
from facedetect.detector import Detector
from facedetect.detector._multiscale import group_detections
from facedetect.images import read_picture
from facedetect.pipeline import crop_recall
from facedetect.pipeline._bootstrap import NegativeSet
from facedetect.pipeline._verifier import lowest_meeting

from .common import machine, peak_rss_gib, write_results
from .heldout_sets import COMPARED, pooled

TARGETS = (0.1, 0.167, 0.25, 0.5)
MIN_NEIGHBORS = 2   # detect's grouping
ONE_STAGE_STEP = 0.25   # the one-stage thresholds' grid


class Proposals:
    """The proposer's raw windows and groups on pictures or crops, scored by a verifier."""

    def __init__(self, detector: Detector, threshold: float):
        self.detector, self.threshold = detector, threshold
        detection = detector.model.detection
        self.box_scale, self.box_shift = detection["box_scale"], detection["box_shift"]

    def raw(self, grey: np.ndarray):
        rects, scores, _ = self.detector.raw_windows(grey)
        return rects, scores

    def groups(self, raw, threshold: float | None = None):
        windows, best, _ = group_detections(*raw, self.threshold if threshold is None
                                            else threshold, MIN_NEIGHBORS)
        return windows.reshape(-1, 4), best

    def boxes(self, windows: np.ndarray) -> np.ndarray:
        """Face boxes of windows, as the model file maps them."""
        w = np.asarray(windows, float).reshape(-1, 4)
        side = w[:, 2] * self.box_scale
        cx = w[:, 0] + w[:, 2] / 2
        cy = w[:, 1] + w[:, 3] / 2 + self.box_shift * w[:, 3]
        return np.stack([cx - side / 2, cy - side / 2, side, side], axis=1)


def scored(proposals: Proposals, verifier, items) -> list:
    """``(raw, windows, proposer best, verifier score)`` of each grey picture or crop."""
    out = []
    for grey in items:
        raw = proposals.raw(grey)
        windows, best = proposals.groups(raw)
        out.append((raw, windows, best, verifier.scores(grey, windows)))
    return out


def one_stage(proposals: Proposals, items, threshold: float) -> list:
    """The one-stage model's groups at ``threshold`` (regrouped from the raw windows)."""
    return [proposals.groups(raw, threshold)[0] for raw, _, _, _ in items]


def two_stage(items, lam: float, threshold: float) -> list:
    """The groups whose proposer score plus ``lam`` times the verifier's passes."""
    return [windows[best + lam * score > threshold] for _, windows, best, score in items]


def per_megapixel(kept: list, megapixels: float) -> float:
    return sum(len(k) for k in kept) / megapixels


def recall(proposals: Proposals, faces, kept: list) -> dict:
    found = iter(kept)
    result = crop_recall(lambda crop: proposals.boxes(next(found)), faces)
    return {"compared": pooled(result.by_source, COMPARED),
            "all": pooled(result.by_source, list(result.by_source))}


def one_stage_rates(proposals: Proposals, pictures: list, megapixels: float, knobs):
    return np.array([per_megapixel(one_stage(proposals, pictures, k), megapixels)
                     for k in knobs])


def two_stage_point(sets: dict, lam: float, target: float) -> float:
    """The lowest two-stage threshold meeting ``target`` on the calibration pictures: a
    group passes when its score is above the threshold, so the candidates are the groups'
    scores and one just below the lowest (every group kept)."""
    values = np.concatenate([b + lam * s for _, _, b, s in sets["calibration_pictures"]])
    if not len(values):
        return 0.0
    knobs = np.unique(values)   # the rate changes only at a group's score
    knobs = np.r_[np.nextafter(knobs[0], -np.inf), knobs]
    counts = len(values) - np.searchsorted(np.sort(values), knobs, side="right")
    return float(knobs[lowest_meeting(counts / sets["calibration_mpx"], target)])


def compare(proposals: Proposals, sets: dict, faces: dict, weights) -> list[dict]:
    """Each target's one-stage and two-stage points on the calibration sets, measured on
    the held-out ones. The one-stage thresholds are a grid of ``ONE_STAGE_STEP`` (each a
    regrouping of every picture), the two-stage ones every group's score."""
    knobs = np.arange(proposals.threshold, proposals.threshold + 30.0, ONE_STAGE_STEP)
    calibration_rates = one_stage_rates(proposals, sets["calibration_pictures"],
                                        sets["calibration_mpx"], knobs)
    rows = []
    for target in TARGETS:
        t1 = float(knobs[lowest_meeting(calibration_rates, target)])
        if calibration_rates[-1] > target:
            print(f"warning: no one-stage threshold up to {knobs[-1]:g} meets {target:g}")
        single = {"threshold": t1, "heldout_fa_per_mpx": round(per_megapixel(
                      one_stage(proposals, sets["heldout_pictures"], t1),
                      sets["heldout_mpx"]), 3),
                  "recall": recall(proposals, faces["heldout"],
                                   one_stage(proposals, sets["heldout_crops"], t1))}
        chosen = None
        for lam in weights:   # chosen on the calibration faces, at the calibration point
            t2 = two_stage_point(sets, lam, target)
            found = recall(proposals, faces["calibration"],
                           two_stage(sets["calibration_crops"], lam, t2))["compared"]
            if chosen is None or found > chosen[0]:
                chosen = (found, lam, t2)
        found, lam, t2 = chosen
        double = {"lambda": lam, "threshold": round(t2, 4), "calibration_recall": found,
                  "heldout_fa_per_mpx": round(per_megapixel(
                      two_stage(sets["heldout_pictures"], lam, t2), sets["heldout_mpx"]), 3),
                  "recall": recall(proposals, faces["heldout"],
                                   two_stage(sets["heldout_crops"], lam, t2))}
        rows.append({"target": target, "one_stage": single, "two_stage": double})
        print(rows[-1], flush=True)
    return rows


def speed(model, repeat: int) -> dict:
    """Seconds per megapixel of ``detect`` with the model's verifier and without (its
    one-stage model at its own operating point), and of OpenCV's default cascade, on the
    speed benchmark's photographs."""
    from .detect_speed import seconds_per_mpx
    from .peer_detectors import opencv_cascade
    verified, alone = Detector(model), Detector(model, verifier=False)
    opencv = opencv_cascade(cv2.data.haarcascades + "haarcascade_frontalface_default.xml",
                            "opencv")
    detectors = {"detect": lambda g: alone.find(g), "verified": lambda g: verified.find(g),
                 "opencv": opencv.boxes}
    return {"idle": seconds_per_mpx(detectors, repeat),
            "one_core_busy": seconds_per_mpx(detectors, repeat, busy=True)}


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a model train-verifier wrote")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--label", default="verifier_model")
    return parser


def main(argv=None) -> dict:
    from .common import wild_data
    args = parser().parse_args(argv)
    phases, start = {}, time.perf_counter()

    def phase(name):
        phases[name] = round(time.perf_counter() - start - sum(phases.values()), 1)
    model = facedetect.load_model(args.model)
    verifier = model.verifier
    if verifier is None:
        raise SystemExit(f"{args.model} has no verifier: train one with train-verifier")
    record = model.document["verifier"]["training"]
    proposer = Detector(verifier.proposer(model), verifier=False, max_pixels=None)
    proposals = Proposals(proposer, verifier.proposer_threshold)
    faces, heldout_pictures = wild_data(None)
    negatives = NegativeSet.find(None)
    held, calibrating = heldout_mask(faces.groups), calibration_mask(faces.groups)
    split = {"heldout": faces.subset(held), "calibration": faces.subset(calibrating)}
    sets = {"heldout_crops": scored(proposals, verifier, split["heldout"].crops),
            "calibration_crops": scored(proposals, verifier, split["calibration"].crops)}
    for name, paths in (("calibration", negatives.calibration), ("heldout", heldout_pictures)):
        greys = [g for g in map(read_picture, paths) if g is not None]
        sets[f"{name}_pictures"] = scored(proposals, verifier, greys)
        sets[f"{name}_mpx"] = sum(g.size for g in greys) / 1e6
    phase("scoring")
    ceiling = recall(proposals, split["heldout"], [w for _, w, _, _ in sets["heldout_crops"]])
    rows = compare(proposals, sets, split, record["config"]["weights"])
    shipped = {"weight": verifier.weight, "threshold": verifier.threshold,
               "heldout_fa_per_mpx": round(per_megapixel(
                   two_stage(sets["heldout_pictures"], verifier.weight, verifier.threshold),
                   sets["heldout_mpx"]), 3),
               "recall": recall(proposals, split["heldout"], two_stage(
                   sets["heldout_crops"], verifier.weight, verifier.threshold))}
    phase("comparison")
    results = {"machine": machine(), "model": args.model, "sha256": model.document["sha256"],
               "verifier": {k: record[k] for k in ("positives", "negatives",
                                                    "target_false_alarms_per_megapixel")},
               "settings": record["config"], "stumps": verifier.model.n_stumps,
               "phases_s": phases, "proposer_heldout_recall": ceiling,
               "proposer_heldout_fa_per_mpx": round(per_megapixel(
                   [w for _, w, _, _ in sets["heldout_pictures"]], sets["heldout_mpx"]), 3),
               "rows": rows, "shipped_point": shipped,
               "seconds_per_mpx": speed(model, args.repeat), "peak_rss_gib": peak_rss_gib()}
    write_results(args.label, results, markdown(results, args.label))
    return results


def markdown(results: dict, label: str) -> str:
    s, shipped = results["settings"], results["shipped_point"]
    ceiling = results["proposer_heldout_recall"]["compared"]
    lines = [f"# Propose and verify: `python -m benchmarks.verifier --model "
             f"{results['model']} --label {label}`", "",
             f"Machine: {results['machine']}. Proposer: the one-stage model at "
             f"{s['propose_at']:g} (held-out crops {ceiling:.3f}"
             f" MTFL+Caltech, {results['proposer_heldout_fa_per_mpx']:g} groups per Mpx of the "
             f"held-out pictures); verifier: {results['stumps']} stumps on "
             f"{s['size']}x{s['size']} patches {s['context']:g}x the window, "
             f"{results['verifier']['positives']:,} positives, "
             f"{results['verifier']['negatives']:,} negatives mined at {s['mine_at']:g}.", "",
             f"The model's own point (weight {shipped['weight']:g}, threshold "
             f"{shipped['threshold']:.2f}, chosen by train-verifier at "
             f"{results['verifier']['target_false_alarms_per_megapixel']:g} FA/Mpx of the "
             f"calibration pictures): held-out crops {shipped['recall']['compared']:.3f} "
             f"MTFL+Caltech / {shipped['recall']['all']:.3f} all, "
             f"{shipped['heldout_fa_per_mpx']:g} FA/Mpx of the held-out pictures.", "",
             "| target FA/Mpx (calibration) | one stage: threshold | held-out FA/Mpx | crops "
             "(MTFL+Caltech / all) | two stage: weight, threshold | held-out FA/Mpx | crops "
             "(MTFL+Caltech / all) |", "|---|---|---|---|---|---|---|"]
    for row in results["rows"]:
        one, two = row["one_stage"], row["two_stage"]
        lines.append(f"| {row['target']:g} | {one['threshold']:g} | {one['heldout_fa_per_mpx']:g}"
                     f" | {one['recall']['compared']:.3f} / {one['recall']['all']:.3f} | "
                     f"{two['lambda']:g}, {two['threshold']:.2f} | {two['heldout_fa_per_mpx']:g} | "
                     f"{two['recall']['compared']:.3f} / {two['recall']['all']:.3f} |")
    speed = results["seconds_per_mpx"]
    lines += ["", "Seconds per megapixel of detect (the speed benchmark's photographs): " +
              "; ".join(f"{mode}: " + ", ".join(f"{k} {v:.3f}" for k, v in times.items())
                        for mode, times in speed.items()), "",
              "Phases (s): " + ", ".join(f"{k} {v:g}" for k, v in results["phases_s"].items())
              + f"; peak RSS {results['peak_rss_gib']:.2f} GiB.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
