"""``train-detector`` (also ``facedetect train``): train a face detector (the recipe:
faces from the wild beside CBCL's non-faces, hard negatives mined from pictures)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

from .._utils.atomic import exclusive_output
from .._utils.sysinfo import peak_rss_gib
from ..errors import FacedetectError
from ..modelfile._registry import ALGORITHMS as REGISTRY
from ..pipeline._config import (ALGORITHM_CHOICES, CBCL_JITTER_SHIFT, WILD_FRAMING,
                               WILD_JITTER_SHIFT, WILD_POSTERIZE, WILD_WINDOW, TrainConfig,
                               check_config)
from ..pipeline._settings import (MEMORY_BOUNDS_GB, RUN_LIMITS, TARGET_FALSE_ALARMS_PER_MPX,
                                 RunOptions)
from ..training._cluster import CONNECT_TIMEOUT_S, MAX_LOCAL_WORKERS, connect, disconnect
from ._common import (bounded_int, field_type, check_not_run_file, check_writable,
                     created_folder, describe_operating_point, finite_float, parse_cost,
                     feature_share, scheduler, standalone_main)

DEFAULT_MODEL_DIR = Path("data") / "models"
# The recipe (train-detector with no flags) is TrainConfig's defaults; the measurements
# behind it are in docs/detector-training.md.
RECIPE = TrainConfig()


def configure(parser: argparse.ArgumentParser) -> None:
    from ._cascade_cmd import cascade_options
    for options in (_learner_options, _face_options, _operating_point_options,
                    _bootstrap_options, cascade_options, _run_options):
        options(parser)
    parser.set_defaults(func=run)


def _learner_options(parser: argparse.ArgumentParser) -> None:
    """The data, the split and the boosting algorithm."""
    group = parser.add_argument_group("learner and data")
    group.add_argument("--cost", type=parse_cost, default=RECIPE.cost, metavar="CP,CN",
                       help="cost of a missed face, then of a false alarm (default "
                            f"{RECIPE.cost[0]:g},{RECIPE.cost[1]:g})")
    group.add_argument("--rounds", type=field_type("rounds"), default=RECIPE.rounds,
                       help=f"boosting rounds (default {RECIPE.rounds})")
    group.add_argument("--algorithm", choices=ALGORITHM_CHOICES, default=RECIPE.algorithm,
                       help="; ".join(f"{name}: {entry.description}"
                                      for name, entry in REGISTRY.items())
                            + f" (default {RECIPE.algorithm})")
    group.add_argument("--selection", choices=("root", "loss"), default=RECIPE.selection,
                       help="db/dbn: largest root (paper, default) or smallest loss")
    group.add_argument("--max-features", type=feature_share, default=RECIPE.max_features,
                       metavar="F",
                       help="the Haar features each round searches, a seeded subset per "
                            "round (every feature is still computed once: this shortens "
                            "the rounds, not the feature step): a fraction in (0, 1] or a "
                            "count above 1 (default: "
                            + ("all" if RECIPE.max_features is None else
                               f"{RECIPE.max_features:g}") + ")")
    group.add_argument("--framing", type=field_type("framing"), metavar="D",
                       help="how many eye distances wide the window frames a face (default: "
                            f"{WILD_FRAMING:g} for the {WILD_WINDOW[0]}x{WILD_WINDOW[1]} "
                            "window of faces from the wild, CBCL's 1.75 at 19x19)")
    group.add_argument("--tilted", action=argparse.BooleanOptionalAction, default=None,
                       help="add tilted Haar features (Lienhart and Maydt's, OpenCV's -mode "
                            "ALL) to the five basic types (default: on with faces from the "
                            "wild, off on CBCL alone and for --stages)")
    group.add_argument("--channels", action=argparse.BooleanOptionalAction, default=None,
                       help="add channel features over the gradient magnitude and six "
                            "orientation channels (Dollar's integral channel features): "
                            "run by detect, not by OpenCV, so export-opencv needs a model "
                            "trained with --no-channels (default: on with faces from the "
                            "wild, off on CBCL alone and for --stages)")
    group.add_argument("--data", help="CBCL folder or faces.tar.gz (default: $FACEDETECT_DATA, "
                                      "./data/cbcl, the user cache)")
    group.add_argument("--holdout", type=field_type("holdout"), default=RECIPE.holdout,
                       help=f"stratified held-out fraction (default {RECIPE.holdout:g}; 0 "
                            "trains on all)")
    group.add_argument("--balanced", action="store_true",
                       help="use the class-balanced subset (the paper's CBCL experiment)")
    group.add_argument("--seed", type=field_type("seed"), default=RECIPE.seed,
                       help=f"split seed, 0..2^32-1 (default {RECIPE.seed})")


def _face_options(parser: argparse.ArgumentParser) -> None:
    """Extra training faces: faces from the wild, mirrored and jittered copies."""
    group = parser.add_argument_group("training faces")
    group.add_argument("--faces", metavar="DIR",
                       help="faces from the wild: a folder of face crops with faces.csv "
                            "(file, leye_x, leye_y, reye_x, reye_y); a fixed tenth is held "
                            "out (default: $FACEDETECT_FACES, ./data/faces, the user cache)")
    group.add_argument("--no-wild-faces", action="store_true",
                       help="train on CBCL's faces only, even where faces from the wild "
                            "are found")
    group.add_argument("--mirror", action=argparse.BooleanOptionalAction,
                       default=RECIPE.mirror,
                       help="also train on every training face flipped left to right "
                            f"(default: {'on' if RECIPE.mirror else 'off'})")
    group.add_argument("--jitter", type=field_type("jitter"), default=RECIPE.jitter,
                       metavar="N",
                       help="also train on N slightly turned, scaled and shifted copies of "
                            f"every training face, 0..100 (default {RECIPE.jitter})")
    group.add_argument("--jitter-shift", type=field_type("jitter_shift"), default=None,
                       metavar="PX",
                       help="the jitter's largest shift, in window pixels either way, "
                            f"0..4 (default {WILD_JITTER_SHIFT:g} with faces from the wild "
                            f"and --no-channels, for OpenCV's scan; else "
                            f"{CBCL_JITTER_SHIFT:g}, and for a cascade)")
    group.add_argument("--grain", type=field_type("grain"), default=RECIPE.grain,
                       metavar="SD",
                       help="Gaussian grain on the windows of the faces from the wild and "
                            "on the mined negatives alike, each its own sd up to SD grey "
                            f"levels, 0..100 (default {RECIPE.grain:g}; none without the "
                            "faces or without mining)")
    group.add_argument("--posterize", type=field_type("posterize"), default=None,
                       metavar="FRACTION",
                       help="posterise this fraction of the windows of the faces from the "
                            "wild and of the mined negatives alike to 4..8 grey levels, "
                            f"0..1 (default {WILD_POSTERIZE:g} with faces from the wild and "
                            "channel features, else 0; none without mining)")


def _operating_point_options(parser: argparse.ArgumentParser) -> None:
    """How the window operating point is chosen."""
    group = parser.add_argument_group("window operating point")
    group.add_argument("--calibration-split", type=field_type("calibration_split"),
                       default=RECIPE.calibration_split,
                       metavar="F",
                       help="fraction of the training part kept from boosting to choose the "
                            "cost-aware operating point (default "
                            f"{RECIPE.calibration_split:g}; 0 keeps the raw threshold 0)")
    group.add_argument("--prior", type=field_type("prior"), metavar="P",
                       help="deployment probability of a face, in (0, 1), for the operating "
                            "point (default: the training data's)")
    group.add_argument("--calibration", choices=("sigmoid", "isotonic"), default=RECIPE.calibration,
                       help="calibration map fitted on the calibration split, stored for "
                            "predict_proba: sigmoid (Platt, default) or isotonic")
    group.add_argument("--threshold-rule", choices=("calibrated", "empirical"),
                       default=RECIPE.threshold_rule,
                       help="calibrated (default): where the calibrated probability crosses "
                            "the Bayes cut Cn/(Cp+Cn); empirical: the least expected cost "
                            "counted on the calibration windows")
    group.add_argument("--calibrated", action="store_const", const="calibrated",
                       dest="threshold_rule",
                       help="the same as --threshold-rule calibrated (the default); with "
                            "--algorithm adaboost this is calibrated AdaMEC")


def _bootstrap_options(parser: argparse.ArgumentParser) -> None:
    """Hard-negative mining and the image operating point."""
    group = parser.add_argument_group("hard negatives and image operating point")
    group.add_argument("--negatives", metavar="DIR",
                       help="face-free pictures for hard-negative bootstrapping (default: "
                            "$FACEDETECT_NEGATIVES, ./data/negatives, the user cache; "
                            "else scikit-image's 16 pictures, with a warning)")
    group.add_argument("--bootstrap-rounds", type=field_type("bootstrap_rounds"),
                       default=RECIPE.bootstrap_rounds, metavar="K",
                       help="retrain K times, adding the false positives mined on the "
                            f"negatives (default {RECIPE.bootstrap_rounds})")
    group.add_argument("--no-bootstrap", action="store_const", const=0,
                       dest="bootstrap_rounds",
                       help="no hard-negative bootstrapping: the plain window classifier "
                            "of the paper's experiment")
    group.add_argument("--stage-rounds", type=field_type("stage_rounds"),
                       default=RECIPE.stage_rounds, metavar="N",
                       help="boosting rounds of each bootstrap stage before the last, whose "
                            f"models only mine hard negatives (default {RECIPE.stage_rounds})")
    group.add_argument("--keep-features", action="store_true",
                       help="compute each window's features once over the mining stages, "
                            "binning the mined windows at the first stage's edges: faster "
                            "(fewer feature passes), and measured to find fewer held-out "
                            "faces (0.950 against 0.960), so not the recipe's")
    group.add_argument("--bootstrap-limit", type=field_type("bootstrap_limit"),
                       default=RECIPE.bootstrap_limit, metavar="N",
                       help="hard negatives mined per bootstrap round at most (default "
                            f"{RECIPE.bootstrap_limit})")
    group.add_argument("--bootstrap-threshold", type=field_type("bootstrap_threshold"),
                       default=RECIPE.bootstrap_threshold, metavar="T",
                       help="harvest the windows scoring above T (default 0, the windows "
                            "the model accepts; below 0 near misses join them)")
    group.add_argument("--false-alarms", type=field_type("false_alarm_target", RUN_LIMITS),
                       default=TARGET_FALSE_ALARMS_PER_MPX, metavar="RATE",
                       help="image operating point: the false alarms per megapixel allowed "
                            "on the calibration part of the negative pictures (default "
                            f"{TARGET_FALSE_ALARMS_PER_MPX:g})")


def _run_options(parser: argparse.ArgumentParser) -> None:
    """Output, checkpoints, memory and progress."""
    group = parser.add_argument_group("run")
    group.add_argument("--out", help="model file (default data/models/detector_CP_CN.json)")
    group.add_argument("--checkpoint-every", type=field_type("checkpoint_every", RUN_LIMITS),
                       default=RunOptions.checkpoint_every, metavar="N",
                       help="write a checkpoint every N rounds (default "
                            f"{RunOptions.checkpoint_every})")
    group.add_argument("--resume", action="store_true",
                       help="continue an interrupted run from its checkpoint")
    group.add_argument("--exact", action="store_true",
                       help="the paper's exact stump search on float32 features (6 bytes "
                            "per window and feature) instead of compact uint8 bins")
    group.add_argument("--memory", type=finite_float, metavar="GIB",
                       help="memory for the training features in GiB (default: half of "
                            "the memory available at the start, within "
                            f"{MEMORY_BOUNDS_GB[0]:g}..{MEMORY_BOUNDS_GB[1]:g}); compact "
                            "features beyond it spill to a temporary file, each part once")
    group.add_argument("--workers", type=bounded_int(1, MAX_LOCAL_WORKERS), metavar="N",
                       help="compute and search the features on N local Dask worker "
                            "processes (pip install 'facedetect[distributed]'); same model")
    group.add_argument("--scheduler", metavar="ADDRESS", type=scheduler,
                       help="... or on the workers of the Dask scheduler at ADDRESS "
                            f"(refused after {CONNECT_TIMEOUT_S} s unreachable)")
    group.add_argument("--quiet", action="store_true", help="no progress output")
    group.add_argument("--json", action="store_true", help="print the summary as JSON")


def _out_path(args) -> Path:
    if args.out:
        from ..pipeline._train import check_output
        check_not_run_file(args.out, "--out")
        out = check_writable(args.out, "--out")
        try:
            check_output(out)   # never a file of the data: faces.csv, an image
        except FacedetectError as error:
            raise FacedetectError("--" + str(error)) from None
        return out
    cp, cn = (f"{c:g}" for c in args.cost)
    kind = "cascade" if args.stages else "detector"
    return DEFAULT_MODEL_DIR / f"{kind}_{cp}_{cn}.json"


def config_from(args: argparse.Namespace) -> TrainConfig:
    """The TrainConfig the flags ask for: every field from the flag of its name."""
    fields = {name: getattr(args, name) for name in RECIPE.as_dict()}
    fields["cost"] = tuple(args.cost)
    if not args.bootstrap_rounds:
        fields["stage_rounds"] = None   # no bootstrap stages to shorten
    return TrainConfig(**fields)


def run(args: argparse.Namespace) -> int:
    from ..pipeline._plan import FIND, plan_training
    from ..pipeline._storage import memory_bytes
    from ..pipeline._train import train_detector
    from ._cascade_cmd import run_cascade
    quiet = args.quiet or args.json

    def log(*parts, **kwargs):
        if not quiet:
            print(*parts, file=sys.stderr, **kwargs)

    def warn(line):
        print(f"{getattr(args, 'prog', 'train-detector')}: {line}", file=sys.stderr)

    options = RunOptions(checkpoint_every=args.checkpoint_every,
                         memory=None if args.memory is None else memory_bytes(args.memory),
                         false_alarm_target=args.false_alarms,
                         log=log, warn=warn)
    options.check()
    out = _out_path(args)
    config = config_from(args)
    if args.resume and not args.stages:   # refused now, not after the data is read
        from ..pipeline._checkpoint import check_resumable
        check_resumable(str(out) + ".checkpoint.json", config.as_dict())
    if args.workers and args.scheduler:
        raise FacedetectError("--workers starts a local cluster, --scheduler joins one: "
                              "give one of them")
    if args.stages:
        check_config(config)
        with _model_folder(args), _cluster(args, options):
            return run_cascade(args, config, out, options, warn, quiet,
                               lambda: _wild_faces(args, warn))
    if args.positives or args.positives_info:
        raise FacedetectError("--positives and --positives-info train a cascade: add "
                              "--stages N")
    if args.negatives and not args.bootstrap_rounds:
        raise FacedetectError("--negatives needs bootstrapping (drop --no-bootstrap)")
    if args.faces and args.no_wild_faces:
        raise FacedetectError("--faces and --no-wild-faces contradict each other")
    # Resolved once: the settings checked, the data found and split, the window set.
    plan = plan_training(config, args.data, faces=None if args.no_wild_faces else (
        args.faces or FIND), negatives=args.negatives or FIND, warn=warn, progress=not quiet)
    # The default folder is created only now that the settings and the data are known
    # good, and removed again if training fails.
    with _model_folder(args), exclusive_output(out), _cluster(args, options):
        log(_faces_line(args, plan))   # once the run is sure to start: an error stays one line
        result = train_detector(plan, out=out, resume=args.resume, progress=not quiet,
                                options=options)
    config = plan.config
    _report(args, out, config, result)
    return 0


def _faces_line(args, plan) -> str:
    """What the one-stage run does with the faces from the wild, in one line."""
    return plan.faces_line() if plan.faces is not None else _no_faces_line(args)


def _no_faces_line(args) -> str:
    if args.no_wild_faces:
        return "faces from the wild: not used (--no-wild-faces); CBCL's faces only"
    return ("faces from the wild: none found (--faces, $FACEDETECT_FACES, ./data/faces, the "
            "user cache); training on CBCL's faces only. For photographs, put a faces "
            "folder with faces.csv in ./data/faces (docs/wild-faces.md)")


def _wild_faces(args, warn):
    """A cascade's ``(faces from the wild or None, the line that says so)``: they join
    CBCL's faces."""
    from ..data._wild_faces import find_faces_folder, heldout_mask, load_wild_faces
    if args.no_wild_faces and args.faces:
        raise FacedetectError("--faces and --no-wild-faces contradict each other")
    folder = None if args.no_wild_faces else find_faces_folder(args.faces)
    if folder is None:
        return None, _no_faces_line(args)
    faces = load_wild_faces(folder, warn=warn, progress=not args.quiet)
    held = int(heldout_mask(faces.groups).sum())
    return faces, (f"faces from the wild: {len(faces):,} faces from {folder} ({held:,} held "
                   "out) join CBCL's faces; --no-wild-faces trains on CBCL's only")


