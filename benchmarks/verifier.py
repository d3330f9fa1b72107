"""Propose and verify (issue 54): does a second boosted look at the proposer's groups
find more held-out faces at the same false-alarm rate than the one-stage model?

Run (the faces, the negatives and CBCL's data found as ``train-detector`` finds them)::

    FACEDETECT_FACES=../shared/datasets/faces \
    FACEDETECT_NEGATIVES=../shared/datasets/negatives \
    FACEDETECT_DATA=../shared/datasets/cbcl \
    python -m benchmarks.verifier --label verifier

- **Propose.** The shipped model at a permissive threshold (``--propose-at``), its soft
  rejection learnt again at that threshold from its own training faces (as ``facedetect
  calibrate`` learns it), grouped as ``detect`` groups.
- **Verify.** An AdaBoostDB model (the recipe's cost) of Haar features on a ``--size``
  square cut around each group's window, ``--context`` times its side (more of the head,
  at a finer resolution than the 24x24 window where the face is larger). Positives: the
  proposer's best group holding both eyes on each training crop (its box error kept) and
  its mirror, from the sources whose crops hold the context (MTFL, Caltech); negatives:
  windows the proposer raises at ``--mine-at`` on the mining pictures. A group's score is
  the proposer's plus ``lambda`` times the verifier's, ``lambda`` chosen on the
  calibration faces and pictures.
- **Compare.** At each false-alarm target, the one-stage model's threshold and the
  two-stage score's are each chosen on the calibration pictures (never the held-out
  fifth); the held-out crops (MTFL and Caltech pooled, and all sources) and the held-out
  face-free pictures measure both.
"""

from __future__ import annotations

import argparse
import time

import cv2
import numpy as np

import facedetect
from facedetect.data import load_cbcl
from facedetect.data._wild_faces import calibration_mask, heldout_mask
from facedetect.detector import Detector
from facedetect.detector._calibrate_scan import soft_levels_at
from facedetect.detector._multiscale import group_detections
from facedetect.images import read_grey, read_picture
from facedetect.pipeline import crop_recall
from facedetect.pipeline._bootstrap import NegativeSet
from facedetect.pipeline._recalibrate import training_faces_of

from .common import machine, peak_rss_gib, write_results
from .heldout_sets import COMPARED, pooled

TARGETS = (0.1, 0.167, 0.25, 0.5)
LAMBDAS = (0.5, 1.0, 2.0, 4.0)
ROOMY = ("mtfl", "mtfl-sun2013", "caltech-webfaces")   # crops >= 3 eye distances wide
MIN_NEIGHBORS = 2   # detect's grouping
ONE_STAGE_STEP = 0.25   # the one-stage thresholds' grid


def context_patches(grey: np.ndarray, windows: np.ndarray, context: float,
                    size: int) -> np.ndarray:
    """A ``size`` square cut around each ``(x, y, w, h)`` window, ``context`` times its
    side about its centre (the border reflected where it passes the picture), shrunk by
    area or enlarged bilinearly.

    >>> grey = np.arange(100, dtype=np.uint8).reshape(10, 10)
    >>> bool((context_patches(grey, np.array([[2, 3, 4, 4]]), 1.0, 4)[0]
    ...       == grey[3:7, 2:6]).all())
    True
    """
    out = np.empty((len(windows), size, size), np.uint8)
    for k, (x, y, w, h) in enumerate(np.asarray(windows).reshape(-1, 4)):
        side = int(round(w * context))
        x0, y0 = int(round(x + w / 2 - side / 2)), int(round(y + h / 2 - side / 2))
        pad = max(0, -x0, -y0, x0 + side - grey.shape[1], y0 + side - grey.shape[0])
        padded = (cv2.copyMakeBorder(grey, pad, pad, pad, pad, cv2.BORDER_REFLECT_101)
                  if pad else grey)   # a copy of the picture only where the patch passes it
        region = padded[y0 + pad:y0 + pad + side, x0 + pad:x0 + pad + side]
        out[k] = cv2.resize(region, (size, size), interpolation=cv2.INTER_AREA
                            if side > size else cv2.INTER_LINEAR)
    return out


