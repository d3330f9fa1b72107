"""The paper's reported tables, transcribed from its LaTeX source.

The figures are facts from ``../shared/paper/adaboostdb-paper.tex``, not results of this
project. They ship as ``paper_tables.json`` (made by this module's ``main``); a test parses
the LaTeX again, where it is present, and checks the file equals it.

Tables: ``asym_perform`` (AdaBoostDB FN/FP/CE/NEC per data set and cost), ``diffs`` (mean
absolute DB-vs-CS difference), ``time_cmp`` (zeros and seconds of CS, DBN and DB, plus the
improvement rows) and ``cbcl``. Costs are keys ``"Cp,Cn"``.
"""

from __future__ import annotations

import argparse
import json
import re
from functools import lru_cache
from pathlib import Path

TABLES_FILE = Path(__file__).with_name("paper_tables.json")
LABELS = {"asym_perform": "asym_perform_tab", "diffs": "diffs_tab", "time_cmp": "time_cmp",
          "cbcl": "CBCL_table"}
_WRAPPERS = [re.compile(r"\\multirow\{\d+\}(?:\[\d+\])?\{\*\}\{((?:[^{}]|\{[^{}]*\})*)\}"),
             re.compile(r"\\multicolumn\{1\}\{[^}]*\}\{((?:[^{}]|\{[^{}]*\})*)\}"),
             re.compile(r"\\textbf\{([^{}]*)\}")]
_GROUP = re.compile(r"\\multicolumn\{(\d+)\}\{c\|\}\{\\textbf\{([^}]*)\}\}")
_COST = re.compile(r"^\[(\d+),(\d+)\]$")


def _table_body(tex: str, label: str) -> str:
    """The text of the table environment that holds ``\\label{label}``."""
    at = tex.index("\\label{" + label + "}")
    start = tex.rindex("\\begin{table", 0, at)
    return tex[start:at]


def _unwrap(cell: str) -> str:
    for _ in range(3):
        for pattern in _WRAPPERS:
            cell = pattern.sub(r"\1", cell)
    return cell.strip()


def parse_number(cell: str):
    """``2.13$\\cdot10^{-1}$`` -> 0.213, ``0`` -> 0.0, ``17.54\\%`` -> 17.54, ``-`` -> None."""
    cell = _unwrap(cell).replace("\\%", "").strip()
    if cell == "-":
        return None
    match = re.fullmatch(r"([-\d.]+)\$\\cdot10\^\{(-?\d+)\}\$", cell)
    if match:
        return float(f"{match.group(1)}e{match.group(2)}")
    return float(cell)


def _rows(body: str):
    for line in body.split("\\\\"):
        cells = [c for c in line.replace("\\hline", "").split("&")]
        if len(cells) > 1:
            yield [_unwrap(c) for c in cells]


def _groups(line: str) -> list[str]:
    return [name.replace(" ", "") for span, name in _GROUP.findall(line) if int(span) > 1]


def _parse_rate_tables(body: str, width: int = 4) -> dict:
    """Tables of FN/FP/CE/NEC blocks: ``{data set: {cost: [fn, fp, ce, nec]}}``."""
    tables: dict = {}
    names: list[str] = []
    for raw in body.split("\\\\"):
        if _groups(raw):
            names = _groups(raw)
            for name in names:
                tables.setdefault(name, {})
            continue
        cells = [_unwrap(c) for c in raw.replace("\\hline", "").split("&")]
        match = _COST.match(cells[0].strip()) if cells else None
        if not match:
            continue
        cost = f"{match.group(1)},{match.group(2)}"
        values = [parse_number(c) for c in cells[1:]]
        for i, name in enumerate(names):
            tables[name][cost] = values[i * width:(i + 1) * width]
    return tables


def _parse_time_table(body: str) -> dict:
    """``{data set: {cost: {method: [zeros, seconds]}}}`` plus ``"improvement"``."""
    header = next(line for line in body.split("\\\\") if _groups(line))
    names = _groups(header)
    table: dict = {name: {} for name in names}
    improvement: dict = {name: {} for name in names}
    cost = None
    for cells in _rows(body):
        first = cells[0]
        match = _COST.match(first)
        if match:
            cost = f"{match.group(1)},{match.group(2)}"
        elif first == "Impr":
            cost = "Impr"
        method = cells[1].replace("$\\rightarrow$", "->")
        if method not in ("CS", "DBN", "DB", "CS->DBN", "DBN->DB", "CS->DB"):
            continue
        values = [parse_number(c) for c in cells[2:]]
        for i, name in enumerate(names):
            pair = values[2 * i:2 * i + 2]
            if cost == "Impr":
                improvement[name][method] = pair
            else:
                table[name].setdefault(cost, {})[method] = pair
    return {"runs": table, "improvement": improvement}


def parse_paper_tables(tex: str) -> dict:
    """All four tables from the paper's LaTeX source."""
    cbcl = _parse_rate_tables(_table_body(tex, LABELS["cbcl"]))
    return {
        "source": "adaboostdb-paper.tex",
        "asym_perform": _parse_rate_tables(_table_body(tex, LABELS["asym_perform"])),
        "diffs": _parse_rate_tables(_table_body(tex, LABELS["diffs"])),
        "time_cmp": _parse_time_table(_table_body(tex, LABELS["time_cmp"])),
        "cbcl": cbcl["CBCL"],
    }


@lru_cache(maxsize=1)
def paper_tables() -> dict:
    """The shipped transcription (see the module docstring)."""
    return json.loads(TABLES_FILE.read_text())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="Transcribe the paper's tables to JSON.")
    parser.add_argument("tex", help="path of adaboostdb-paper.tex")
    args = parser.parse_args(argv)
    tables = parse_paper_tables(Path(args.tex).read_text())
    TABLES_FILE.write_text(json.dumps(tables, indent=1) + "\n")
    print(f"wrote {TABLES_FILE}")


if __name__ == "__main__":
    main()
