"""``evaluate-detector MODEL`` (also ``facedetect evaluate``): held-out FN/FP/CE/NEC and ROC."""

from __future__ import annotations

import argparse
import sys

from ..data import load_cbcl
from ..detector.model import HaarDetectorModel
from ..training.evaluation import evaluate
from .common import print_json, standalone_main


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="model file from train-detector")
    parser.add_argument("--data", help="CBCL folder or faces.tar.gz (must be the training data)")
    parser.add_argument("--split", choices=("heldout", "train"), default="heldout",
                        help="evaluate on the held-out windows (default) or, explicitly, "
                             "on the training windows")
    parser.add_argument("--threshold", type=float, default=0.0,
                        help="decision threshold: face where the score exceeds it (default 0)")
    parser.add_argument("--roc-points", type=int, default=11, help="operating points to list")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    model = HaarDetectorModel.load(args.model)
    data = load_cbcl(args.data)
    report = evaluate(model, data, args.split, args.threshold, args.roc_points)
    if args.json:
        print_json(report)
        return 0
    if args.split == "train":
        print("warning: training windows, figures are optimistic", file=sys.stderr)
    cp, cn = report["cost"]
    print(f"{args.model}: {report['n_stumps']} stumps, cost {cp:g},{cn:g}, "
          f"{args.split} split, threshold {args.threshold:g}")
    print(f"  faces {report['n_positive']:5d}   missed (FN) {report['false_negatives']:4d}   "
          f"FN rate {report['false_negative_rate']:.4f}")
    print(f"  non-faces {report['n_negative']:5d}   false alarms (FP) "
          f"{report['false_positives']:4d}   FP rate {report['false_positive_rate']:.4f}")
    print(f"  classification error {report['classification_error']:.4f}   "
          f"NEC at cost {report['nec_at_cost']:.4f} (PCF {report['pcf_at_cost']:.3f})   "
          f"NEC at priors {report['nec_at_priors']:.4f}")
    print("  ROC operating points (threshold: FN rate, FP rate):")
    for point in report["roc"]:
        print(f"    {point['threshold']:+9.3f}: {point['false_negative_rate']:.4f}, "
              f"{point['false_positive_rate']:.4f}")
    return 0


def add_parser(subparsers) -> None:
    configure(subparsers.add_parser("evaluate", help="held-out FN/FP of a model "
                                                     "(evaluate-detector)"))


def main(argv=None) -> int:
    return standalone_main("evaluate-detector", "Evaluate a detector on its held-out CBCL split.", configure, argv)


if __name__ == "__main__":
    sys.exit(main())