def holds_eyes(boxes: np.ndarray, eyes) -> np.ndarray:
    """Which boxes hold both eye centres.

    >>> holds_eyes(np.array([[0, 0, 40, 40], [20, 0, 9, 9]]), [12, 15, 28, 15]).tolist()
    [True, False]
    """
    lx, ly, rx, ry = (float(v) for v in eyes)
    x, y, w, h = np.asarray(boxes, float).reshape(-1, 4).T
    return ((x <= min(lx, rx)) & (max(lx, rx) <= x + w)
            & (y <= min(ly, ry)) & (max(ly, ry) <= y + h))


def lowest_meeting(rates: np.ndarray, target: float) -> int:
    """The index of the lowest knob whose rate, and every higher knob's, is at most
    ``target`` (the last where none is): the image operating point's rule.

    >>> lowest_meeting(np.array([3.0, 0.5, 2.0, 0.2, 0.1]), 1.0)
    3
    """
    ok = np.asarray(rates) <= target
    i = len(ok) - 1
    while i > 0 and ok[i - 1] and ok[i]:
        i -= 1
    return i


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


def training_patches(proposals: Proposals, faces, negatives: NegativeSet, mine: Proposals,
                     args) -> tuple[np.ndarray, np.ndarray]:
    roomy = np.isin(faces.sources, ROOMY)
    train = ~heldout_mask(faces.groups) & ~calibration_mask(faces.groups) & roomy
    positives = []
    for k in np.flatnonzero(train):
        windows, best = proposals.groups(proposals.raw(faces.crops[k]))
        good = holds_eyes(proposals.boxes(windows), faces.eyes[k])
        if good.any():
            pick = np.flatnonzero(good)[np.argmax(best[good])]
            patch = context_patches(faces.crops[k], windows[pick:pick + 1], args.context,
                                    args.size)[0]
            positives += [patch, patch[:, ::-1]]
    rng = np.random.default_rng(args.seed)
    found = []
    for path in negatives.mining:
        grey = read_grey(path)
        rects, scores = mine.raw(grey)
        if not len(rects):
            continue
        windows = np.concatenate([mine.groups((rects, scores), float(scores.min()) - 1e-6)[0],
                                  rects.reshape(-1, 4)])
        if len(windows) > args.per_picture:
            windows = windows[np.sort(rng.choice(len(windows), args.per_picture, False))]
        found.append(context_patches(grey, windows, args.context, args.size))
    return np.ascontiguousarray(np.stack(positives)), np.concatenate(found)


def train_verifier(positives: np.ndarray, negatives: np.ndarray, args, cost) -> dict:
    """AdaBoostDB on compact Haar features of the patches (a seeded ``--features``
    subset of the basic pool: the whole pool of a 40x40 window is over a million)."""
    from facedetect.haar import haar_feature_pool
    from facedetect.pipeline._compact import compact_features
    pool = haar_feature_pool(args.size, args.size)
    rng = np.random.default_rng(args.seed)
    if args.features < len(pool):
        pool = pool.subset(np.sort(rng.choice(len(pool), args.features, replace=False)))
    windows = np.concatenate([positives, negatives])
    y = np.r_[np.ones(len(positives), int), np.zeros(len(negatives), int)]
    store = compact_features(windows, pool, args.memory, progress=False)
    estimator = facedetect.AdaBoostDB(args.rounds, cost=cost, random_state=args.seed)
    estimator.fit_binned(store, y)
    used = np.unique(estimator.features_)
    return {"pool": pool.subset(used), "columns": np.searchsorted(used, estimator.features_),
            "thresholds": estimator.thresholds_, "polarities": estimator.polarities_,
            "alphas": estimator.alphas_, "estimator": estimator, "training_pool": pool}


