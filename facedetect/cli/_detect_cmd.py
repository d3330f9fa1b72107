"""``detect IMAGE... [--model M]`` (also ``facedetect detect``): faces in images."""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

from ..detector._params import DetectionParams
from ..errors import FacedetectError
from .._utils.files import DEFAULT_MAX_PIXELS, MAX_PIXELS_LIMITS
from .._utils.progress import progress_bar
from .._utils.threads import wait_passively
from ._common import (EXIT_FAILURE, bounded_int, check_writable, finite_float, standalone_main,
                     writable_folder)

DEFAULTS = DetectionParams()


def _parse_step(text: str):
    if text in ("auto", "refine"):
        return text
    try:
        step = int(text)
    except ValueError:
        step = 0
    if step < 1:
        raise argparse.ArgumentTypeError(f"--step must be a positive integer, 'auto' or "
                                         f"'refine', got {text!r}")
    return step


def add_scan_options(parser: argparse.ArgumentParser) -> None:
    """Scan flags. Left out, each comes from the model's image operating point (chosen at
    training on held-out data), or for a model without one from OpenCV's rule at the
    model's window threshold."""
    parser.add_argument("--model", help="model file, or a shipped model: 'default' (the "
                                        "default) or 'haar' (Haar features only)")
    parser.add_argument("--scale-factor", type=finite_float,
                        help=f"pyramid step (default: the model's, else "
                             f"{DEFAULTS.scale_factor})")
    parser.add_argument("--step", type=_parse_step,
                        help="window stride in pixels of each level; 'auto' to scan as "
                             "OpenCV does (stride 2 up to twice the window size, then 1; "
                             "no flat window; not the window after a first-stage "
                             "rejection); 'refine' for 2, "
                             "then 1 around every window near the threshold (default: the "
                             f"model's, else {DEFAULTS.step})")
    parser.add_argument("--min-size", type=int,
                        help=f"smallest window side in pixels (default: the model's, else "
                             f"{DEFAULTS.min_size})")
    parser.add_argument("--max-size", type=int, default=None,
                        help="largest window side in pixels (default: the image)")
    parser.add_argument("--threshold", type=finite_float,
                        help="score a window must exceed (default: the model's image "
                             "operating point, else its window threshold)")
    parser.add_argument("--min-neighbors", type=int,
                        help="windows a group needs beyond this (default: the model's, "
                             f"else {DEFAULTS.min_neighbors})")
    parser.add_argument("--neighbor-margin", type=finite_float,
                        help="windows scoring within this below --threshold count as "
                             "neighbours; a group needs one window above --threshold "
                             f"(default: the model's, else {DEFAULTS.neighbor_margin:g}, "
                             "OpenCV's rule)")
    parser.add_argument("--exact", action="store_true",
                        help="exact early rejection only: ignore the model's learnt "
                             "rejection thresholds (slower, no approximation)")


def detector_from(args, model=None, verifier: bool | None = None):
    """The prepared :class:`~facedetect.detector._api.Detector` for the flags given, the
    rest from the model (as ``facedetect.detect`` prepares it); ``verifier`` None: as
    ``--no-verifier`` says."""
    from ..detector._api import Detector   # the scanner's kernels load when a command runs
    if verifier is None:
        verifier = not getattr(args, "no_verifier", False)
    # A refused setting is an InvalidScanSetting naming its parameter: run_safely says it
    # as the flag that gave it.
    return Detector(model if model is not None else args.model, exact=args.exact,
                    max_pixels=getattr(args, "max_pixels", DEFAULT_MAX_PIXELS),
                    verifier=verifier,
                    scale_factor=args.scale_factor, step=args.step,
                    min_size=args.min_size, max_size=args.max_size,
                    threshold=args.threshold, min_neighbors=args.min_neighbors,
                    neighbor_margin=args.neighbor_margin)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("images", nargs="+", help="image files or folders")
    add_scan_options(parser)
    parser.add_argument("--no-verifier", action="store_true",
                        help="a model with a verifier: run its one-stage model alone, at "
                             "its own operating point (what export-opencv writes)")
    parser.add_argument("--output", help="annotated copy: a file (one image) or a folder")
    parser.add_argument("--max-pixels", type=bounded_int(*MAX_PIXELS_LIMITS["max_pixels"][1:3]),
                        default=DEFAULT_MAX_PIXELS, metavar="N",
                        help="refuse images above N pixels before decoding them "
                             f"(default {DEFAULT_MAX_PIXELS:,})")
    parser.add_argument("--json", action="store_true",
                        help="print detections as JSON: boxes to 0.1 pixel (the text output "
                             "rounds them to whole pixels)")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress bar over the pictures, no note while the scanner "
                             "compiles")
    parser.set_defaults(func=run)


