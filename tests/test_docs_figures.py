"""Figures the docs quote from benchmark results files are those files' figures (the
README's own table has tests/test_readme_figures.py)."""

from __future__ import annotations

import json
import re
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

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


def _levers_row(levers: dict, path: str) -> list[str]:
    """A model's cells in a table of ``benchmarks.levers``: the MTFL + Caltech crops clean,
    grainy and posterised, UTKFace, Yale B, false alarms per Mpx and detect's time."""
    crops, alarms = levers["crops"][path], levers["false_alarms_per_mpx"][path]
    speed = levers["seconds_per_mpx"]
    cells = [f"{pooled(crops[kind]['by_source'], COMPARED):.3f}"
             for kind in ("clean", "grainy", "posterised")]
    cells += [f"{pooled(crops['clean']['by_source'], [s]):.3f}"
              for s in ("utkface", "extended-yale-b")]
    return cells + [f"{alarms['clean']:.3f}", f"{speed[path] / speed['OpenCV default']:.2f}x"]


def _check_levers_table(header_start: str, results: str, rows) -> None:
    """Each ``(row, model path)`` of detector-training.md's table under ``header_start``
    opens with that model's cells in the ``benchmarks.levers`` run ``results``."""
    table = _table("detector-training.md", header_start)
    levers = json.loads((RESULTS / results).read_text())
    for row, path in rows:
        assert table[row][:7] == _levers_row(levers, path), row


def test_the_tilted_feature_tables_are_the_benchmark_runs():
    levers = json.loads((RESULTS / "levers_tilted.json").read_text())
    curves = json.loads((RESULTS / "lever_curves_tilted.json").read_text())
    at_own_point = _table("detector-training.md", "| model | MTFL + Caltech | grainy | "
                                                  "posterised | UTKFace | Yale B | FA/Mpx "
                                                  "held-out | detect / OpenCV |")
    equal_alarms = _table("detector-training.md", "| held-out crops found at (FA/Mpx on "
                                                  "held-out pictures) |")
    # the run's first model was the basic-pool recipe, shipped until then
    for label, path in (("the recipe before", "facedetect/models/default.json"),
                        ("with tilted features", "data/models/tilted.json")):
        row = label + (" (basic pool)" if label.endswith("before") else "")
        assert at_own_point[row] == _levers_row(levers, path)
        assert equal_alarms[label] == [f"{recall_at(curves['curves'][path], a):.3f}"
                                       for a in ALARM_LEVELS]


# Every decimal figure of the docs, section by section. A section (the lines under one
# heading) names the results files its figures come from, and lists the figures that are
# not results (settings, inputs, the paper's own figures, runs whose files were not kept):
#   <!-- figures: levers_tilted.json, paper/summary.md -->
#   <!-- not from a results file: 1.75 1.1 (settings); 0.795 (an earlier run) -->

DOCS = sorted((REPO / "docs").glob("*.md"))
HEADING = re.compile(r"#{1,6} ")
# 0.45x, 93.2% and x1.39 are figures; 3.11.7 and 5.8e-7 are not
FIGURE = re.compile(r"(?<![A-Za-wyz\d_.])(\d+\.\d+)(?!\.?\d|[A-Za-wyz_])(%?)")
SOURCES = re.compile(r"<!--\s*figures:(.*?)-->", re.S)
EXEMPT = re.compile(r"<!--\s*not from a results file:(.*?)-->", re.S)