def verifier_scores(verifier: dict, patches: np.ndarray) -> np.ndarray:
    """The verifier's decision on each patch (its stumps on variance-normalised features,
    as training computed them)."""
    from facedetect.haar import feature_matrix
    if not len(patches):
        return np.zeros(0)
    values = feature_matrix(patches, verifier["pool"], progress=False)[:, verifier["columns"]]
    outputs = np.where(values > verifier["thresholds"], verifier["polarities"],
                       -verifier["polarities"])
    return outputs @ verifier["alphas"]


def scored(proposals: Proposals, verifier: dict, items, args) -> list:
    """``(raw, windows, proposer best, verifier score)`` of each grey picture or crop."""
    out = []
    for grey in items:
        raw = proposals.raw(grey)
        windows, best = proposals.groups(raw)
        out.append((raw, windows, best, verifier_scores(
            verifier, context_patches(grey, windows, args.context, args.size))))
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


def compare(proposals: Proposals, sets: dict, faces: dict, args) -> list[dict]:
    """Each target's one-stage and two-stage points on the calibration sets, measured on
    the held-out ones. The one-stage thresholds are a grid of ``ONE_STAGE_STEP`` (each a
    regrouping of every picture), the two-stage ones every group's score."""
    knobs = np.arange(args.propose_at, args.propose_at + 30.0, ONE_STAGE_STEP)
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
        for lam in LAMBDAS:   # chosen on the calibration faces, at the calibration point
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


def speed(proposals: Proposals, verifier: dict, row: dict, args) -> dict:
    """Seconds per megapixel of the shipped ``detect``, the two-stage detector at
    ``row``'s point and OpenCV's default cascade, on the speed benchmark's photographs."""
    from .detect_speed import seconds_per_mpx
    from .peer_detectors import opencv_cascade
    shipped = Detector("default")
    lam, threshold = row["two_stage"]["lambda"], row["two_stage"]["threshold"]

    def verified(grey):
        windows, best = proposals.groups(proposals.raw(grey))
        score = best + lam * verifier_scores(verifier, context_patches(
            grey, windows, args.context, args.size))
        return windows[score > threshold]
    opencv = opencv_cascade(cv2.data.haarcascades + "haarcascade_frontalface_default.xml",
                            "opencv")
    detectors = {"detect": lambda g: shipped.detect(g), "two-stage": verified,
                 "opencv": opencv.boxes}
    return {"idle": seconds_per_mpx(detectors, args.repeat),
            "one_core_busy": seconds_per_mpx(detectors, args.repeat, busy=True)}


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--propose-at", type=float, default=15.0)
    parser.add_argument("--mine-at", type=float, default=8.0)
    parser.add_argument("--context", type=float, default=1.4)
    parser.add_argument("--size", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=600)
    parser.add_argument("--features", type=int, default=40000)
    parser.add_argument("--per-picture", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--memory", type=int, default=8 * 2**30)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--label", default="verifier")
    return parser


def _proposer(model, train_faces, threshold: float) -> Proposals:
    levelled = soft_levels_at(model, train_faces, threshold)   # as calibrate learns them
    return Proposals(Detector(levelled, max_pixels=None, threshold=threshold), threshold)


