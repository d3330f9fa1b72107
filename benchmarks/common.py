"""Helpers the benchmarks share: machine description, peak memory, result files."""

from __future__ import annotations

import json
import time
from pathlib import Path

from facedetect.sysinfo import machine, peak_rss_gib  # noqa: F401  (re-exported)

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
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / f"{name}.md").write_text(markdown)
    print(markdown)
