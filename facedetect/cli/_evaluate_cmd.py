"""``evaluate-detector MODEL`` (also ``facedetect evaluate``): held-out FN/FP/CE/NEC and ROC."""

from __future__ import annotations

import argparse
import sys

from ..errors import FacedetectError
from ._common import (bounded_int, describe_operating_point, finite_float, print_json,
                     standalone_main)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="model file from train-detector, or a shipped model "
                                      "('default', 'haar')")
    parser.add_argument("--data", help="CBCL folder or faces.tar.gz, the training data "
                                       "(default: $FACEDETECT_DATA, ./data/cbcl, the user "
                                       "cache)")
    parser.add_argument("--split", choices=("heldout", "train"), default="heldout",
                        help="evaluate on the held-out windows (default) or, explicitly, "
                             "on the training windows")
    parser.add_argument("--threshold", type=finite_float, default=None,
                        help="decision threshold: face where the score exceeds it (default: "
                             "the model's operating point; 0 is the raw boosted decision)")
    parser.add_argument("--roc-points", type=bounded_int(2, 1000), default=11,
                        help="score quantiles to list as thresholds, 2..1000 (default 11); "
                             "the list adds 'accept every window' and the raw 0, so it "
                             "holds up to N+2 points")
    parser.add_argument("--faces", metavar="DIR",
                        help="faces from the wild (a folder with faces.csv): recall on their "
                             "fixed held-out part too (default: $FACEDETECT_FACES, "
                             "./data/faces, the user cache; skipped when none is found)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..data import load_cbcl
    from ..data._cbcl import FRAMING
    from ..data._wild_faces import find_faces_folder, load_wild_faces
    from ..detector._api import load_model
    from ..pipeline._heldout import evaluate
    from ..pipeline._wild import evaluate_wild_faces
    model = load_model(args.model)
    data = load_cbcl(args.data)
    report = evaluate(model, data, args.split, args.threshold, args.roc_points)
    folder = find_faces_folder(args.faces)
    if folder is not None:
        def warn(line):
            print(f"evaluate-detector: {line}", file=sys.stderr)

        try:
            report["wild_faces"] = evaluate_wild_faces(
                model, load_wild_faces(folder, warn, progress=True))
        except FacedetectError as error:
            if args.faces:     # asked for: refused; found on its own: skipped, said once
                raise
            warn(f"warning: held-out faces from the wild skipped: {error}")
    if args.json:
        print_json(report)
        return 0
    if args.split == "train":
        print("warning: training windows, figures are optimistic", file=sys.stderr)
    cp, cn = report["cost"]
    point = report["operating_point"]
    print(f"{args.model}: {report['n_stumps']} stumps, cost {cp:g},{cn:g}, "
          f"{model.window[0]}x{model.window[1]} windows")
    print(f"CBCL's {args.split} split ({_split_words(args.split)}), each window cut at "
          f"the model's framing ({model.framing:g} eye distances):")
    if model.framing > FRAMING:
        print(f"  CBCL's faces span {FRAMING:g} eye distances, tighter than this window: the "
              "model never trained on faces cut so, and the faces missed here are not its "
              "recall (the faces from the wild below are); the false alarms are its own")
    if model.stages:
        print(f"  a cascade of {len(model.stages)} stages; a window passes a stage when its "
              "sum is above the stage's threshold; the thresholds below are the last stage's")
    else:
        print("  " + describe_operating_point(point))
    rows = [(f"threshold {report['threshold']:+.4f} ({report['threshold_source']})", report)]
    if report["threshold"] != 0:
        rows.append(("raw threshold 0", report["raw"]))
    elif point is not None:
        rows.append((f"operating point {point['threshold']:+.4f}", report["at_operating_point"]))
    print(f"  faces {report['n_positive']}, non-faces {report['n_negative']}")
    for label, rates in rows:
        print(f"  {label}:")
        print(f"    missed (FN) {rates['false_negatives']:4d}   FN rate "
              f"{rates['false_negative_rate']:.4f}   false alarms (FP) "
              f"{rates['false_positives']:4d}   FP rate {rates['false_positive_rate']:.4f}")
        print(f"    classification error {rates['classification_error']:.4f}   NEC at cost "
              f"{rates['nec_at_cost']:.4f} (PCF {rates['pcf_at_cost']:.3f})")
    print("  ROC operating points (threshold: FN rate, FP rate):")
    for point in report["roc"]:
        print(f"    {point['threshold']:+9.3f}: {point['false_negative_rate']:.4f}, "
              f"{point['false_positive_rate']:.4f}")
    if "wild_faces" in report:
        _print_wild(report["wild_faces"], folder)
    return 0


def _split_words(split: str) -> str:
    """What a CBCL split is, in words."""
    return {"heldout": "never trained on", "train": "trained on: optimistic"}[split]


def _print_wild(wild: dict, folder) -> None:
    print(f"held-out faces from the wild ({folder}): {wild['faces']} faces never trained on, "
          "cut as the model was trained to see them")
    print(f"  windows found at the window operating point {wild['window_threshold']:+.4f}: "
          f"{wild['window_recall']:.4f}; at detect's threshold {wild['image_threshold']:+.4f}:"
          f" {wild['window_recall_at_image_threshold']:.4f}")
    print("  whole crops, detect at the model's own settings (faces found; a box holds both "
          f"eyes, at most {wild['crop_box_max_eye_distances']:.2f} eye distances wide):")
    for source, row in wild["crops"].items():
        print(f"    {source or '(no source)':20s} {row['recall']:.4f} of {row['faces']}")


def add_parser(subparsers) -> None:
    configure(subparsers.add_parser("evaluate", aliases=["evaluate-detector"],
                                    help="held-out FN/FP of a model"))


def main(argv=None) -> int:
    return standalone_main("evaluate-detector", "Evaluate a detector on its held-out CBCL split.",
                           configure, argv)


if __name__ == "__main__":
    sys.exit(main())