def main(argv=None) -> dict:
    from .common import wild_data
    args = parser().parse_args(argv)
    phases, start = {}, time.perf_counter()

    def phase(name):
        phases[name] = round(time.perf_counter() - start - sum(phases.values()), 1)
    model = facedetect.load_model("default")
    faces, heldout_pictures = wild_data(None)
    negatives = NegativeSet.find(None)
    train_faces = training_faces_of(model, load_cbcl(None), faces)[1]
    proposals = _proposer(model, train_faces, args.propose_at)
    mine = _proposer(model, train_faces, args.mine_at)
    phase("proposers")
    positives, found = training_patches(proposals, faces, negatives, mine, args)
    phase("training patches")
    verifier = train_verifier(positives, found, args, model.document["cost"])
    phase("verifier training")
    held, calibrating = heldout_mask(faces.groups), calibration_mask(faces.groups)
    split = {"heldout": faces.subset(held), "calibration": faces.subset(calibrating)}
    sets = {"heldout_crops": scored(proposals, verifier, split["heldout"].crops, args),
            "calibration_crops": scored(proposals, verifier, split["calibration"].crops, args)}
    for name, paths in (("calibration", negatives.calibration), ("heldout", heldout_pictures)):
        greys = [g for g in map(read_picture, paths) if g is not None]
        sets[f"{name}_pictures"] = scored(proposals, verifier, greys, args)
        sets[f"{name}_mpx"] = sum(g.size for g in greys) / 1e6
    phase("scoring")
    ceiling = recall(proposals, split["heldout"], [w for _, w, _, _ in sets["heldout_crops"]])
    rows = compare(proposals, sets, split, args)
    phase("comparison")
    results = {"machine": machine(), "settings": vars(args), "phases_s": phases,
               "verifier": {"positives": len(positives), "negatives": len(found),
                            "stumps": len(verifier["alphas"]),
                            "features_used": len(verifier["pool"])},
               "proposer_heldout_recall": ceiling,
               "proposer_heldout_fa_per_mpx": round(per_megapixel(
                   [w for _, w, _, _ in sets["heldout_pictures"]], sets["heldout_mpx"]), 3),
               "rows": rows,
               "seconds_per_mpx": speed(proposals, verifier,
                                        next(r for r in rows if r["target"] == 0.25), args),
               "peak_rss_gib": peak_rss_gib()}
    write_results(args.label, results, markdown(results, args.label))
    return results


def markdown(results: dict, label: str) -> str:
    s = results["settings"]
    ceiling = results["proposer_heldout_recall"]["compared"]
    lines = [f"# Propose and verify: `python -m benchmarks.verifier --label {label}`", "",
             f"Machine: {results['machine']}. Proposer: the shipped model at "
             f"{s['propose_at']:g} (held-out crops {ceiling:.3f}"
             f" MTFL+Caltech, {results['proposer_heldout_fa_per_mpx']:g} groups per Mpx of the "
             f"held-out pictures); verifier: {results['verifier']['stumps']} stumps on "
             f"{s['size']}x{s['size']} patches {s['context']:g}x the window, "
             f"{results['verifier']['positives']:,} positives, "
             f"{results['verifier']['negatives']:,} negatives mined at {s['mine_at']:g}.", "",
             "| target FA/Mpx (calibration) | one stage: threshold | held-out FA/Mpx | crops "
             "(MTFL+Caltech / all) | two stage: lambda, threshold | held-out FA/Mpx | crops "
             "(MTFL+Caltech / all) |", "|---|---|---|---|---|---|---|"]
    for row in results["rows"]:
        one, two = row["one_stage"], row["two_stage"]
        lines.append(f"| {row['target']:g} | {one['threshold']:g} | {one['heldout_fa_per_mpx']:g}"
                     f" | {one['recall']['compared']:.3f} / {one['recall']['all']:.3f} | "
                     f"{two['lambda']:g}, {two['threshold']:.2f} | {two['heldout_fa_per_mpx']:g} | "
                     f"{two['recall']['compared']:.3f} / {two['recall']['all']:.3f} |")
    speed = results["seconds_per_mpx"]
    lines += ["", "Seconds per megapixel (the speed benchmark's photographs): " + "; ".join(
        f"{mode}: " + ", ".join(f"{k} {v:.3f}" for k, v in times.items())
        for mode, times in speed.items()), "",
        "Phases (s): " + ", ".join(f"{k} {v:g}" for k, v in results["phases_s"].items()) +
        f"; peak RSS {results['peak_rss_gib']:.2f} GiB.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
