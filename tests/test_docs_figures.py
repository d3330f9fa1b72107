"""Figures the docs quote from benchmark results files are those files' figures (the
README's own table has tests/test_readme_figures.py)."""

from __future__ import annotations

import json
import re
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"


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
