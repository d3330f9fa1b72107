"""``train-detector --stages N``: the cascade half of the train command."""

from __future__ import annotations

import argparse
import json
import sys

from .._utils.atomic import exclusive_output
from ..errors import FacedetectError
from ..pipeline._settings import CASCADE_LIMITS, CascadeConfig, RunOptions
from ._common import field_type

CASCADE_DEFAULTS = CascadeConfig()
DEFAULT_WINDOW = (24, 24)


def cascade_options(parser: argparse.ArgumentParser) -> None:
    """An attentional cascade instead of one stage (opencv_traincascade's rules)."""
    group = parser.add_argument_group("attentional cascade")
    group.add_argument("--stages", type=field_type("stages", CASCADE_LIMITS), metavar="N",
                       help="train a cascade of at most N stages, each boosted with "
                            "AdaBoostDB at --cost, mining its negatives from --negatives")
    group.add_argument("--min-hit-rate", type=field_type("min_hit_rate", CASCADE_LIMITS),
                       default=CASCADE_DEFAULTS.min_hit_rate,
                       help="share of held-out faces every stage keeps (default "
                            f"{CASCADE_DEFAULTS.min_hit_rate})")
    group.add_argument("--max-false-alarm-rate",
                       type=field_type("max_false_alarm_rate", CASCADE_LIMITS),
                       default=CASCADE_DEFAULTS.max_false_alarm_rate,
                       help="a stage is done once at most this share of its negatives pass "
                            f"(default {CASCADE_DEFAULTS.max_false_alarm_rate})")
    group.add_argument("--max-stumps-per-stage",
                       type=field_type("max_stumps_per_stage", CASCADE_LIMITS),
                       default=CASCADE_DEFAULTS.max_stumps_per_stage, metavar="N",
                       help="a stage that needs more stops the cascade (default "
                            f"{CASCADE_DEFAULTS.max_stumps_per_stage})")
    group.add_argument("--target-false-alarm-rate",
                       type=field_type("target_false_alarm_rate", CASCADE_LIMITS),
                       help="stop once the stages' false-alarm rates multiply to this "
                            "(default: --max-false-alarm-rate to the power N)")
    group.add_argument("--positives", metavar="DIR",
                       help="train on a folder of cropped samples of any object instead of "
                            "CBCL's faces (resized to --window)")
    group.add_argument("--positives-info", metavar="FILE",
                       help="or on the boxes of an opencv_createsamples info file "
                            "('path count x y w h ...' per line)")
    group.add_argument("--window", type=_window_size, metavar="WxH",
                       help="the window: of one-stage training (default: the recipe's, "
                            "24x24 for faces and opencv, 19x19 for cbcl), or of --positives "
                            "/ --positives-info (default 24x24)")
    group.add_argument("--search-stage-cost", action="store_true",
                       help="boost every stage at costs 1,1 2,1 and 4,1 and keep the one "
                            "with the fewest stumps (instead of --cost)")
    group.add_argument("--positives-per-stage",
                       type=field_type("positives_per_stage", CASCADE_LIMITS), metavar="N",
                       help="each stage boosts on a seeded sample of at most N of the "
                            "training faces it still accepts (default: all)")
    group.add_argument("--negatives-per-stage",
                       type=field_type("negatives_per_stage", CASCADE_LIMITS), metavar="N",
                       help="negatives per stage (default: as many as training faces, "
                            "at most 5000)")
    group.add_argument("--heldout-negatives",
                       type=field_type("heldout_negatives", CASCADE_LIMITS), metavar="N",
                       help="fresh negatives each stage also mines and measures its "
                            "false-alarm rate on (default: none, on its own negatives)")


def _window_size(text: str) -> tuple[int, int]:
    from ..data._positives import parse_window
    try:
        return parse_window(text)
    except FacedetectError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


# One-stage flags a cascade has no use for: given, they are refused rather than silently
# ignored.
ONE_STAGE_FLAGS = {
    "--rounds": ("rounds", "a stage ends by --max-stumps-per-stage and "
                                "--max-false-alarm-rate"),
    "--algorithm": ("algorithm", "every stage is AdaBoostDB"),
    "--selection": ("selection", "every stage selects by the largest root"),
    "--exact": ("exact", "stages train on compact features"),
    "--max-features": ("max_features", "every stage searches all features"),
    "--grain": ("grain", "a cascade's faces are not grained"),
    "--posterize": ("posterize", "a cascade's faces are not posterised"),
    "--framing": ("framing", "a cascade's windows are framed as its positives are"),
    "--prior": ("prior", "a cascade has no window operating point"),
    "--calibration-split": ("calibration_split", "a cascade has no window operating "
                                                      "point"),
    "--calibration": ("calibration", "a cascade has no window operating point"),
    "--threshold-rule": ("threshold_rule", "a cascade has no window operating "
                                                         "point"),
    "--no-bootstrap / --bootstrap-rounds": ("bootstrap_rounds", "every stage after the "
                                            "first mines its negatives"),
    "--bootstrap-limit": ("bootstrap_limit", "see --negatives-per-stage"),
    "--bootstrap-threshold": ("bootstrap_threshold", "stages mine at their threshold"),
    "--checkpoint-every": ("checkpoint_every", "a cascade is checkpointed after every "
                                                   "stage"),
    "--stage-rounds": ("stage_rounds", "a stage ends by --max-stumps-per-stage and "
                                            "--max-false-alarm-rate"),
}


