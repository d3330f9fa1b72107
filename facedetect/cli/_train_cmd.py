"""``train-detector`` (also ``facedetect train``): train a face detector (the recipe:
faces from the wild beside CBCL's non-faces, hard negatives mined from pictures)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from dataclasses import replace
from pathlib import Path

from .._utils.atomic import exclusive_output
from .._utils.sysinfo import peak_rss_gib
from ..errors import FacedetectError
from ..modelfile._registry import ALGORITHMS as REGISTRY
from ..pipeline._config import (ALGORITHM_CHOICES, CBCL_JITTER_SHIFT, WILD_FRAMING,
                               WILD_JITTER_SHIFT, WILD_POSTERIZE, WILD_WINDOW, TrainConfig,
                               check_config)
from ..pipeline._settings import MEMORY_BOUNDS_GB, RUN_LIMITS, RunOptions
from ..pipeline._verifier_config import VerifierConfig
from ..training._cluster import CONNECT_TIMEOUT_S, MAX_LOCAL_WORKERS, connect, disconnect
from ._recipe_args import chosen_recipe, config_from, expert_flag_lines
from ._verifier_cmd import verifier_line, verify_trained
from ._common import (bounded_int, field_type, check_not_run_file, check_writable,
                     created_folder, describe_operating_point, finite_float, parse_cost,
                     feature_share, scheduler, standalone_main)

DEFAULT_MODEL_DIR = Path("data") / "models"
# The settings every recipe shares, for the flags' help (each recipe's own are stated by
# --recipe: facedetect/pipeline/_recipes.py; measured in docs/detector-training.md).
RECIPE = TrainConfig()


def configure(parser: argparse.ArgumentParser) -> None:
    from ._cascade_cmd import cascade_options
    from ._recipe_args import recipe_options
    for options in (recipe_options, _learner_options, _face_options,
                    _operating_point_options, _bootstrap_options, cascade_options,
                    _run_options):
        options(parser)
    parser.set_defaults(func=run)


def _learner_options(parser: argparse.ArgumentParser) -> None:
    """The data, the split and the boosting algorithm."""
    group = parser.add_argument_group("learner and data")
    group.add_argument("--cost", type=parse_cost, metavar="CP,CN",
                       help="cost of a missed face, then of a false alarm (default: the "
                            "recipe's, 1,10 for faces and opencv, 1,1 for cbcl and object)")
    group.add_argument("--rounds", type=field_type("rounds"),
                       help=f"boosting rounds (default {RECIPE.rounds})")
    group.add_argument("--algorithm", choices=ALGORITHM_CHOICES,
                       help="; ".join(f"{name}: {entry.description}"
                                      for name, entry in REGISTRY.items())
                            + f" (default {RECIPE.algorithm})")
    group.add_argument("--selection", choices=("root", "loss"),
                       help="db/dbn: largest root (paper, default) or smallest loss")
    group.add_argument("--max-features", type=feature_share, metavar="F",
                       help="the Haar features each round searches, a seeded subset per "
                            "round (every feature is still computed once: this shortens "
                            "the rounds, not the feature step): a fraction in (0, 1] or a "
                            "count above 1 (default: "
                            + ("all" if RECIPE.max_features is None else
                               f"{RECIPE.max_features:g}") + ")")
    group.add_argument("--framing", type=field_type("framing"), metavar="D",
                       help="how many eye distances wide the window frames a face (default: "
                            f"the recipe's, {WILD_FRAMING:g} for the "
                            f"{WILD_WINDOW[0]}x{WILD_WINDOW[1]} window of faces from the "
                            "wild, CBCL's 1.75 at 19x19)")
    group.add_argument("--tilted", action=argparse.BooleanOptionalAction, default=None,
                       help="add tilted Haar features (Lienhart and Maydt's, OpenCV's -mode "
                            "ALL) to the five basic types (default: the recipe's, on for "
                            "faces, opencv and object)")
    group.add_argument("--channels", action=argparse.BooleanOptionalAction, default=None,
                       help="add channel features over the gradient magnitude and six "
                            "orientation channels (Dollar's integral channel features): "
                            "run by detect, not by OpenCV, so export-opencv needs a model "
                            "trained without them (default: the recipe's, on for faces "
                            "alone)")
    group.add_argument("--data", help="CBCL folder or faces.tar.gz (default: $FACEDETECT_DATA, "
                                      "./data/cbcl, the user cache)")
    group.add_argument("--holdout", type=field_type("holdout"),
                       help=f"stratified held-out fraction (default {RECIPE.holdout:g}; 0 "
                            "trains on all)")
    group.add_argument("--balanced", action="store_true", default=None,
                       help="use the class-balanced subset (the paper's CBCL experiment)")
    group.add_argument("--seed", type=field_type("seed"),
                       help=f"split seed, 0..2^32-1 (default {RECIPE.seed})")


def _face_options(parser: argparse.ArgumentParser) -> None:
    """Extra training faces: faces from the wild, mirrored and jittered copies."""
    group = parser.add_argument_group("training faces")
    group.add_argument("--faces", metavar="DIR",
                       help="faces from the wild: a folder of face crops with faces.csv "
                            "(file, leye_x, leye_y, reye_x, reye_y); a fixed tenth is held "
                            "out; the faces and opencv recipes need them (default: "
                            "$FACEDETECT_FACES, ./data/faces, the user cache)")
    group.add_argument("--no-wild-faces", action="store_true",
                       help="the old spelling of --recipe cbcl (warned of; leaves in the "
                            "next release)")
    group.add_argument("--mirror", action=argparse.BooleanOptionalAction,
                       help="also train on every training face flipped left to right "
                            f"(default: {'on' if RECIPE.mirror else 'off'})")
    group.add_argument("--jitter", type=field_type("jitter"), metavar="N",
                       help="also train on N slightly turned, scaled and shifted copies of "
                            f"every training face, 0..100 (default {RECIPE.jitter})")
    group.add_argument("--jitter-shift", type=field_type("jitter_shift"), default=None,
                       metavar="PX",
                       help="the jitter's largest shift, in window pixels either way, "
                            f"0..4 (default: the recipe's, {WILD_JITTER_SHIFT:g} for "
                            f"opencv, for OpenCV's scan; else {CBCL_JITTER_SHIFT:g})")
    group.add_argument("--grain", type=field_type("grain"), metavar="SD",
                       help="Gaussian grain on the windows of the faces from the wild and "
                            "on the mined negatives alike, each its own sd up to SD grey "
                            f"levels, 0..100 (default {RECIPE.grain:g}; none without the "
                            "faces or without mining)")
    group.add_argument("--posterize", type=field_type("posterize"), default=None,
                       metavar="FRACTION",
                       help="posterise this fraction of the windows of the faces from the "
                            "wild and of the mined negatives alike to 4..8 grey levels, "
                            f"0..1 (default: the recipe's, {WILD_POSTERIZE:g} for faces, "
                            "else 0; none without mining)")


def _operating_point_options(parser: argparse.ArgumentParser) -> None:
    """How the window operating point is chosen."""
    group = parser.add_argument_group("window operating point")
    group.add_argument("--calibration-split", type=field_type("calibration_split"),
                       metavar="F",
                       help="fraction of the training part kept from boosting to choose the "
                            "cost-aware operating point (default "
                            f"{RECIPE.calibration_split:g}; 0 keeps the raw threshold 0)")
    group.add_argument("--prior", type=field_type("prior"), metavar="P",
                       help="deployment probability of a face, in (0, 1), for the operating "
                            "point (default: the training data's)")
    group.add_argument("--calibration", choices=("sigmoid", "isotonic"),
                       help="calibration map fitted on the calibration split, stored for "
                            "predict_proba: sigmoid (Platt, default) or isotonic")
    group.add_argument("--threshold-rule", choices=("calibrated", "empirical"),
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
                       metavar="K",
                       help="retrain K times, adding the false positives mined on the "
                            f"negatives (default {RECIPE.bootstrap_rounds})")
    group.add_argument("--no-bootstrap", action="store_const", const=0,
                       dest="bootstrap_rounds",
                       help="no hard-negative bootstrapping: the plain window classifier "
                            "of the paper's experiment")
    group.add_argument("--stage-rounds", type=field_type("stage_rounds"), metavar="N",
                       help="boosting rounds of each bootstrap stage before the last, whose "
                            f"models only mine hard negatives (default {RECIPE.stage_rounds})")
    group.add_argument("--keep-features", action="store_true", default=None,
                       help="compute each window's features once over the mining stages, "
                            "binning the mined windows at the first stage's edges: faster "
                            "(fewer feature passes), and measured to find fewer held-out "
                            "faces (0.950 against 0.960), so not the recipe's")
    group.add_argument("--bootstrap-limit", type=field_type("bootstrap_limit"), metavar="N",
                       help="hard negatives mined per bootstrap round at most (default "
                            f"{RECIPE.bootstrap_limit})")
    group.add_argument("--bootstrap-threshold", type=field_type("bootstrap_threshold"),
                       metavar="T",
                       help="harvest the windows scoring above T (default 0, the windows "
                            "the model accepts; below 0 near misses join them)")
    group.add_argument("--target-false-alarms-per-megapixel", "--false-alarms",
                       dest="target_false_alarms_per_megapixel",
                       type=field_type("target_false_alarms_per_megapixel"), metavar="RATE",
                       help="image operating point: the false alarms per megapixel allowed "
                            "on the calibration part of the negative pictures (default "
                            f"{RECIPE.target_false_alarms_per_megapixel:g}, and the "
                            f"verifier's {VerifierConfig.target:g}; where given, both; "
                            "facedetect calibrate sets "
                            "it again on a trained model)")
    group.add_argument("--verifier", action=argparse.BooleanOptionalAction, default=None,
                       help="then train a verifier on the model (a second look at each "
                            "face it finds, as train-verifier trains one with its defaults) "
                            "and write the model with it; one-stage models of faces from "
                            "the wild only (default: the recipe's, on for faces; "
                            "--no-verifier trains the one-stage model alone)")


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
    group.add_argument("--exact", action="store_true", default=None,
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


def _out_path(args, config: TrainConfig) -> Path:
    if args.out:
        from ..pipeline._train import check_output
        check_not_run_file(args.out, "--out")
        out = check_writable(args.out, "--out")
        try:
            check_output(out)   # never a file of the data: faces.csv, an image
        except FacedetectError as error:
            raise FacedetectError("--" + str(error)) from None
        return out
    cp, cn = (f"{c:g}" for c in config.cost)
    kind = "cascade" if args.stages else "detector"
    return DEFAULT_MODEL_DIR / f"{kind}_{cp}_{cn}.json"


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
                         log=log, warn=warn)
    options.check()
    if args.faces and args.no_wild_faces:
        raise FacedetectError("--faces and --no-wild-faces contradict each other")
    recipe = chosen_recipe(args)
    if recipe.cascade and not args.stages:
        args.stages = recipe.stages
    config = config_from(args, recipe)
    check_config(config)   # the settings before the data is sought
    out = _out_path(args, config)
    if args.resume and not args.stages:   # refused now, not after the data is read
        from ..pipeline._checkpoint import check_resumable
        check_resumable(str(out) + ".checkpoint.json", config.as_dict())
    if args.workers and args.scheduler:
        raise FacedetectError("--workers starts a local cluster, --scheduler joins one: "
                              "give one of them")
    if args.verifier and (args.stages or recipe.faces != "wild"):
        raise FacedetectError("--verifier verifies a one-stage model of faces from the "
                              f"wild (--recipe faces or opencv), not --recipe {recipe.name}"
                              + (" --stages" if args.stages else ""))
    if args.verifier is None:   # the recipe's: none on a cascade or without mining
        args.verifier = recipe.verifier and not args.stages and config.bootstrap_rounds > 0
    if args.stages:
        # A cascade's window is its positives' and its faces are framed as they were cut.
        config = replace(config, window=args.window, framing=None)
        check_config(config)
        _check_cascade_data(args, recipe)
        with _model_folder(args), _cluster(args, options):
            done = run_cascade(args, config, out, options, warn, quiet,
                               lambda: _wild_faces(args, warn))
        _say_expert_flags(args, warn)
        return done
    if args.positives or args.positives_info:
        raise FacedetectError("--positives and --positives-info train a cascade: "
                              "--recipe object")
    if args.negatives and not config.bootstrap_rounds:
        raise FacedetectError("--negatives needs bootstrapping (drop --no-bootstrap)")
    faces = _recipe_faces(args, recipe)
    # Resolved once: the settings checked, the data found and split, the window set.
    plan = plan_training(config, args.data, faces=faces, negatives=args.negatives or FIND,
                         warn=warn, progress=not quiet, settings_checked=True)
    if args.verifier and (plan.negatives is None or not plan.negatives.calibration):
        raise FacedetectError("the verifier chooses its operating point on the "
                              "calibration part of the face-free pictures: give --negatives "
                              "DIR, or --no-verifier")
    # The default folder is created only now that the settings and the data are known
    # good, and removed again if training fails.
    with _model_folder(args), exclusive_output(out), _cluster(args, options):
        log(_faces_line(args, plan))   # once the run is sure to start: an error stays one line
        result = train_detector(plan, out=out, resume=args.resume, progress=not quiet,
                                options=options)
        # --false-alarms, where given, sets the verifier's point too: what detect uses
        verified = (verify_trained(plan, result.model, out, quiet, options.memory,
                                   args.target_false_alarms_per_megapixel)
                    if args.verifier else None)
    config = plan.config
    _say_expert_flags(args, warn)   # after the run, so that a refusal stays one line
    _report(args, out, config, result, verified)
    return 0


def _recipe_faces(args, recipe):
    """The faces from the wild the one-stage recipe trains on: the folder found where
    ``--faces`` looks for the faces and opencv recipes (refused in one line where there
    is none), none for cbcl."""
    from ..data._wild_faces import find_faces_folder
    if recipe.faces == "cbcl":
        if args.faces:
            raise FacedetectError("--faces: the cbcl recipe trains on CBCL's faces alone; "
                                  "drop --faces, or choose --recipe faces")
        return None
    folder = find_faces_folder(args.faces)
    if folder is None:
        raise FacedetectError(f"the {recipe.name} recipe trains on faces from the wild, and "
                              "none were found: give --faces DIR (or put them in "
                              "./data/faces, or set $FACEDETECT_FACES; docs/wild-faces.md), "
                              "or choose --recipe cbcl for CBCL's faces alone")
    return folder


def _check_cascade_data(args, recipe) -> None:
    """The object recipe trains on the user's samples: refused without them."""
    if recipe.faces == "positives" and not (args.positives or args.positives_info):
        raise FacedetectError("the object recipe trains on your samples: give --positives "
                              "DIR or --positives-info FILE, and --negatives DIR")


