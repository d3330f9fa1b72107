"""``facedetect show MODEL --out features.png``: the first selected features on the mean
face, framed as the model's window frames a face."""

from __future__ import annotations

import argparse

import numpy as np

from ..errors import FacedetectError
from ._common import check_writable


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("show", help="draw a model's first Haar features on the "
                                                "mean CBCL face, framed as its window")
    parser.add_argument("model", help="model file, or a shipped model: 'default' or 'haar'")
    parser.add_argument("--out", default="features.png", help="PNG to write (features.png)")
    parser.add_argument("--count", type=int, default=10, help="features to draw (default 10)")
    parser.add_argument("--data", help="CBCL data for the mean face (a grey gradient if absent)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..data import load_cbcl
    from ..data._cbcl import framed_windows
    from ..detector._api import load_model
    from ..plots import draw_haar_features
    check_writable(args.out, "--out")
    model = load_model(args.model)
    if args.count < 1:
        raise FacedetectError("--count must be at least 1")
    width, height = model.window
    try:
        data = load_cbcl(args.data)
        faces = data.images[data.labels == 1]
        # CBCL's 19x19 faces cut as the model's window frames a face (24x24 at 2.2 eye
        # distances for the shipped model): the features then sit where they look.
        background = framed_windows(faces, np.ones(len(faces), int), (width, height),
                                    model.framing).mean(axis=0)
    except FacedetectError:
        if args.data:
            raise
        background = np.tile(np.linspace(80, 180, width), (height, 1))
    count = min(args.count, model.n_stumps)
    # A channel feature is drawn as its rectangle, named by its channel.
    from ..haar._channels import CHANNEL_TYPES
    labels = [f"#{i + 1} a={model.alphas[i]:.2f}"
              + (f" {CHANNEL_TYPES[c][8:]}" if c >= 0 else "")
              for i, c in zip(range(count), model.channels)]
    path = draw_haar_features(background, model.rects[:count], args.out, labels=labels,
                              tilted=model.tilted[:count])
    print(f"wrote {path} ({count} features)")
    return 0
