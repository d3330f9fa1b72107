"""``facedetect export-opencv MODEL out.xml``: a cascade for ``cv2.CascadeClassifier``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..detector._export import export_opencv
from ..errors import FacedetectError
from ._common import check_writable, finite_float


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "export-opencv", help="write an OpenCV cascade XML",
        description="Write the model as a cascade that cv2.CascadeClassifier loads. A "
                    "one-stage model with learnt rejection is cut into stages at the "
                    "rejection levels and threshold chosen at training for "
                    "detectMultiScale's defaults (scale 1.1, 3 neighbours).")
    parser.add_argument("model", help="model file, or a shipped model: 'default' writes its "
                                      "Haar companion 'haar' (OpenCV cannot run channel "
                                      "features)")
    parser.add_argument("out", help="XML file to write")
    parser.add_argument("--threshold", type=finite_float,
                        help="the last stage's threshold: the detection threshold to bake "
                             "in (default: the model's own for OpenCV's scan, else the one "
                             "detect uses); the stages keep the levels learnt at training")
    parser.add_argument("--one-stage", action="store_true",
                        help="write a one-stage model as one stage of all its stumps, "
                             "which OpenCV evaluates in full at every window")
    parser.add_argument("--detect-levels", action="store_true",
                        help="cut the stages at the rejection levels detect uses, learnt "
                             "at its own threshold, instead of those learnt at the export's "
                             "(fewer faces, faster; add --threshold for the threshold "
                             "chosen with them, which the model does not record)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..detector._api import OPENCV_FORMS, load_model, model_path
    from ..detector._multiscale import box_mapping
    from ..detector._staging import exported_form
    companion = OPENCV_FORMS.get(args.model) if not Path(args.model).exists() else None
    source = model_path(companion or args.model)   # the file read: never written over
    model = load_model(source)
    out = check_writable(args.out, "out")
    if Path(out).resolve() == source.resolve():
        raise FacedetectError(f"out {args.out} is the model file itself: name another file")
    exported, threshold = exported_form(model, args.threshold, args.one_stage,
                                        args.detect_levels)
    levels = _levels_used(model, exported, args.detect_levels)
    export_opencv(exported, out, threshold)
    stages = len(exported.stages) if exported.stages else 1
    scale, shift = box_mapping(model)
    if companion:
        named = ("" if Path(out).stem == companion else
                 f" (a name such as {companion}.xml says what it holds)")
        print(f"{args.model} has channel features, which OpenCV cannot run: {out} holds the "
              f"shipped '{companion}' model, the same recipe on Haar features only{named}")
    print(f"wrote {out}: {stages} stage{'s' if stages > 1 else ''} of {exported.n_stumps} "
          f"stumps in all{_repeats(model, exported, stages)}{levels}, last stage threshold "
          f"{threshold:g}; face box: the window scaled by {scale:g} about its centre, moved "
          f"down {shift:g} of its side")
    if model.verifier is not None:
        print(f"{out} holds the one-stage model: OpenCV's cascade format cannot hold the "
              "verifier, so it runs as detect --no-verifier does")
    return 0


def _repeats(model, exported, stages: int) -> str:
    """Why a one-stage model's export holds more stumps than the model ('' where not)."""
    if exported.n_stumps <= model.n_stumps:
        return ""
    return (f" (the model's {model.n_stumps} stumps: OpenCV sums each stage from zero, so "
            f"each of the {stages} stages repeats the stumps before its cut)")


def _levels_used(model, exported, detect_levels: bool) -> str:
    """Where the written stages were cut, for the summary line ('' when not cut); a
    warning on stderr when ``--detect-levels`` changes nothing."""
    own = "rejection" in (model.detection.get("opencv") or {})
    if detect_levels and not (own and exported is not model):
        print("export-opencv: warning: --detect-levels changes nothing here: the model has "
              "no levels of its own for the export, or is written as it is",
              file=sys.stderr)
    if exported is model:
        return ""
    if own and not detect_levels:
        at = model.detection["opencv"]["rejection"]["at_threshold"]
        return f", cut at the levels learnt at {at:g}"
    return ", cut at detect's levels"