def _sections(text: str) -> list[tuple[str, str]]:
    """(heading, its line and the lines under it) pairs, '(top)' first; no line of a code
    block is a heading."""
    found, heading, lines, fenced = [], "(top)", [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and HEADING.match(line):
            found.append((heading, "\n".join(lines)))
            heading, lines = line.lstrip("#").strip(), []
        lines.append(line)
    found.append((heading, "\n".join(lines)))
    return found


def _written(text: str) -> set[str]:
    """The figures written in ``text``, bare and with their percent sign."""
    return {form for number, pct in FIGURE.findall(text) for form in (number, number + pct)}


def _forms(value: float) -> set[str]:
    """How a number may be quoted: 1 to 4 decimals, or a fraction as a percentage; a
    stored 0.0545 may read 0.055 (half up) as well as Python's 0.054."""
    exact = abs(Decimal(repr(float(value))))
    forms = set()
    for d in range(1, 5):
        for scaled, places, sign in ((exact, d, ""), (exact * 100, d - 1, "%")):
            forms.add(f"{float(scaled):.{places}f}{sign}")
            forms.add(f"{scaled.quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP)}{sign}")
    return forms


def _numbers(node) -> set[str]:
    """The quotable forms of every number (and figure in a string) of a JSON document."""
    if isinstance(node, dict):
        return set().union(set(), *map(_numbers, [*node.keys(), *node.values()]))
    if isinstance(node, list):
        return set().union(set(), *map(_numbers, node))
    if isinstance(node, str):
        return _written(node)
    if isinstance(node, (int, float)) and not isinstance(node, bool):
        return _forms(node)
    return set()


_KNOWN: dict[str, set[str]] = {}


def _known(name: str) -> set[str]:
    """The figures the results file ``name`` holds: its text, and its numbers' forms
    (every number of a .json, every numeric cell of a .csv)."""
    if name not in _KNOWN:
        text = (RESULTS / name).read_text(encoding="utf-8")
        if name.endswith(".json"):
            _KNOWN[name] = _numbers(json.loads(text))
        else:
            _KNOWN[name] = _written(text)
            for cell in re.split(r"[,\n]", text) if name.endswith(".csv") else ():
                try:
                    _KNOWN[name] |= _forms(float(cell))
                except ValueError:
                    pass
    return _KNOWN[name]


def _unsourced(heading: str, body: str) -> list[str]:
    """What is wrong with one section: figures in none of its results files and not listed
    as no result, listed figures it does not quote, no marker, or a marker naming no file."""
    sources = [name.strip() for found in SOURCES.findall(body)
               for name in found.split(",") if name.strip()]
    exempt = set()
    for found in EXEMPT.findall(body):
        exempt |= _written(re.sub(r"\([^)]*\)", " ", found))
    quoted = [number + pct for number, pct in
              FIGURE.findall(EXEMPT.sub(" ", SOURCES.sub(" ", body)))]
    if not quoted:
        return []
    if not sources and not EXEMPT.search(body):
        return [f"{heading!r}: {len(quoted)} figures and no marker"]
    missing = [name for name in sources if not (RESULTS / name).is_file()]
    if missing:
        return [f"{heading!r}: no results file {missing}"]
    known = set().union(exempt, *map(_known, sources))
    # "96.4-99.8%": a bare figure may be a percentage, and a percentage a bare figure
    wrong = [figure for figure in dict.fromkeys(quoted) if not
             {figure, figure.rstrip("%"), figure.rstrip("%") + "%"} & known]
    unused = sorted(exempt - {form for figure in quoted
                              for form in (figure, figure.rstrip("%"), figure + "%")})
    return ([f"{heading!r}: {wrong} not in {sources}"] if wrong else []) + (
        [f"{heading!r}: {unused} listed as not from a results file, not quoted"]
        if unused else [])


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_figure_comes_from_its_sections_results_files(doc):
    problems = [problem for heading, body in _sections(doc.read_text(encoding="utf-8"))
                for problem in _unsourced(heading, body)]
    assert not problems, f"docs/{doc.name}:\n" + "\n".join(problems)


def test_the_figure_check_finds_a_wrong_figure():
    body = ("<!-- figures: levers_tilted.md -->\n"
            "<!-- not from a results file: 1.75 (a setting) -->\n"
            "Framed 1.75 eye distances, it finds 0.950 of the crops, 0.951 grainy.\n")
    assert _unsourced("Tilted", body) == ["'Tilted': ['0.951'] not in ['levers_tilted.md']"]
    assert "no marker" in _unsourced("Bare", "It finds 0.950.")[0]
    assert "no results file" in _unsourced("Gone", "<!-- figures: gone.json -->\n0.950")[0]
    assert "not quoted" in _unsourced("Stale", "<!-- not from a results file: 1.5 -->\n1.75")[1]
    assert {"0.054", "0.055", "93.2%"} <= _forms(0.0545) | _forms(0.932)


def test_the_rounds_tables_are_the_benchmark_runs():
    """More rounds and the 0.25 target (2026-11-29): each row of both tables is its run's."""
    equal_alarms = _table("detector-training.md", "| held-out crops found at equal false "
                                                  "alarms (FA/Mpx on held-out pictures) |")
    _check_levers_table("| model (rounds, target) |", "levers_rounds1500_fa025.json",
                        (("900, 0.45 (shipped before)", "facedetect/models/default.json"),
                         ("1,200, 0.45", "data/models/rounds1200.json"),
                         ("1,500, 0.25 (the recipe now)", "data/models/rounds1500_fa025.json")))
    later = json.loads((RESULTS / "lever_curves_rounds1500_fa025.json").read_text())["curves"]
    first = json.loads((RESULTS / "lever_curves_rounds1200.json").read_text())["curves"]
    for label, curve in (("900 rounds", later["facedetect/models/default.json"]),
                         ("1,200 rounds", first["data/models/rounds1200.json"]),
                         ("1,500 rounds", later["data/models/rounds1500_fa025.json"])):
        read = [recall_at(curve, a) for a in ALARM_LEVELS]
        assert equal_alarms[label] == ["-" if r is None else f"{r:.3f}" for r in read]


def test_the_soft_rejection_tables_are_the_benchmark_runs():
    """Soft rejection on a fine grid (2026-11-29): both tables are their runs'."""
    depth = _table("detector-training.md", "| model | stumps a window | still running after 5")
    models = json.loads((RESULTS / "rejection_depth.json").read_text())["models"]
    for row, path in (("900 rounds (shipped until 2026-11-29 morning)", "/tmp/default900.json"),
                      ("1,500 rounds, quantile 0.02 (shipped until now)",
                       "/tmp/default1500.json"),
                      ("1,500 rounds, quantile 0.025 (the recipe now)",
                       "data/models/default_fine.json")):
        run = models[path]
        assert depth[row] == [f"{run['mean_stumps']:.2f}"] + [
            f"{run['running_after'][t]:.3f}" for t in ("5", "20", "100")] + [
            f"{run['share_in_first_20']:.2f}"]
    _check_levers_table("| model (soft-rejection quantile) |", "levers_fine.json",
                        (("default, quantile 0.02 (before)", "/tmp/default1500.json"),
                         ("default, quantile 0.025 (now)", "data/models/default_fine.json"),
                         ("haar, quantile 0.03 (before)", "/tmp/haar1500.json"),
                         ("haar, quantile 0.032 (now)", "data/models/haar_fine.json")))


def test_the_jitter_shift_tables_are_the_benchmark_runs():
    """Faces shifted further (2026-11-29): the held-out table is levers_shift's run, and
    the equal-alarm table reads its curves."""
    _check_levers_table("| model (largest shift) |", "levers_shift.json",
                        (("default (0.75 px, shipped)", "data/models/default_fine.json"),
                         ("default (1.5 px)", "data/models/default_shift.json"),
                         ("haar (0.75 px, shipped until now)", "data/models/haar_fine.json"),
                         ("haar (1.5 px, shipped)", "data/models/haar_shift.json")))
    curves = json.loads((RESULTS / "lever_curves_shift.json").read_text())["curves"]
    equal = _table("detector-training.md", "| model | crops, 0.75 px | crops, 1.5 px |")
    for row, alarms in (("default, our scan, at 0.2323 FA/Mpx", 0.2323),
                        ("default, our scan, at 0.1548 FA/Mpx", 0.1548)):
        read = [c["recall"][[round(a, 4) for a in c["alarms"]].index(alarms)]
                for c in (curves["facedetect/models/default.json"],
                          curves["data/models/default_shift.json"])]
        assert equal[row] == [f"{r:.4f}" for r in read]


def test_the_detect_scan_table_is_the_benchmark_run():
    """The operating points on the scans that run them (2026-11-29): levers_detect_scan's
    run, the image point chosen again on detect's own scan for the same stumps."""
    _check_levers_table("| model (image threshold) |", "levers_detect_scan.json",
                        (("default, chosen on the search scan (before)",
                          "facedetect/models/default.json"),
                         ("default, on detect's scan (now)", "data/models/exact_default.json"),
                         ("haar, chosen on the search scan (before)",
                          "facedetect/models/haar.json"),
                         ("haar, on detect's scan (now)", "data/models/exact_haar.json")))
