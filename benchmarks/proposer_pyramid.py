"""A cheaper proposer: the shipped default's verifier kept, its proposer's pyramid step
varied, each measured on the calibration data only (the calibration crops and pictures;
never the held-out ones or the development images).

For each step: the proposer's CPU seconds per megapixel of the calibration pictures (its
scan and the verifier's patches), proposals per megapixel, and at 0.1, 0.25 and 0.5 false
alarms per megapixel of those pictures the weight and share of calibration crops that the
verifier's operating-point rule chooses (``pipeline._verifier.choose_operating_point``).
The verifier is the one the shipped default carries (``proposer_pyramid.md`` measured the
one trained on step 1.1's proposals, before the default moved to step 1.25).

    python -m benchmarks.proposer_pyramid --steps 1.1,1.15,1.2,1.25,1.3
    python -m benchmarks.proposer_pyramid --model FILE --steps 1.25 --label NAME
    python -m benchmarks.proposer_pyramid --steps 1.25 --thresholds 15,12,10,8,6

``--thresholds`` varies the proposer's threshold instead (the verifier and the proposer's
soft rejection stay the model's, so it measures what proposing more would find before a
verifier is trained for it).
"""

from __future__ import annotations

import argparse
import time

from .common import machine, write_results

TARGETS = (0.1, 0.25, 0.5)


def measure(model, step: float, faces, greys, threshold: float | None = None) -> dict:
    """One row: the proposer at pyramid ``step`` and at ``threshold`` (None: the model's
    proposer threshold; its soft rejection stays the one learnt at the model's)."""
    from facedetect.detector._api import Detector
    verifier = model.verifier
    threshold = verifier.proposer_threshold if threshold is None else threshold
    proposer = Detector(verifier.proposer(model.one_stage()), max_pixels=None,
                        verifier=False, threshold=threshold, scale_factor=step)
    return {"step": step, "threshold": threshold,
            **measure_proposer(model, proposer, faces, greys)}


def measure_proposer(model, proposer, faces, greys) -> dict:
    """The proposer's CPU seconds and proposals per megapixel of ``greys`` and, at each
    of ``TARGETS``, the verifier's operating point chosen on ``faces`` and ``greys``."""
    from facedetect.pipeline._verifier import _proposed, choose_operating_point
    verifier = model.verifier
    quiet = lambda items, what: items   # noqa: E731
    start = time.process_time()
    scanned = _proposed(proposer, verifier, greys, quiet, "pictures")
    cpu = time.process_time() - start
    megapixels = sum(m for *_, m in scanned)
    crops = _proposed(proposer, verifier, faces.crops, quiet, "crops")
    points = {str(target): choose_operating_point(faces, crops, scanned, verifier_weights(
        model), target) for target in TARGETS}
    return {"cpu_s_per_mpx": round(cpu / megapixels, 4),
            "proposals_per_mpx": round(sum(len(b) for b, *_ in scanned) / megapixels, 2),
            "points": points}


def points_header(first: str) -> list[str]:
    """A results table's header: ``first`` columns, then one per target of ``TARGETS``."""
    columns = first.count("|") - 1
    return [first + " " + " | ".join(f"crops at {t} FA/Mpx (weight)" for t in TARGETS)
            + " |", "|---" * (columns + len(TARGETS)) + "|"]


def point_cells(row: dict) -> str:
    """A row's share of crops and weight at each target, as table cells."""
    return " | ".join(f"{row['points'][str(t)]['calibration_recall']:.4f} "
                      f"({row['points'][str(t)]['weight']:g})" for t in TARGETS) + " |"


def verifier_weights(model) -> tuple:
    from facedetect.pipeline._verifier_config import VerifierConfig
    config = (model.document["verifier"].get("training") or {}).get("config") or {}
    return tuple(config.get("weights") or VerifierConfig().weights)


def calibration_data() -> tuple:
    """``(faces from the wild, their calibration part, the calibration pictures' grey
    pixels)``, found as the recipe finds them."""
    from facedetect.cli._calibrate_cmd import _calibration_pictures
    from facedetect.data._wild_faces import (calibration_mask, find_faces_folder,
                                             load_wild_faces)
    from facedetect.images import read_picture
    folder = find_faces_folder(None)
    if folder is None:
        raise SystemExit("set FACEDETECT_FACES to the faces from the wild")
    faces = load_wild_faces(folder, progress=False)
    calibrating = faces.subset(calibration_mask(faces.groups))
    return faces, calibrating, [read_picture(path) for path in _calibration_pictures(None)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="1.1,1.15,1.2,1.25,1.3")
    parser.add_argument("--thresholds", default=None,
                        help="proposer thresholds, each measured at every step "
                             "(default: the model's)")
    parser.add_argument("--label", default="proposer_pyramid")
    parser.add_argument("--model", default="default",
                        help="a verified model (default: the shipped default)")
    args = parser.parse_args()
    from facedetect.detector._api import load_model
    _, calibrating, greys = calibration_data()
    model = load_model(args.model)
    thresholds = ([None] if args.thresholds is None
                  else [float(t) for t in args.thresholds.split(",")])
    rows = [measure(model, float(step), calibrating, greys, threshold)
            for step in args.steps.split(",") for threshold in thresholds]
    lines = [f"# The proposer's pyramid step and threshold ({args.label})", "",
             f"Machine: {machine()}. {args.model}'s verifier, its proposer (rejection learnt "
             f"at threshold {model.verifier.proposer_threshold:g}) at each step and "
             f"threshold; {len(calibrating.crops)} calibration crops, {len(greys)} "
             "calibration pictures. CPU seconds are both cores' (the scan's threads).", "",
             *points_header("| step | threshold | CPU s/Mpx | / first row | proposals/Mpx |")]
    base = rows[0]["cpu_s_per_mpx"]
    for r in rows:
        lines.append(f"| {r['step']:g} | {r['threshold']:g} | {r['cpu_s_per_mpx']:.4f} | "
                     f"{r['cpu_s_per_mpx'] / base:.2f}x | {r['proposals_per_mpx']:.2f} | "
                     + point_cells(r))
    write_results(args.label, {"machine": machine(), "rows": rows}, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
