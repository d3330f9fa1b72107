"""``train-detector`` (also ``facedetect train``): train a detector on the CBCL faces."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from ..atomic import exclusive_output
from ..data import load_cbcl
from ..errors import FacedetectError
from ..training.pipeline import ALGORITHM_CHOICES, TrainConfig, check_config, train_detector
from .common import bounded_int, check_writable, describe_operating_point, parse_cost, probability, standalone_main

DEFAULT_MODEL_DIR = Path("data") / "models"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cost", type=parse_cost, default=(1.0, 1.0), metavar="CP,CN",
                        help="cost of a missed face, then of a false alarm (default 1,1)")
    parser.add_argument("--rounds", type=int, default=200, help="boosting rounds (default 200)")
    parser.add_argument("--algorithm", choices=ALGORITHM_CHOICES, default="db",
                        help="db (AdaBoostDB, default), dbn (no conditional search), "
                             "cs (Cost-Sensitive AdaBoost), adaboost, asym-init")
    parser.add_argument("--selection", choices=("root", "loss"), default="root",
                        help="db/dbn: largest root (paper, default) or smallest loss")
    parser.add_argument("--data", help="CBCL folder or faces.tar.gz")
    parser.add_argument("--holdout", type=float, default=0.25,
                        help="stratified held-out fraction (default 0.25; 0 trains on all)")
    parser.add_argument("--balanced", action="store_true",
                        help="use the class-balanced subset (the paper's CBCL experiment)")
    parser.add_argument("--seed", type=bounded_int(0, 2**32 - 1), default=0,
                        help="split seed, 0..2^32-1 (default 0)")
    parser.add_argument("--mirror", action="store_true",
                        help="also train on every training face flipped left to right")
    parser.add_argument("--jitter", type=bounded_int(0, 1000), default=0, metavar="N",
                        help="also train on N slightly turned, scaled and shifted copies of "
                             "every training face (default 0)")
    parser.add_argument("--calibration-split", type=float, default=0.2, metavar="F",
                        help="fraction of the training part kept from boosting to choose the "
                             "cost-aware operating point (default 0.2; 0 keeps the raw "
                             "threshold 0)")
    parser.add_argument("--prior", type=probability, metavar="P",
                        help="deployment probability of a face, in (0, 1), for the operating "
                             "point (default: the training data's)")
    parser.add_argument("--calibration", choices=("sigmoid", "isotonic"), default="sigmoid",
                        help="calibration map fitted on the calibration split, stored for "
                             "predict_proba: sigmoid (Platt, default) or isotonic")
    parser.add_argument("--threshold-rule", choices=("calibrated", "empirical"),
                        default="calibrated",
                        help="calibrated (default): where the calibrated probability crosses "
                             "the Bayes cut Cn/(Cp+Cn); empirical: the least expected cost "
                             "counted on the calibration windows")
    parser.add_argument("--calibrated", action="store_const", const="calibrated",
                        dest="threshold_rule",
                        help="the same as --threshold-rule calibrated (the default); with "
                             "--algorithm adaboost this is calibrated AdaMEC")
    parser.add_argument("--out", help="model file (default data/models/detector_CP_CN.json)")
    parser.add_argument("--checkpoint-every", type=int, default=10, metavar="N",
                        help="write a checkpoint every N rounds (default 10)")
    parser.add_argument("--resume", action="store_true",
                        help="continue an interrupted run from its checkpoint")
    parser.add_argument("--negatives", metavar="DIR",
                        help="face-free images for hard-negative bootstrapping (default: "
                             "scikit-image's bundled face-free pictures)")
    parser.add_argument("--bootstrap-rounds", type=int, default=0, metavar="K",
                        help="retrain K times, adding the false positives found on the "
                             "negatives (default 0)")
    parser.add_argument("--bootstrap-limit", type=int, default=2000,
                        help="hard negatives added per bootstrap round at most (default 2000)")
    parser.add_argument("--bootstrap-threshold", type=float, default=0.0, metavar="T",
                        help="harvest the windows scoring above T (default 0, the windows "
                             "the model accepts; below 0 near misses join them)")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(func=run)


def _out_path(args) -> Path:
    if args.out:
        return check_writable(args.out, "--out")
    cp, cn = (f"{c:g}" for c in args.cost)
    DEFAULT_MODEL_DIR.mkdir(parents=True, exist_ok=True)
    return DEFAULT_MODEL_DIR / f"detector_{cp}_{cn}.json"


def run(args: argparse.Namespace) -> int:
    if args.rounds < 1:
        raise FacedetectError("--rounds must be at least 1")
    if args.checkpoint_every < 1:
        raise FacedetectError("--checkpoint-every must be at least 1")
    if args.jitter < 0:
        raise FacedetectError("--jitter must be >= 0")
    if not math.isfinite(args.bootstrap_threshold):
        raise FacedetectError("--bootstrap-threshold must be a finite number")
    out = _out_path(args)
    config = TrainConfig(tuple(args.cost), args.rounds, args.algorithm, args.selection,
                         args.holdout, args.balanced, args.seed, args.mirror, args.jitter,
                         args.calibration_split, args.prior, args.calibration,
                         args.threshold_rule)
    check_config(config)
    data = load_cbcl(args.data)
    log = (lambda *a, **k: None) if args.quiet or args.json else \
        (lambda *a, **k: print(*a, file=sys.stderr, **k))
    negatives = None
    if args.bootstrap_rounds < 0 or args.bootstrap_limit < 1:
        raise FacedetectError("--bootstrap-rounds must be >= 0 and --bootstrap-limit >= 1")
    if args.bootstrap_rounds:
        from ..training.bootstrap import load_negative_images
        negatives, _ = load_negative_images(args.negatives)
    elif args.negatives:
        raise FacedetectError("--negatives needs --bootstrap-rounds K (K >= 1)")
    with exclusive_output(out):
        result = train_detector(config, data, out=out, checkpoint_every=args.checkpoint_every,
                                resume=args.resume, progress=not (args.quiet or args.json),
                                log=log, negatives=negatives,
                                bootstrap_rounds=args.bootstrap_rounds,
                                bootstrap_limit=args.bootstrap_limit,
                                bootstrap_threshold=args.bootstrap_threshold)
    summary = {"model": str(out), "cost": list(config.cost), "algorithm": config.algorithm,
               "selection": config.selection, "rounds": result.model.n_stumps,
               "train_windows": result.train_counts,
               "heldout_windows": len(result.model.document["training"]["heldout_names"]),
               "operating_point": result.model.operating_point,
               "seconds": round(result.seconds, 1),
               "feature_seconds": round(result.feature_seconds, 1)}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"saved {out}: {summary['rounds']} stumps, cost {config.cost[0]:g},"
              f"{config.cost[1]:g}, {config.algorithm}/{config.selection}, trained on "
              f"{result.train_counts['faces']} faces + {result.train_counts['non_faces']} "
              f"non-faces in {result.seconds:.1f} s")
        print(describe_operating_point(result.model.operating_point))
    return 0


def add_parser(subparsers) -> None:
    configure(subparsers.add_parser("train", help="train a detector on CBCL (train-detector)"))


def main(argv=None) -> int:
    return standalone_main("train-detector", "Train a cost-sensitive face detector on CBCL.", configure, argv)


if __name__ == "__main__":
    sys.exit(main())
