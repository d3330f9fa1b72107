"""Figures the docs quote from benchmark results files are those files' figures (the
README's own table has tests/test_readme_figures.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from benchmarks.lever_curves import ALARM_LEVELS, recall_at
from benchmarks.wild_detectors import COMPARED, pooled

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"


def _table(doc: str, header_start: str) -> dict[str, list[str]]:
    """The rows of the markdown table whose header starts with ``header_start``, by their
    first cell (bold marks dropped)."""
    text = (REPO / "docs" / doc).read_text(encoding="utf-8")
    assert text.count(header_start) == 1, header_start
    lines = text[text.index(header_start):].splitlines()[2:]
    rows = {}
    for line in lines:
        if not line.startswith("|"):
            break
        cells = [c.strip().strip("*") for c in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


def test_the_tilted_feature_tables_are_the_benchmark_runs():
    levers = json.loads((RESULTS / "levers_tilted.json").read_text())
    curves = json.loads((RESULTS / "lever_curves_tilted.json").read_text())
    at_own_point = _table("detector-training.md", "| model | MTFL + Caltech | grainy | "
                                                  "posterised | UTKFace | Yale B | FA/Mpx "
                                                  "held-out | detect / OpenCV |")
    equal_alarms = _table("detector-training.md", "| held-out crops found at (FA/Mpx on "
                                                  "held-out pictures) |")
    speed = levers["seconds_per_mpx"]
    # the run's first model was the basic-pool recipe, shipped until then
    for label, path in (("the recipe before", "facedetect/models/default.json"),
                        ("with tilted features", "data/models/tilted.json")):
        crops, alarms = levers["crops"][path], levers["false_alarms_per_mpx"][path]
        expected = [f"{pooled(crops[kind]['by_source'], COMPARED):.3f}"
                    for kind in ("clean", "grainy", "posterised")]
        expected += [f"{pooled(crops['clean']['by_source'], [s]):.3f}"
                     for s in ("utkface", "extended-yale-b")]
        expected += [f"{alarms['clean']:.3f}", f"{speed[path] / speed['OpenCV default']:.2f}x"]
        row = label + (" (basic pool)" if label.endswith("before") else "")
        assert at_own_point[row] == expected
        assert equal_alarms[label] == [f"{recall_at(curves['curves'][path], a):.3f}"
                                       for a in ALARM_LEVELS]