def _check_cascade_flags(args) -> None:
    """Refuse one-stage flags set away from their defaults: a cascade would ignore them."""
    for flag, (name, why) in ONE_STAGE_FLAGS.items():
        # A setting flag not given is None (the recipe's value); --checkpoint-every has
        # the run's default.
        default = RunOptions.checkpoint_every if name == "checkpoint_every" else None
        if getattr(args, name, default) != default:
            raise FacedetectError(f"{flag} is for one-stage training, and a cascade would "
                                  f"ignore it ({why}): drop it, or drop --stages")
    if args.data and (args.positives or args.positives_info):
        raise FacedetectError("--data (CBCL) and --positives / --positives-info name two "
                              "sources of positives: give one")


def _samples(args, warn):
    """The positives asked for, else CBCL's faces and non-faces."""
    from ..data import load_cbcl
    from ..data._positives import load_positive_folder, load_positives_info
    if args.positives and args.positives_info:
        raise FacedetectError("give --positives or --positives-info, not both")
    window = args.window or DEFAULT_WINDOW
    if args.positives:
        return load_positive_folder(args.positives, window, warn)
    if args.positives_info:
        return load_positives_info(args.positives_info, window, warn)
    if args.window:
        raise FacedetectError("--window needs --positives or --positives-info (CBCL's "
                              "windows are 19x19)")
    return load_cbcl(args.data)   # checked with its split by the trainer


def run_cascade(args, config, out, options, warn, quiet: bool, wild_faces) -> int:
    from ..pipeline._bootstrap import NegativeSet
    from ..pipeline._cascade_train import train_cascade
    cascade = CascadeConfig(stages=args.stages, min_hit_rate=args.min_hit_rate,
                            max_false_alarm_rate=args.max_false_alarm_rate,
                            max_stumps_per_stage=args.max_stumps_per_stage,
                            target_false_alarm_rate=args.target_false_alarm_rate,
                            negatives_per_stage=args.negatives_per_stage,
                            search_cost=args.search_stage_cost,
                            positives_per_stage=args.positives_per_stage,
                            heldout_negatives=args.heldout_negatives)
    cascade.check()
    _check_cascade_flags(args)
    data = _samples(args, warn)
    if (args.positives or args.positives_info) and args.faces:
        raise FacedetectError("--faces adds faces to CBCL's; --positives and "
                              "--positives-info train on other samples: give one of them")
    faces, faces_line = (None, None) if args.positives or args.positives_info else wild_faces()
    negatives = NegativeSet.find(args.negatives, warn=warn)
    with exclusive_output(out):
        if faces_line and not quiet:   # once the run is sure to start
            print(faces_line, file=sys.stderr)
        result = train_cascade(config, cascade, data, negatives=negatives, faces=faces, out=out,
                               resume=args.resume, progress=not quiet, options=options)
    stages = result.model.document["training"]["cascade_stages"]
    summary = {"model": str(out), "cost": list(config.cost), "stages": stages,
               "stop_reason": result.stop_reason, "seconds": round(result.seconds, 1)}
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"saved {out}: {len(stages)} stages, {result.model.n_stumps} stumps, cost "
          f"{config.cost[0]:g},{config.cost[1]:g}, in {result.seconds:.0f} s")
    for stage in stages:
        print(f"  stage {stage['stage']:2d}: {stage['stumps']:4d} stumps at cost "
              f"{stage['cost'][0]:g},{stage['cost'][1]:g}, held-out hit rate "
              f"{stage['held_out_hit_rate']:.4f}, false alarms {stage['false_alarm_rate']:.3f}, "
              f"{stage['seconds']:.0f} s ({stage['mining_seconds']:.0f} s mining), peak "
              f"{stage['peak_rss_gib']:.2f} GiB")
    print(f"stopped: {result.stop_reason}")
    return 0
