"""``facedetect traincascade``'s work: OpenCV's inputs read, the cascade trained as
``train-detector --stages`` trains it, and OpenCV's outputs written in ``-data``.

OpenCV writes ``params.xml`` (the training's settings), ``stageN.xml`` (each stage as it
is trained, for its resume) and ``cascade.xml`` (the whole). These are the same three, cut
from the one exported cascade; beside them, ``cascade.json`` is the facedetect model that
``detect`` and ``export-opencv`` read.
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from .._utils.atomic import atomic_write_text, exclusive_output
from .._utils.files import read_bounded
from .._utils.threads import numba_threads
from ..errors import FacedetectError

MAX_LIST_BYTES = 64 << 20
CONTINUED = ", continuing the interrupted run its checkpoint held"
MAX_LIST_PICTURES = 1_000_000


def read_bg_list(path: str | Path) -> list[Path]:
    """The pictures of an OpenCV ``bg.txt``: one path a line, ``#`` lines skipped, paths
    relative to the working folder (OpenCV hands each line to ``imread`` as it is).

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "bg.txt").write_text("# negatives\\nneg/a.jpg\\n\\nneg/b.jpg  \\n")
    >>> [str(p) for p in read_bg_list(folder / "bg.txt")]
    ['neg/a.jpg', 'neg/b.jpg']
    """
    path = Path(path)
    try:
        text = read_bounded(path, MAX_LIST_BYTES, "a bg list").decode("utf-8-sig")
    except FileNotFoundError:
        raise FacedetectError(f"-bg {path}: no such file") from None
    except IsADirectoryError:
        raise FacedetectError(f"-bg {path}: is a folder, not a list of pictures") from None
    except UnicodeDecodeError as error:
        raise FacedetectError(f"-bg {path}: not a UTF-8 text file ({error.reason})") from None
    lines = [line.strip() for line in text.splitlines()]
    pictures = [Path(line) for line in lines if line and not line.startswith("#")]
    if not pictures:
        raise FacedetectError(f"-bg {path}: lists no pictures")
    if len(pictures) > MAX_LIST_PICTURES:
        raise FacedetectError(f"-bg {path}: {len(pictures):,} pictures, more than "
                              f"{MAX_LIST_PICTURES:,}")
    return pictures


def _negatives(bg: str, prog: str):
    """The listed pictures that exist, as a NegativeSet; the missing are said in a line."""
    from ..data._negatives import fingerprint
    from ..pipeline._bootstrap import NegativeSet
    listed = read_bg_list(bg)
    found = [p for p in listed if p.is_file()]
    if not found:
        raise FacedetectError(f"-bg {bg}: none of its {len(listed):,} pictures is a file "
                              f"(the first: {listed[0]}; paths are relative to the working "
                              "folder, as OpenCV reads them)")
    if len(found) < len(listed):
        missing = [str(p) for p in listed if not p.is_file()]
        print(f"{prog}: warning: {len(missing):,} of the {len(listed):,} pictures of {bg} "
              f"are missing and skipped (the first: {missing[0]})", file=sys.stderr)
    return NegativeSet(found, [], str(bg), fingerprint(found))


def _positives(args):
    import numpy as np

    from ..data._positives import PositiveSet
    from ..data._vec import read_vec
    images = read_vec(args.vec, (args.w, args.h))
    if not len(images):
        raise FacedetectError(f"-vec {args.vec}: holds no samples")
    names = [f"{Path(args.vec).name}#{k}" for k in range(len(images))]
    return PositiveSet(np.ascontiguousarray(images), names, str(args.vec))


def train_from_opencv_flags(args: argparse.Namespace, prog: str) -> int:
    from ..detector._export import export_opencv
    from ..detector._staging import exported_form
    from ..pipeline._cascade_train import train_cascade
    from ..pipeline._config import TrainConfig
    from ..pipeline._settings import CascadeConfig, RunOptions
    data = Path(args.data)
    if data.exists() and not data.is_dir():
        raise FacedetectError(f"-data {args.data}: not a folder")
    if args.acceptance_break >= 1:
        raise FacedetectError(f"-acceptanceRatioBreakValue {args.acceptance_break:g}: must "
                              "be below 1 (or at most 0 for none)")
    # OpenCV stops at either ratio: one target, the larger
    target = (max(args.max_false_alarm_rate ** args.stages, args.acceptance_break)
              if args.acceptance_break > 0 else None)
    cascade = CascadeConfig(stages=args.stages, min_hit_rate=args.min_hit_rate,
                            max_false_alarm_rate=args.max_false_alarm_rate,
                            max_stumps_per_stage=args.max_stumps_per_stage,
                            negatives_per_stage=args.negatives_per_stage,
                            positives_per_stage=args.positives_per_stage,
                            heldout_negatives=args.heldout_negatives,
                            hit_rate_on=args.hit_rate_on,
                            # OpenCV's rules at -maxWeakCount and for stopping
                            keep_capped_stages=True, acceptance_target=True,
                            target_false_alarm_rate=target)
    cascade.check()
    config = TrainConfig(cost=args.cost, window=(args.w, args.h), tilted=args.mode == "ALL",
                         channels=False)
    positives, negatives = _positives(args), _negatives(args.bg, prog)
    data.mkdir(parents=True, exist_ok=True)
    out = data / "cascade.json"
    options = RunOptions(memory=args.precalcValBufSize * 2**20,
                         log=(lambda *a, **k: None) if args.quiet else
                         (lambda *a, **k: print(*a, file=sys.stderr, **k)))
    checkpoint = Path(str(out) + ".checkpoint.json")
    # -numThreads is this run's alone: main() may be called as a function
    with exclusive_output(out), numba_threads(args.numThreads):
        continued = checkpoint.is_file()
        result = _train_or_continue(train_cascade, (config, cascade, positives), negatives,
                                    out, checkpoint if continued else None, args, options)
    exported, threshold = exported_form(result.model)
    xml = export_opencv(exported, data / "cascade.xml", threshold)
    written = write_params_and_stages(xml, data)
    stages = result.model.document["training"]["cascade_stages"]
    plural = "s" if len(stages) != 1 else ""
    print(f"wrote {xml}: {len(stages)} stage{plural}, {result.model.n_stumps} stumps, in "
          f"{result.seconds:.0f} s{CONTINUED if continued else ''} ({result.stop_reason}); "
          f"beside it params.xml, {written} stageN.xml and cascade.json (the facedetect "
          "model)")
    return 0


def _train_or_continue(train_cascade, inputs: tuple, negatives, out: Path,
                       checkpoint: Path | None, args: argparse.Namespace, options):
    """Train, or, as OpenCV continues from the stage files it finds in ``-data``, continue
    the interrupted run whose ``checkpoint`` is there (the same flags and files, else one
    line)."""
    from ..errors import CheckpointMismatch, InterruptedRun, UnusableCheckpoint
    try:
        return train_cascade(*inputs, negatives=negatives, out=out, resume=bool(checkpoint),
                             progress=not args.quiet, options=options)
    except CheckpointMismatch:
        raise FacedetectError(f"-data {args.data}: {checkpoint.name} is an interrupted run "
                              "with other flags or files; give those to continue it, or "
                              "delete it to start again") from None
    except UnusableCheckpoint as error:
        raise FacedetectError(f"-data {args.data}: {checkpoint.name} cannot be continued "
                              f"({error.reason}); delete it to start again") from None
    except InterruptedRun as interrupted:
        if not interrupted.hint:   # nothing saved to go on from
            raise
        raise InterruptedRun(interrupted.saved, "run the same command again to continue"
                             ) from None


def write_params_and_stages(cascade_xml: Path, folder: Path) -> int:
    """``params.xml`` and ``stage0.xml``... as OpenCV's trainer leaves them, cut from the
    cascade; returns the number of stage files."""
    root = ElementTree.parse(cascade_xml).getroot().find("cascade")
    params = ElementTree.Element("params")
    for child in root:
        if child.tag == "stageNum":
            break
        params.append(child)
    atomic_write_text(folder / "params.xml", _storage(params))
    stages = list(root.find("stages"))
    for k, stage in enumerate(stages):
        stage.tag = f"stage{k}"
        atomic_write_text(folder / f"stage{k}.xml", _storage(stage))
    return len(stages)


def _storage(element) -> str:
    return ('<?xml version="1.0"?>\n<opencv_storage>\n'
            + ElementTree.tostring(element, encoding="unicode") + "\n</opencv_storage>\n")
