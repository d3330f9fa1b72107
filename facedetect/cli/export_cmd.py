"""``facedetect export-opencv MODEL out.xml``: a cascade for ``cv2.CascadeClassifier``."""

from __future__ import annotations

import argparse

from ..detector.detect import params_for
from ..detector.export import export_opencv
from .common import check_writable, finite_float
from ..detector.api import load_model


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("export-opencv", help="write an OpenCV cascade XML")
    parser.add_argument("model", help="model file, or 'default' or 'cascade' for a shipped "
                                      "model")
    parser.add_argument("out", help="XML file to write")
    parser.add_argument("--threshold", type=finite_float,
                        help="stage threshold: the detection threshold to bake in "
                             "(default: the one detect uses, the model's own)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    model = load_model(args.model)
    out = check_writable(args.out, "out")
    threshold = params_for(model, threshold=args.threshold).threshold
    export_opencv(model, out, threshold)
    stages = len(model.stages) if model.stages else 1
    print(f"wrote {out}: {stages} stage{'s' if stages > 1 else ''} of {model.n_stumps} "
          f"stumps in all, last stage threshold {threshold:g}")
    return 0