def _say_expert_flags(args, warn) -> None:
    for line in expert_flag_lines(args):
        warn(line)


def _faces_line(args, plan) -> str:
    """What the one-stage run does with the faces from the wild, in one line."""
    return plan.faces_line() if plan.faces is not None else _no_faces_line(args)


def _no_faces_line(args) -> str:
    return ("faces from the wild: not used (the cbcl recipe); CBCL's faces only. For "
            "photographs, --recipe faces with a faces folder in ./data/faces "
            "(docs/wild-faces.md)")


def _wild_faces(args, warn):
    """A cascade's ``(faces from the wild or None, the line that says so)``: they join
    CBCL's faces."""
    from ..data._wild_faces import find_faces_folder, heldout_mask, load_wild_faces
    if args.no_wild_faces and args.faces:
        raise FacedetectError("--faces and --no-wild-faces contradict each other")
    # Only where asked for (--faces): a cascade's positives are never chosen by which
    # folders exist.
    folder = None if args.no_wild_faces or not args.faces else find_faces_folder(args.faces)
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


def _report(args, out, config: TrainConfig, result, verified: dict | None = None) -> None:
    """The trained model's summary, as text or JSON (``verified``: the verifier's
    record, where one was trained)."""
    summary = {"model": str(out), "cost": list(config.cost), "algorithm": config.algorithm,
               "selection": config.selection, "rounds": result.model.n_stumps,
               "train_windows": result.train_counts,
               "heldout_windows": len(result.model.document["training"]["heldout_names"]),
               "operating_point": result.model.operating_point,
               "detection": _image_point(result.model),
               "calibration": result.model.calibration,
               "seconds": round(result.seconds, 1),
               "feature_seconds": round(result.feature_seconds, 1),
               "phases": result.phases, "scratch_bytes": int(result.scratch_bytes),
               "peak_rss_gib": round(peak_rss_gib(), 3)}
    if verified is not None:
        summary["verifier"] = {k: v for k, v in verified.items() if k != "config"}
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
            chosen = result.model.calibration.get("image", {})
            print(f"image operating point (what detect uses): threshold "
                  f"{detection['threshold']:.4g}, min_neighbors "
                  f"{detection['min_neighbors']}, "
                  f"{chosen.get('false_alarms_per_megapixel', float('nan')):.3g} false "
                  f"alarms per megapixel on {chosen.get('source', 'calibration pictures')}")
        elif config.bootstrap_rounds:
            print("no image operating point: the negative pictures were too few to set "
                  "some apart for calibration (or none were given); detect will scan at "
                  "the window threshold")
        else:
            print("no image operating point (no bootstrapping): detect will scan at the "
                  "window threshold")
        if verified is not None:
            print(f"verifier: {verifier_line(verified)}; detect runs both, --no-verifier "
                  "the one-stage model")


def add_parser(subparsers) -> None:
    configure(subparsers.add_parser("train", aliases=["train-detector"],
                                   help="train a face detector"))


def main(argv=None) -> int:
    return standalone_main("train-detector", "Train a cost-sensitive face detector.", configure,
                           argv)


if __name__ == "__main__":
    sys.exit(main())
