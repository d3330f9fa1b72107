"""``facedetect calibrate MODEL --negatives DIR``: choose a model's image operating point
(and its OpenCV export's) again, on face-free calibration pictures, as training does."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..errors import FacedetectError
from ._common import check_writable, field_type


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "calibrate", help="choose a model's image operating point on face-free pictures",
        description="Choose the threshold detect uses (and the OpenCV export's, for a "
                    "model of Haar features) so that the model raises at most the target "
                    "false alarms per megapixel on the calibration part of the negative "
                    "pictures, running detect's own scan and OpenCV's: the step training "
                    "ends with. With --faces (and CBCL's data, found as train-detector "
                    "finds it), soft rejection is learnt again from the faces the model was "
                    "trained on and the choice is training's; without, the model keeps its "
                    "rejection levels and the search starts at its window threshold. A "
                    "model with a verifier gets its joint score's weight and threshold "
                    "chosen again as train-verifier chooses them (on the calibration "
                    "faces, --faces or found).")
    parser.add_argument("model", help="model file, or a shipped model's name")
    parser.add_argument("--negatives", metavar="DIR",
                        help="face-free pictures: their calibration part (a quarter of "
                             "those outside the held-out fifth, by name) is scanned "
                             "(default: found as train-detector finds them)")
    parser.add_argument("--target-false-alarms-per-megapixel", "--false-alarms",
                        dest="target_false_alarms_per_megapixel", metavar="RATE",
                        type=field_type("target_false_alarms_per_megapixel"),
                        help="false alarms per megapixel allowed (default: the model's "
                             "recorded target, else 0.25; a verifier's own recorded target "
                             "for the verifier's point)")
    parser.add_argument("--faces", metavar="DIR",
                        help="the faces from the wild the model was trained on: rebuild its "
                             "training faces to learn soft rejection as training did")
    parser.add_argument("--data", metavar="DIR",
                        help="CBCL's data the model was trained on (with --faces)")
    parser.add_argument("--out", metavar="FILE",
                        help="write the calibrated model here (default: write nothing, "
                             "report the point)")
    parser.add_argument("--json", action="store_true", help="print the points as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)


def _calibration_pictures(explicit) -> list:
    from ..data._negatives import (find_negatives, negative_files, split_negatives,
                                   split_training_negatives)
    folder = find_negatives(explicit)
    if folder is None:
        raise FacedetectError("no negative pictures found: give --negatives DIR (a folder "
                              "of face-free pictures)")
    pictures = split_training_negatives(split_negatives(negative_files(folder))[0])[1]
    if not pictures:
        raise FacedetectError(f"{folder}: no calibration picture among its pictures (one in "
                              "five outside the held-out fifth, by name): add pictures")
    return pictures


def _wild_faces(model, args, warn):
    """The faces from the wild: ``--faces``; for a model with a verifier, whose point is
    chosen on their calibration part, found as train-detector finds them (None where
    neither)."""
    from ..data._wild_faces import find_faces_folder, load_wild_faces
    if args.data and not args.faces:
        raise FacedetectError("--data rebuilds the training faces with --faces; give "
                              "both, or neither")
    folder = args.faces if model.verifier is None else find_faces_folder(args.faces)
    if folder is None and model.verifier is not None:
        raise FacedetectError("the model has a verifier, whose threshold is chosen on the "
                              "calibration faces too: give --faces DIR")
    return None if folder is None else load_wild_faces(folder, warn=warn,
                                                       progress=not args.quiet)


def _faces(model, args, faces):
    """``(held-out faces, training faces)`` rebuilt from the data (None, None without
    --faces)."""
    if not args.faces:
        return None, None
    from ..data._cbcl import load_cbcl
    from ..pipeline._recalibrate import training_faces_of
    return training_faces_of(model, load_cbcl(args.data), faces)


def _targets(model, rate: float | None) -> tuple[float, float]:
    """The one-stage and the verifier's rates: the one given for both, else each point's
    own recorded target (a verifier's may differ from the one-stage model's)."""
    from ..pipeline._config import TARGET_FALSE_ALARMS_PER_MEGAPIXEL
    if rate is not None:
        return rate, rate
    one_stage = (model.calibration.get("image", {}).get("target_false_alarms_per_megapixel")
                 or TARGET_FALSE_ALARMS_PER_MEGAPIXEL)
    verifier = (model.document.get("verifier") or {}).get("training") or {}
    return one_stage, verifier.get("target_false_alarms_per_megapixel") or one_stage


def run(args: argparse.Namespace) -> int:
    from ..detector._api import load_model, model_path
    from ..detector._calibrate import calibrate

    def warn(line):
        print(f"facedetect calibrate: {line}", file=sys.stderr)

    source = model_path(args.model)   # the file read: never written over
    model = load_model(source)
    out = check_writable(args.out, "--out") if args.out else None
    if out is not None and Path(out).resolve() == source.resolve():
        raise FacedetectError(f"--out {args.out} is the model file itself: name another "
                              "file")
    pictures = _calibration_pictures(args.negatives)
    target, verifier_target = _targets(model, args.target_false_alarms_per_megapixel)
    faces = _wild_faces(model, args, warn)   # refused before the work
    held, train = _faces(model.one_stage(), args, faces)
    calibrated = calibrate(model, pictures, float(target), faces=held, train_faces=train,
                           progress=not (args.quiet or args.json), warn=warn)
    if model.verifier is not None:   # its point is chosen again on the proposer's new one
        from ..pipeline._verifier import recalibrated_verifier
        calibrated, verified = recalibrated_verifier(
            calibrated, faces, pictures, float(verifier_target),
            progress=not (args.quiet or args.json))
    if out is not None:
        calibrated.save(out)
    detection, chosen = calibrated.detection, calibrated.calibration
    points = {"image": {"threshold": detection["threshold"], **{
        k: chosen["image"][k] for k in ("false_alarms_per_megapixel",
                                        "target_false_alarms_per_megapixel", "source")}}}
    if model.verifier is not None:
        points["verifier"] = verified
    if "opencv" in detection:
        points["opencv"] = {"threshold": detection["opencv"]["threshold"],
                            "false_alarms_per_megapixel":
                                chosen["opencv"]["false_alarms_per_megapixel"]}
    if args.json:
        print(json.dumps({"model": str(args.model), "out": None if out is None else str(out),
                          **points}, indent=2))
        return 0
    image = points["image"]
    print(f"image operating point: threshold {image['threshold']:g}, "
          f"{image['false_alarms_per_megapixel']:g} false alarms per megapixel (target "
          f"{image['target_false_alarms_per_megapixel']:g}) on {image['source']}")
    if "verifier" in points:
        print(f"with the verifier (what detect uses): kept when the score plus "
              f"{verified['weight']:g} x the verifier's passes {verified['threshold']:g} "
              f"({verified['calibration_recall']:.3f} of the calibration faces at "
              f"{verifier_target:g} false alarms per megapixel)")
    if "opencv" in points:
        print(f"OpenCV export: threshold {points['opencv']['threshold']:g}, "
              f"{points['opencv']['false_alarms_per_megapixel']:g} false alarms per megapixel"
              " in cv2.CascadeClassifier at its defaults")
    print(f"wrote {out}" if out is not None else "wrote nothing (--out FILE writes the "
          "calibrated model)")
    return 0
