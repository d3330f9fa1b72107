"""A probe, not the recipe: ``train-detector`` with the faces' jitter shifting them further.

The recipe's jittered faces move at most ``MAX_SHIFT`` pixels (0.75) either way
(:mod:`facedetect.pipeline._augment`). OpenCV's ``detectMultiScale`` scores every second
window up to twice the trained size, so a face can sit a pixel off every window it scores
(docs/cascades.md). This trains the recipe with a larger shift, everything else as
``train-detector`` takes it from the command line, so that its held-out curves can be
compared (``python -m benchmarks.lever_curves``).

Run: ``python -m benchmarks.shift_probe --max-shift 1.5 -- --cost 1,10 --no-channels
--out data/models/haar_shift15.json --quiet``
"""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-shift", type=float, default=1.5)
    parser.add_argument("train_args", nargs=argparse.REMAINDER,
                        help="after --: train-detector's own arguments")
    args = parser.parse_args(argv)
    if not 0 <= args.max_shift <= 4:
        parser.error("--max-shift must be within 0..4 pixels")
    import facedetect.pipeline._augment as augment
    from facedetect.cli._launch import train_detector
    augment.MAX_SHIFT = args.max_shift
    train_args = args.train_args[1:] if args.train_args[:1] == ["--"] else args.train_args
    sys.argv = ["train-detector", *train_args]
    return train_detector()


if __name__ == "__main__":
    sys.exit(main())
