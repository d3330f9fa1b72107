"""``facedetect createsamples`` and ``facedetect traincascade``: OpenCV's tutorial commands,
with its flags, trained with AdaBoostDB.

OpenCV 4 no longer builds ``opencv_createsamples`` and ``opencv_traincascade``; their
tutorials still say ``opencv_createsamples -info info.dat -vec pos.vec -w 24 -h 24`` and
``opencv_traincascade -data out -vec pos.vec -bg bg.txt -numPos ... -numStages 20``. The
same lines with ``facedetect`` in front read and write OpenCV's files (``.vec``, ``bg.txt``,
``DATA/cascade.xml``, ``params.xml`` and ``stageN.xml``); the cascade is the one
``train-detector --stages`` trains. Flags that have no meaning here are accepted and said
to be ignored, in one line each; values this trainer cannot honour are refused.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import FacedetectError
from ..pipeline._settings import CASCADE_LIMITS, HIT_RATE_ON
from ._common import bounded_int, field_type, finite_float, parse_cost

# Accepted for the tutorials' sake, and ignored: why, said once each when given.
IGNORED_TRAIN_FLAGS = {
    "bt": "every stage is boosted with AdaBoostDB at --cost",
    "weightTrimRate": "AdaBoostDB weighs every window each round",
    "baseFormatSave": "cascade.xml is written in OpenCV's current format, which every "
                      "OpenCV 3 and 4 reads",
    "precalcIdxBufSize": "the features take -precalcValBufSize as their memory setting",
}


def add_parser(subparsers) -> None:
    # -h is the samples' height, as in OpenCV's tools: --help alone shows the help.
    for name, configure, summary in (
            ("createsamples", configure_createsamples,
             "opencv_createsamples: cut an info file's boxes into a .vec file"),
            ("traincascade", configure_traincascade,
             "opencv_traincascade: train DATA/cascade.xml from a .vec file and a bg.txt "
             "list, with AdaBoostDB")):
        parser = subparsers.add_parser(name, help=summary, add_help=False,
                                       allow_abbrev=False)
        parser.add_argument("--help", action="help", help="show this help and exit")
        configure(parser)


def configure_createsamples(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-info", help="the boxes: 'path count x y w h ...' a line, paths "
                                      "relative to the info file's folder")
    parser.add_argument("-vec", required=True, help="the .vec file to write")
    parser.add_argument("-img", help="refused: distorted copies of one image are not made")
    parser.add_argument("-bg", help="accepted and ignored (OpenCV uses it with -img only)")
    parser.add_argument("-num", type=bounded_int(1, 10**6), default=1000,
                        metavar="N",
                        help="the most samples to write (default 1000, as OpenCV's)")
    parser.add_argument("-w", type=bounded_int(8, 256), default=24, help="sample width")
    parser.add_argument("-h", type=bounded_int(8, 256), default=24, help="sample height")
    parser.set_defaults(func=run_createsamples)


def run_createsamples(args: argparse.Namespace) -> int:
    from ..data._positives import load_positives_info
    from ..data._vec import write_vec
    prog = getattr(args, "prog", "createsamples")
    if args.img:
        raise FacedetectError("-img (distorted copies of one image) is not supported: cut "
                              "real samples with -info")
    if not args.info:
        raise FacedetectError("-info is required: the boxes to cut into -vec")
    if Path(args.vec).resolve() == Path(args.info).resolve():
        raise FacedetectError(f"-vec {args.vec} is the info file itself: name another file")
    if args.bg:
        print(f"{prog}: note: -bg is ignored: OpenCV uses it with -img only", file=sys.stderr)
    found = load_positives_info(args.info, (args.w, args.h),
                                warn=lambda line: print(f"{prog}: {line}", file=sys.stderr))
    samples = found.images[:args.num]
    write_vec(args.vec, samples)
    print(f"Done. Created {len(samples)} samples ({args.w}x{args.h}) in {args.vec}"
          + (f", the first {args.num} of {len(found.images)}" if len(found.images) >
             args.num else ""))
    return 0


def configure_traincascade(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-data", required=True, help="the folder for cascade.xml, "
                                                     "params.xml and stageN.xml")
    parser.add_argument("-vec", required=True, help="the positives: a .vec file")
    parser.add_argument("-bg", required=True, help="the negatives: a list of face-free "
                        "pictures, one path a line, relative to the working folder")
    parser.add_argument("-numPos", dest="positives_per_stage", type=bounded_int(1, 10**7),
                        default=2000, metavar="N",
                        help="positives each stage trains on (default 2000)")
    parser.add_argument("-numNeg", dest="negatives_per_stage", type=bounded_int(1, 10**6),
                        default=1000, metavar="N",
                        help="negatives each stage mines (default 1000)")
    parser.add_argument("-numStages", dest="stages", type=bounded_int(1, 100), default=20,
                        metavar="N", help="the most stages (default 20)")
    parser.add_argument("-w", type=bounded_int(8, 256), default=24, help="sample width")
    parser.add_argument("-h", type=bounded_int(8, 256), default=24, help="sample height")
    parser.add_argument("-minHitRate", dest="min_hit_rate", type=finite_float,
                        default=0.995, metavar="RATE",
                        help="share of positives every stage keeps")
    parser.add_argument("-maxFalseAlarmRate", dest="max_false_alarm_rate",
                        type=finite_float, default=0.5,
                        metavar="RATE",
                        help="a stage is done once at most this share of negatives pass")
    parser.add_argument("-maxWeakCount", dest="max_stumps_per_stage",
                        type=bounded_int(1, 10_000), default=100,
                        metavar="N", help="the most stumps a stage may have (default 100)")
    parser.add_argument("-acceptanceRatioBreakValue", dest="acceptance_break",
                        type=finite_float, default=-1.0, metavar="RATIO",
                        help="stop too once the stages accept at most this share of the "
                             "windows mining scans (default -1: only -maxFalseAlarmRate to "
                             "the -numStages)")
    parser.add_argument("-featureType", default="HAAR", metavar="TYPE", help="HAAR only")
    parser.add_argument("-mode", default="BASIC", choices=("BASIC", "CORE", "ALL"),
                        help="BASIC and CORE: upright Haar features; ALL adds the tilted")
    parser.add_argument("-maxDepth", type=int, default=1, metavar="N", help="1 only: stumps")
    parser.add_argument("-precalcValBufSize", type=bounded_int(1, 10**7), default=1024,
                        metavar="MB", help="memory for the features, in MB (default 1024)")
    parser.add_argument("-numThreads", type=bounded_int(1, 1024),
                        metavar="N",
                        help="threads for boosting and mining (the model is the same on "
                             "any number)")
    for name, why in IGNORED_TRAIN_FLAGS.items():
        if name == "baseFormatSave":   # OpenCV's one flag without a value
            parser.add_argument(f"-{name}", action="store_const", const=True,
                                help=f"accepted and ignored: {why}")
        else:
            parser.add_argument(f"-{name}", metavar="VALUE",
                                help=f"accepted and ignored: {why}")
    parser.add_argument("--cost", type=parse_cost, default=(1.0, 1.0), metavar="CP,CN",
                        help="AdaBoostDB's costs of a missed positive and a false alarm "
                             "(default 1,1)")
    parser.add_argument("--heldout-negatives", dest="heldout_negatives",
                        type=field_type("heldout_negatives", CASCADE_LIMITS), metavar="N",
                        help="fresh negatives each stage mines beside its -numNeg and "
                             "measures -maxFalseAlarmRate on (default: none, on its own "
                             "negatives, as OpenCV does)")
    parser.add_argument("--hit-rate-on", dest="hit_rate_on", choices=HIT_RATE_ON,
                        default="held-out",
                        help="the positives whose -minHitRate sets each stage's threshold: "
                             "held-out ones (default: the rate the scanner meets), or each "
                             "stage's own training ones, as OpenCV sets it (faster, and the "
                             "cascade keeps fewer positives than the rate says)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.set_defaults(func=run_traincascade)


def run_traincascade(args: argparse.Namespace) -> int:
    from ._opencv_train import train_from_opencv_flags
    prog = getattr(args, "prog", "traincascade")
    if args.featureType.upper() != "HAAR":
        raise FacedetectError(f"-featureType {args.featureType[:20]}: only HAAR is "
                              "supported (LBP and HOG are not)")
    if args.maxDepth != 1:
        raise FacedetectError(f"-maxDepth {args.maxDepth}: only 1 (stumps) is supported")
    for name, why in IGNORED_TRAIN_FLAGS.items():
        if getattr(args, name) is not None:
            print(f"{prog}: note: -{name} is ignored: {why}", file=sys.stderr)
    if args.mode == "CORE":
        print(f"{prog}: note: -mode CORE trains the five upright Haar types, as BASIC "
              "does (CORE's centre-surround types are not in the pool)", file=sys.stderr)
    return train_from_opencv_flags(args, prog)
