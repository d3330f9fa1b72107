"""Helpers the benchmarks share: machine description, peak memory, result files."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path

from facedetect._utils.sysinfo import (library_versions, machine,  # noqa: F401  (re-exported)
                                       peak_rss_gib)

RESULTS = Path(__file__).resolve().parent / "results"


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB."""
    return peak_rss_gib() * 1024


def timed(function, *args, repeat: int = 1, **kwargs):
    """(median seconds, last result) over ``repeat`` calls."""
    times, result = [], None
    for _ in range(repeat):
        result = None  # free the previous result so repeats do not stack up memory
        start = time.perf_counter()
        result = function(*args, **kwargs)
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2], result


def write_results(name: str, results: dict, markdown: str) -> None:
    """``benchmarks/results/NAME.json`` (``results``, with the libraries' versions where it
    does not say them) and ``NAME.md`` (``markdown``, also printed)."""
    RESULTS.mkdir(exist_ok=True)
    results = {**results, "versions": results.get("versions") or library_versions()}
    (RESULTS / f"{name}.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / f"{name}.md").write_text(markdown)
    print(markdown)


SHARED_DEV_IMAGES = (Path(__file__).resolve().parents[2] / "shared" / "datasets"
                     / "mit-cmu-dev")
# ./data/mit-cmu-dev where a user put the images as the README says; else the shared copy
DEV_IMAGES = next((folder for folder in (Path("data") / "mit-cmu-dev", SHARED_DEV_IMAGES)
                   if (folder / "bboxes.txt").is_file()), SHARED_DEV_IMAGES)


def wild_benchmark_parser(description: str, label: str, repeat: int):
    """The flags the wild-data benchmarks share: models, faces, development images,
    repeats and the results' label."""
    import argparse
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--models", default="default")
    parser.add_argument("--faces")
    parser.add_argument("--dev", default=str(DEV_IMAGES))
    parser.add_argument("--repeat", type=int, default=repeat)
    parser.add_argument("--label", default=label)
    return parser


def wild_data(faces: str | None):
    """``(faces read, held-out negative pictures)``, or exit saying what to set."""
    import os

    from facedetect.data import find_negatives, negative_files, split_negatives
    from facedetect.data import find_faces_folder, load_wild_faces
    folder = find_faces_folder(faces)
    negatives = find_negatives(os.environ.get("FACEDETECT_NEGATIVES"))
    if folder is None or negatives is None:
        raise SystemExit("set FACEDETECT_FACES and FACEDETECT_NEGATIVES (or --faces)")
    return (load_wild_faces(folder, warn=lambda line: None),
            split_negatives(negative_files(negatives))[1])


@contextlib.contextmanager
def one_core_busy():
    """A busy-loop process holding one core for the duration (the measurements 'with one
    core busy')."""
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        busy.kill()
        busy.wait()