def _model_folder(args):
    """The default model folder for the run (none needed with ``--out``)."""
    return contextlib.nullcontext() if args.out else created_folder(DEFAULT_MODEL_DIR, "--out")


@contextlib.contextmanager
def _cluster(args, options: RunOptions):
    """With ``--workers`` or ``--scheduler``, a Dask client in ``options`` for the run."""
    if not (args.workers or args.scheduler):
        yield
        return
    options.client = connect(args.workers, args.scheduler)
    try:
        yield
    finally:
        disconnect(options.client)


def phases_line(phases: list, scratch_bytes: int, peak_gib: float) -> str:
    """The run's seconds by kind of phase, its scratch writes and its peak memory."""
    totals = {}
    for record in phases:
        totals[record["phase"]] = totals.get(record["phase"], 0.0) + record["seconds"]
    scratch = (f"{scratch_bytes / 2**30:.2f} GiB of features written to scratch"
               if scratch_bytes else "no scratch writes (features in memory)")
    return ("phases: " + ", ".join(f"{name} {seconds:.0f} s" for name, seconds in totals.items())
            + f"; {scratch}; peak memory {peak_gib:.2f} GiB")


def _image_point(model) -> dict | None:
    """The image operating point as the summary reports it: without the per-stump
    rejection thresholds and cascade stages."""
    from ..modelfile._detection import without_stump_lists
    point = model.image_point
    return None if point is None else without_stump_lists(point)


