"""The proposer's soft rejection: the shipped default's verifier kept, the share of
training faces its proposer's learnt rejection may drop varied, each measured on the
calibration data only (the calibration crops and pictures; never the held-out ones or
the development images).

The proposer scans at its threshold with rejection levels learnt from the model's
training faces at that threshold (``detector._pruning.soft_rejection_thresholds``),
within each budget; ``exact`` ignores learnt levels (only exact early rejection). For
each: CPU seconds and proposals per megapixel of the calibration pictures, and at 0.1,
0.25 and 0.5 false alarms per megapixel the weight and share of calibration crops the
verifier's operating-point rule chooses (as ``proposer_pyramid``).

    python -m benchmarks.proposer_rejection --losses 0.04,0.02,0.01,0.005,exact
"""

from __future__ import annotations

import argparse

from .common import machine, write_results
from .proposer_pyramid import calibration_data, measure_proposer, point_cells, points_header


def proposer_at(model, train_faces, loss: str):
    """The shipped proposer (its threshold and step) with rejection learnt within
    ``loss`` of the training faces, or with exact early rejection only."""
    from facedetect.detector._api import Detector
    verifier = model.verifier
    scan_model = verifier.proposer(model.one_stage())
    if loss != "exact":
        scan_model = scan_model.with_rejection(
            train_faces, threshold=verifier.proposer_threshold, max_loss=float(loss))
    return Detector(scan_model, max_pixels=None, verifier=False, exact=loss == "exact",
                    threshold=verifier.proposer_threshold)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--losses", default="0.04,0.02,0.01,0.005,exact")
    parser.add_argument("--label", default="proposer_rejection")
    args = parser.parse_args()
    from facedetect.data._cbcl import load_cbcl
    from facedetect.detector._api import load_model
    from facedetect.pipeline._recalibrate import training_faces_of
    faces, calibrating, greys = calibration_data()
    model = load_model("default")
    train_faces = training_faces_of(model.one_stage(), load_cbcl(None), faces)[1]
    rows = []
    for loss in args.losses.split(","):
        proposer = proposer_at(model, train_faces, loss)
        rejection = ({} if proposer.exact
                     else proposer.scan_model.detection.get("rejection") or {})
        rows.append({"loss": loss, "quantile": rejection.get("quantile"),
                     "training_faces_lost": rejection.get("loss"),
                     **measure_proposer(model, proposer, calibrating, greys)})
        print(rows[-1], flush=True)
    lines = [f"# The proposer's soft rejection ({args.label})", "",
             f"Machine: {machine()}. The shipped default's verifier, its proposer at "
             f"threshold {model.verifier.proposer_threshold:g} and step "
             f"{model.verifier.proposer_scale:g}, its rejection learnt from "
             f"{len(train_faces):,} training faces within each budget (exact: none "
             f"learnt); {len(calibrating.crops)} calibration crops, {len(greys)} "
             "calibration pictures. CPU seconds are both cores' (the scan's threads).", "",
             *points_header("| budget | quantile | training faces lost | CPU s/Mpx | "
                            "proposals/Mpx |")]
    for r in rows:
        lost = "" if r["training_faces_lost"] is None else f"{r['training_faces_lost']:.4f}"
        quantile = "" if r["quantile"] is None else f"{r['quantile']:g}"
        lines.append(f"| {r['loss']} | {quantile} | {lost} | {r['cpu_s_per_mpx']:.4f} | "
                     f"{r['proposals_per_mpx']:.2f} | " + point_cells(r))
    write_results(args.label, {"machine": machine(), "rows": rows}, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
