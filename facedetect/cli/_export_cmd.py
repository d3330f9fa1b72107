"""``facedetect export-opencv MODEL out.xml``: a cascade for ``cv2.CascadeClassifier``."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..detector._export import export_opencv
from ..errors import FacedetectError
from ._common import check_writable, finite_float


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "export-opencv", help="write an OpenCV cascade XML",
        description="Write the model as a cascade that cv2.CascadeClassifier loads. A "
                    "one-stage model with learnt rejection is cut into stages at its "
                    "rejection levels, with the threshold chosen at training for "
                    "detectMultiScale's defaults (scale 1.1, 3 neighbours).")
    parser.add_argument("model", help="model file, or a shipped model: 'default' writes its "
                                      "Haar companion 'haar' (OpenCV cannot run channel "
                                      "features)")
    parser.add_argument("out", help="XML file to write")
    parser.add_argument("--threshold", type=finite_float,
                        help="the last stage's threshold: the detection threshold to bake "
                             "in (default: the model's own for OpenCV's scan, else the one "
                             "detect uses)")
    parser.add_argument("--one-stage", action="store_true",
                        help="write a one-stage model as one stage of all its stumps, "
                             "which OpenCV evaluates in full at every window")
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
    exported, threshold = exported_form(model, args.threshold, args.one_stage)
    export_opencv(exported, out, threshold)
    stages = len(exported.stages) if exported.stages else 1
    scale, shift = box_mapping(model)
    if companion:
        print(f"{args.model} has channel features, which OpenCV cannot run: exporting the "
              f"shipped '{companion}' model, its recipe on Haar features only")
    print(f"wrote {out}: {stages} stage{'s' if stages > 1 else ''} of {exported.n_stumps} "
          f"stumps in all, last stage threshold {threshold:g}; face box: the window "
          f"scaled by {scale:g} about its centre, moved down {shift:g} of its side")
    return 0
