"""Write the results of :func:`facedetect.reproduce._paper.run_paper`: tables, picture, JSON."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import numpy as np

from .._utils.atomic import atomic_write_text
from ._paper_figures import cost_key
from ._paper_tables import paper_tables
from ._tables import Table, asymmetry_verdict, cost_label

SHOWN_COSTS = [(1, 10), (1, 1), (10, 1)]


def _percent(value):
    return None if value is None else f"{value:.2f}%"


def _paper_headline(paper_name: str) -> dict:
    """The paper's own DB-vs-CS figures for one data set, totalled over its costs."""
    runs = paper_tables()["time_cmp"]["runs"].get(paper_name)
    if not runs:
        return {}
    cs = sum(r["CS"][1] for r in runs.values())
    db = sum(r["DB"][1] for r in runs.values())
    zeros_cs = sum(r["CS"][0] for r in runs.values())
    zeros_db = sum(r["DB"][0] for r in runs.values())
    return {"db_time_percent_of_cs": 100 * db / cs,
            "roots_avoided_percent": 100 * (1 - zeros_db / zeros_cs)}


def _burden_summary(results) -> Table:
    table = Table("Training burden, totals over all costs and folds",
                  ["data set", "pool", "CS roots", "CS s", "CS-vectorised s", "DBN roots",
                   "DBN s", "DB roots", "DB s", "DB time / CS time",
                   "paper: DB time / CS time", "roots avoided (DB vs CS)", "paper"])
    for data in results["datasets"]:
        figures = results["headline"][data.name]
        roots, seconds = figures["roots"], figures["seconds"]
        paper = _paper_headline(data.paper_name)
        table.rows.append([
            data.name, f"{data.X.shape[0]} x {data.pool}", roots.get("cs"), seconds.get("cs"),
            seconds.get("cs-vectorized"), roots.get("dbn"), seconds.get("dbn"), roots.get("db"),
            seconds.get("db"), _percent(figures.get("db_time_percent_of_cs")),
            _percent(paper.get("db_time_percent_of_cs")),
            _percent(figures.get("roots_avoided_percent")),
            _percent(paper.get("roots_avoided_percent"))])
    return table


def _improvement_summary(results) -> Table:
    table = Table("Improvement rows (percent saved; the paper's beside ours)",
                  ["data set", "step", "roots saved", "time saved", "paper roots saved",
                   "paper time saved"])
    for name, rows in results["improvement"].items():
        for step, roots, seconds, paper_roots, paper_seconds in rows:
            table.rows.append([name, step, _percent(roots), _percent(seconds),
                               _percent(paper_roots), _percent(paper_seconds)])
    return table


def _asymmetry_summary(results) -> Table:
    costs = [c for c in SHOWN_COSTS if tuple(c) in {tuple(x) for x in results["config"].costs}]
    header = ["data set", "verdict: FN falls, FP rises as Cp/Cn grows", "paper's table"]
    for cost in costs:
        header += [f"FN {cost_label(cost)}", f"FP {cost_label(cost)}",
                   f"paper FN {cost_label(cost)}", f"paper FP {cost_label(cost)}"]
    table = Table("Asymmetric behaviour of AdaBoostDB (held-out, means over folds)", header,
                  note="Verdict: Spearman's rho of FN and of FP against log(Cp/Cn) over the "
                       "trained costs; 'yes' when rho(FN) <= -0.8 and rho(FP) >= 0.8.")
    all_costs = results["config"].costs
    for asym in results["asym"]:
        name = asym.dataset
        data = next(d for d in results["datasets"] if d.name == name)
        verdict, rho_fn, rho_fp = results["verdicts"][name]
        paper = paper_tables()["asym_perform"].get(data.paper_name, {})
        paper_rows = [paper.get(cost_key(c)) for c in all_costs]
        theirs = "–"
        if all(paper_rows):
            p_verdict, p_fn, p_fp = asymmetry_verdict(all_costs, [r[0] for r in paper_rows],
                                                      [r[1] for r in paper_rows])
            theirs = f"{p_verdict} ({p_fn:+.2f}, {p_fp:+.2f})"
        row = [name, f"{verdict} ({rho_fn:+.2f}, {rho_fp:+.2f})", theirs]
        by_cost = {r[0]: r for r in asym.rows}
        for cost in costs:
            ours = by_cost[cost_label(cost)]
            row += [ours[1], ours[2], ours[5], ours[6]]
        table.rows.append(row)
    return table