def _report(args, out, config: TrainConfig, result) -> None:
    """The trained model's summary, as text or JSON."""
    summary = {"model": str(out), "cost": list(config.cost), "algorithm": config.algorithm,
               "selection": config.selection, "rounds": result.model.n_stumps,
               "train_windows": result.train_counts,
               "heldout_windows": len(result.model.document["training"]["heldout_names"]),
               "operating_point": result.model.operating_point,
               "detection": _image_point(result.model),
               "seconds": round(result.seconds, 1),
               "feature_seconds": round(result.feature_seconds, 1),
               "phases": result.phases, "scratch_bytes": int(result.scratch_bytes),
               "peak_rss_gib": round(peak_rss_gib(), 3)}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"saved {out}: {summary['rounds']} stumps, cost {config.cost[0]:g},"
              f"{config.cost[1]:g}, {config.algorithm}/{config.selection}, trained on "
              f"{result.train_counts['faces']} faces + {result.train_counts['non_faces']} "
              f"non-faces in {result.seconds:.1f} s")
        print(phases_line(result.phases, result.scratch_bytes, peak_rss_gib()))
        print(describe_operating_point(result.model.operating_point))
        if result.model.image_point is not None:
            detection = result.model.image_point
            print(f"image operating point (what detect uses): threshold "
                  f"{detection['threshold']:.4g}, min_neighbors "
                  f"{detection['min_neighbors']}, "
                  f"{detection['false_alarms_per_megapixel']:.3g} false alarms per "
                  f"megapixel on {detection['source']}")
        elif config.bootstrap_rounds:
            print("no image operating point: the negative pictures were too few to set "
                  "some apart for calibration (or none were given); detect will scan at "
                  "the window threshold")
        else:
            print("no image operating point (no bootstrapping): detect will scan at the "
                  "window threshold")


def add_parser(subparsers) -> None:
    configure(subparsers.add_parser("train", aliases=["train-detector"],
                                   help="train a face detector"))


def main(argv=None) -> int:
    return standalone_main("train-detector", "Train a cost-sensitive face detector.", configure,
                           argv)


if __name__ == "__main__":
    sys.exit(main())
