"""``facedetect train-verifier MODEL --out FILE``: a second look for a one-stage face model."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..errors import FacedetectError
from ._common import bounded_int, check_writable, field_type, finite_float

def add_parser(subparsers) -> None:
    from ..pipeline._verifier_config import VerifierConfig   # plain data: no numpy
    defaults = VerifierConfig()
    parser = subparsers.add_parser(
        "train-verifier", help="train a verifier: a second look at each face a model finds",
        description="Propose, then verify: scan with MODEL at a permissive threshold and "
                    "train a second AdaBoostDB model (same cost) on a patch with more "
                    "context around each proposal, from the training faces MODEL was "
                    "trained on and windows it raises on the mining pictures. The weight "
                    "and threshold of the joint score are chosen on the calibration faces "
                    "and pictures at --false-alarms. OUT is MODEL with a "
                    "verifier section: detect runs both, --no-verifier the one-stage "
                    "model, and export-opencv still writes the one-stage model.")
    parser.add_argument("model", help="a face model file trained on faces from the wild, "
                                       "or a shipped model's name (a verifier it has is "
                                       "replaced)")
    parser.add_argument("--out", required=True, metavar="FILE", help="the verified model")
    parser.add_argument("--faces", metavar="DIR",
                        help="the faces from the wild MODEL was trained on (default: found "
                             "as train-detector finds them)")
    parser.add_argument("--data", metavar="DIR",
                        help="CBCL's data MODEL was trained on (default: found as "
                             "train-detector finds it)")
    parser.add_argument("--negatives", metavar="DIR",
                        help="face-free pictures (default: found as train-detector finds "
                             "them); the mining part gives negatives, the calibration part "
                             "the operating point, the held-out fifth is never read")
    parser.add_argument("--propose-at", type=finite_float, default=defaults.propose_at,
                        metavar="T", help="the proposer's threshold (default "
                                          f"{defaults.propose_at:g})")
    parser.add_argument("--propose-scale", type=finite_float, default=defaults.propose_scale,
                        metavar="S", help=f"the proposer's pyramid step, 1.01 to 10 (default "
                                          f"{defaults.propose_scale:g})")
    parser.add_argument("--mine-at", type=finite_float, default=defaults.mine_at, metavar="T",
                        help=f"negatives: windows MODEL raises at T (default "
                             f"{defaults.mine_at:g})")
    parser.add_argument("--context", type=finite_float, default=defaults.context,
                        help=f"patch side in window sides, 1 to 4 (default "
                             f"{defaults.context:g})")
    parser.add_argument("--size", type=bounded_int(8, 128), default=defaults.size,
                        help=f"patch side in pixels (default {defaults.size})")
    parser.add_argument("--rounds", type=bounded_int(1, 10_000), default=defaults.rounds,
                        help=f"boosting rounds (default {defaults.rounds})")
    parser.add_argument("--features", type=bounded_int(1, 10_000_000),
                        default=defaults.features,
                        help=f"features drawn from the patch's pool (default "
                             f"{defaults.features:,})")
    parser.add_argument("--channels", action=argparse.BooleanOptionalAction,
                        default=defaults.channels,
                        help="draw the features from a pool with channel features (gradient "
                             "magnitude and six orientations) beside the Haar features "
                             f"(default {'on' if defaults.channels else 'off'})")
    parser.add_argument("--max-features", type=bounded_int(1, 10_000_000),
                        default=None, metavar="N",
                        help="features each round searches, a seeded subset per round "
                             f"(default {defaults.max_features:,}, or all of --features "
                             "where fewer)")
    parser.add_argument("--bootstrap", type=bounded_int(0, 5), default=defaults.bootstrap,
                        metavar="K",
                        help="hard-negative passes, 0 to 5: each adds the windows the "
                             "verifier so far scores highest on each mining picture and "
                             f"trains it again (default {defaults.bootstrap})")
    parser.add_argument("--false-alarms", type=field_type("target_false_alarms_per_megapixel"),
                        default=defaults.target, metavar="RATE",
                        help="false alarms per megapixel of the calibration pictures the "
                             "joint score's point is chosen at (default "
                             f"{defaults.target:g})")
    parser.add_argument("--seed", type=bounded_int(0, 2 ** 32 - 1), default=defaults.seed,
                        help=f"seed of the features and negatives drawn (default "
                             f"{defaults.seed})")
    parser.add_argument("--memory", type=finite_float, metavar="GIB",
                        help="memory for the patches' features in GiB (default: half of the "
                             "memory available, as train-detector); beyond it they spill to "
                             "a temporary file, and the verifier is the same")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--json", action="store_true", help="print the record as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..data._cbcl import load_cbcl
    from ..data._wild_faces import find_faces_folder, load_wild_faces
    from ..detector._api import load_model, model_path
    from ..pipeline._bootstrap import NegativeSet
    from ..pipeline._storage import memory_bytes
    from ..pipeline._verifier import train_verifier
    from ..pipeline._verifier_config import VerifierConfig

    def warn(line):
        print(f"{args.prog}: {line}", file=sys.stderr)
    if args.max_features is not None and args.max_features > args.features:
        raise FacedetectError(f"--max-features {args.max_features} searches more features "
                              f"than --features {args.features} draws")
    config = VerifierConfig(propose_at=args.propose_at, propose_scale=args.propose_scale,
                            mine_at=args.mine_at,
                            context=args.context, size=args.size, rounds=args.rounds,
                            features=args.features, channels=args.channels,
                            seed=args.seed, target=args.false_alarms,
                            bootstrap=args.bootstrap,
                            memory=None if args.memory is None else memory_bytes(args.memory),
                            **({} if args.max_features is None
                               else {"max_features": args.max_features}))
    config.validate()   # before the data is read
    source = model_path(args.model)   # the file read: never written over
    model = load_model(source)
    if model.verifier is not None:
        warn(f"{args.model} has a verifier: the one trained here replaces it")
    out = check_writable(args.out, "--out")
    if Path(out).resolve() == source.resolve():
        raise FacedetectError(f"--out {args.out} is the model file itself: name another file")
    folder = find_faces_folder(args.faces)
    if folder is None:
        raise FacedetectError("no faces folder found: give --faces DIR (the faces MODEL "
                              "was trained on)")
    faces = load_wild_faces(folder, warn=warn, progress=not args.quiet)
    negatives = NegativeSet.find(args.negatives, warn=warn)
    if not negatives.calibration:
        raise FacedetectError("the negatives have no calibration part: give --negatives DIR")
    verified, record = train_verifier(model, load_cbcl(args.data), faces, negatives, config,
                                      progress=not (args.quiet or args.json))
    verified.save(out)
    if args.json:
        print(json.dumps({"out": str(out), **record}, indent=2))
        return 0
    print(f"wrote {out}: a verifier of {verified.verifier.model.n_stumps} stumps on "
          f"{config.size}x{config.size} patches {config.context:g} windows wide, from "
          f"{verifier_line(record)}")
    return 0


def verifier_line(record: dict) -> str:
    """What a verifier's training record says, in one line's words."""
    return (f"{record['positives']:,} positives and {record['negatives']:,} negatives; kept "
            f"when the score plus {record['weight']:g} x the verifier's passes "
            f"{record['threshold']:g} ({record['calibration_recall']:.3f} of the calibration "
            f"faces at {record['target_false_alarms_per_megapixel']:g} false alarms per "
            f"megapixel of the calibration pictures)")


def verify_trained(plan, model, out: Path, quiet: bool, memory: int | None = None,
                   target: float | None = None) -> dict:
    """``train-detector --verifier``: a verifier for the model just written to ``out``,
    trained on the plan's data with train-verifier's defaults, the run's ``memory``
    (bytes; None: the default) and ``target`` (the run's ``--false-alarms`` where given;
    None: train-verifier's default), and written over it (the one-stage model stays there
    if this fails): its training record."""
    from ..pipeline._verifier import train_verifier
    from ..pipeline._verifier_config import VerifierConfig
    config = VerifierConfig(memory=memory, **({} if target is None else {"target": target}))
    verified, record = train_verifier(model, plan.cbcl, plan.faces, plan.negatives,
                                      config=config, progress=not quiet)
    verified.save(out)
    return record