def _output_names(files) -> dict:
    """``{input: annotated file name}``, unique: a.jpg and a.png do not share a_faces.png."""
    names, taken = {}, set()
    for path in files:
        name = f"{path.stem}_faces.png"
        if name in taken:
            name = f"{path.stem}_{path.suffix.lstrip('.')}_faces.png"
        number = 2
        while name in taken:
            name, number = f"{path.stem}_{number}_faces.png", number + 1
        taken.add(name)
        names[path] = name
    return names


def _output_place(args, files) -> tuple[Path | None, bool]:
    """``(path, is_folder)`` of ``--output``, checked (and a folder created) before any
    image is scanned: a folder when it is one, when several images are given or when it
    has no suffix; otherwise the one annotated file."""
    if not args.output:
        return None, False
    out = Path(args.output)
    inputs = {path.resolve(): path for path in files}
    if out.is_dir() or not out.suffix:
        names = _output_names(files)
        for path in files:   # an annotated copy must never replace an image still to read
            if (out / names[path]).resolve() in inputs:
                raise FacedetectError(f"--output: the annotated copy of {path} would replace "
                                      f"the input {inputs[(out / names[path]).resolve()]}; "
                                      "choose another folder")
        return writable_folder(out, "--output"), True
    if len(files) > 1:
        raise FacedetectError(f"--output: {len(files)} images need a folder, not the file "
                              f"{str(out)!r}")
    from ..detector._annotate import ANNOTATION_FORMATS
    if out.suffix.lower() not in ANNOTATION_FORMATS:
        raise FacedetectError(f"--output: cannot write an image as {out.suffix!r}; name the "
                              f"file with one of {', '.join(ANNOTATION_FORMATS)}")
    if out.resolve() in inputs:
        raise FacedetectError(f"--output: {out} is the input image; the annotated copy "
                              "needs another name")
    return check_writable(out, "--output"), False


def run(args: argparse.Namespace) -> int:
    wait_passively()   # scanning beside other work: see facedetect._utils.threads
    detector = detector_from(args)
    prog = getattr(args, "prog", "detect")
    if detector.model.image_point is None and args.threshold is None:
        import warnings
        warnings.warn("this model has no image operating point (trained with --no-bootstrap "
                      f"or without negative pictures): scanning at its window threshold "
                      f"{detector.params.threshold:g}; --threshold sets another")
    files = _input_files(args.images, prog)
    created = args.output is not None and not Path(args.output).exists()
    output, is_folder = _output_place(args, files)
    # Compiled once, after the first picture is read: a picture refused at its edge (too
    # many pixels, no picture at all) is one line, with no compile notice before it.
    compile_once = functools.cache(lambda: _compile_scanner(detector, prog, args.quiet))
    failures, report, names = 0, [], _output_names(files)
    for path in progress_bar(files, desc="pictures", unit="picture", leave=False,
                             disable=args.quiet or len(files) < 2):
        out = output / names[path] if is_folder else output
        picture, failed = _detect_one(path, detector, args, out, prog, compile_once)
        failures += failed
        if picture is None:
            continue
        report.append(picture)
        if not args.json:
            _print_picture(picture)
    if args.json:
        print(json.dumps(report, indent=2))
    if created and is_folder and not any(output.iterdir()):
        output.rmdir()   # every image failed: leave no empty folder behind
    return EXIT_FAILURE if failures else 0