def _diffs_summary(results) -> Table:
    table = Table("AdaBoostDB against Cost-Sensitive AdaBoost (means over costs)",
                  ["data set", "mean |dFN|", "mean |dFP|", "mean |dCE|", "mean |dNEC|",
                   "paper mean |dNEC|", "stumps differ DB/CS", ("rules differ from the same "
                   "weights"), "stumps differ CS/DB-loss"])
    for diffs in results["diffs"]:
        name = diffs.dataset
        rows = np.array([[np.nan if v is None else v for v in r[1:]] for r in diffs.rows],
                        dtype=float)
        mean = np.nanmean(rows, axis=0)
        table.rows.append([name, *mean[:4], mean[10], *mean[4:7]])
    return table


def _bayes_summary(results) -> str:
    if "bayes" not in results:
        return ""
    _, _, areas = results["bayes"]
    return ("Area between lower envelopes in cost space (PCF from 0 to 1): "
            f"DB vs Bayes-optimal **{areas['db_vs_bayes']:.4f}**, CS vs Bayes-optimal "
            f"{areas['cs_vs_bayes']:.4f}, DB vs CS {areas['db_vs_cs']:.4f}.\n")


def summary_markdown(results, command: str) -> str:
    config = results["config"]
    parts = [(f"Command: `{command}`  \nMachine: {results['machine']}  \n"
             f"Rounds {config.rounds}, {config.folds}-fold cross-validation, "
             f"{len(config.costs)} costs, times are medians of {config.repeats} repeat(s) per "
             f"model summed over costs and folds; whole run {results['seconds']:.0f} s.\n"),
             ("CS solves the candidates with a positive root (half of all: the other polarity "
             "has the mirrored loss); DBN solves every candidate, as the paper's DBN and CS "
             "did; DB solves only the candidates that pass the conditional test.\n")]
    for table in (_burden_summary(results), _improvement_summary(results),
                  _asymmetry_summary(results)):
        parts.append(table.markdown())
    if results["diffs"]:
        parts.append(_diffs_summary(results).markdown())
    for table in results.get("cost_response", []):
        parts.append(table.markdown())
    parts.append(results["credit"].markdown())
    if "bayes" in results:
        parts.append("### Bayes comparison\n\n" + _bayes_summary(results))
    return "\n".join(parts)


def write_paper_results(results, out_dir, command: str) -> dict:
    """Every table as markdown and CSV, the Bayes envelopes picture, summary and JSON."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    groups = {"time_cmp": results["time"], "asym_perform": results["asym"],
              "diffs": results["diffs"], "cost_response": results.get("cost_response", [])}
    if "bayes" in results:
        groups["bayes"] = [results["bayes"][0]]
    for name, tables in groups.items():
        if not tables:
            continue
        paths[name] = atomic_write_text(out_dir / f"{name}.md",
                                        "\n".join(t.markdown() for t in tables))
        atomic_write_text(out_dir / f"{name}.csv", "".join(
            f"# {t.title}\n{t.csv()}" for t in tables))
    summary = summary_markdown(results, command)
    paths["summary"] = atomic_write_text(out_dir / "summary.md", summary)
    if "bayes" in results:
        from ..plots import cost_space_figure
        _, families, _ = results["bayes"]
        labels = {"db": "AdaBoostDB", "cs": "Cost-Sensitive AdaBoost", "bayes": "Bayes-optimal"}
        paths["png"] = cost_space_figure({labels[k]: v for k, v in families.items()},
                                         out_dir / "bayes_envelopes.png",
                                         title="Bayes set: lower envelopes in cost space")
    paths["json"] = atomic_write_text(out_dir / "results.json",
                                      json.dumps(_as_json(results), indent=1) + "\n")
    return paths


def _as_json(results) -> dict:
    config = asdict(results["config"])
    return {"config": config, "machine": results["machine"], "seconds": results["seconds"],
            "headline": results["headline"],
            "verdicts": {k: list(v) for k, v in results["verdicts"].items()},
            "bayes_areas": results["bayes"][2] if "bayes" in results else None,
            "tables": {t.title: {"header": t.header, "rows": t.rows}
                       for t in results["time"] + results["asym"] + results["diffs"]
                       + results.get("cost_response", [])}}