def _input_files(images: list[str], prog: str) -> list[Path]:
    """The pictures named, folders expanded; what a folder held that is no picture file
    is said in one line."""
    from ..images import expand_inputs
    skipped: list = []
    files = expand_inputs(images, skipped)
    if skipped:
        first = ", ".join(f"{path.name} ({why})" for path, why in skipped[:3])
        more = f" and {len(skipped) - 3} more" if len(skipped) > 3 else ""
        print(f"{prog}: skipped {len(skipped)} entr{'y' if len(skipped) == 1 else 'ies'} "
              f"named like pictures that are no files: {first}{more}", file=sys.stderr)
    if not files:
        raise FacedetectError("no images found in " + ", ".join(images))
    return files


# A first scan slower than this is the scanner being compiled (numba, once per machine:
# later runs load it from the cache), which is said rather than billed to a picture.
COMPILE_NOTICE_SECONDS = 1.0
COMPILE_NOTICE = "{prog}: compiling the scanner (once: later runs load it from the cache)..."


def _compile_scanner(detector, prog: str, quiet: bool) -> None:
    """Scan a blank picture once before the real ones, saying so if it takes a while."""
    import threading

    import numpy as np

    width, height = detector.model.window
    notice = threading.Timer(COMPILE_NOTICE_SECONDS, lambda: print(
        COMPILE_NOTICE.format(prog=prog), file=sys.stderr, flush=True))
    if not quiet:
        notice.start()
    try:
        detector.find(np.zeros((2 * height, 2 * width), np.uint8))
    except FacedetectError:
        pass   # a setting no window meets: each picture says so itself
    finally:
        notice.cancel()


def _detect_one(path: Path, detector, args, out: Path | None, prog: str, before_scan):
    """``(picture's report or None, failed)``: its boxes, and its annotated copy where one
    is asked for; ``before_scan`` runs once the picture is read, before it is scanned.
    A picture that cannot be read is left out; one whose copy cannot be written (a full
    disk) keeps its boxes, and the run goes on to the next."""
    from ..detector._annotate import annotate
    from ..images import read_colour, read_grey
    try:
        grey = read_grey(path, args.max_pixels)
        before_scan()
        found = detector.find(grey, str(path))
    except FacedetectError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return None, True
    faces = [{"box": [round(float(v), 1) for v in box], "score": round(float(score), 3),
              "neighbors": int(n)}
             for box, score, n in zip(found.boxes, found.scores, found.neighbors)]
    picture = {"image": str(path), "width": grey.shape[1], "height": grey.shape[0],
               "faces": faces, "windows": found.scanned, "seconds": round(found.seconds, 3)}
    if out is None:
        return picture, False
    try:   # drawn on the picture in its own colours
        colour = read_colour(path, args.max_pixels)
        annotate(grey if colour is None else colour, found.boxes, found.scores, out)
    except (OSError, FacedetectError) as error:
        reason = getattr(error, "strerror", None) or error
        print(f"{prog}: error: {out}: cannot write the annotated copy ({reason})",
              file=sys.stderr)
        return dict(picture, annotated=None), True
    return dict(picture, annotated=str(out)), False


def _print_picture(picture: dict) -> None:
    print(f"{picture['image']}: {len(picture['faces'])} face(s) in {picture['seconds']:.2f} s "
          f"({picture['windows']:,} windows)")
    for face in picture["faces"]:
        x, y, w, h = face["box"]
        print(f"  x={x:.0f} y={y:.0f} w={w:.0f} h={h:.0f} score={face['score']:.2f}")
    if picture.get("annotated"):
        print(f"  annotated: {picture['annotated']}")


def add_parser(subparsers) -> None:
    configure(subparsers.add_parser(
        "detect", help="find faces in images: print their boxes or draw them"))


def main(argv=None) -> int:
    return standalone_main("detect", "Find faces in images.", configure, argv)


if __name__ == "__main__":
    sys.exit(main())
