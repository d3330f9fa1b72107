"""The paper reproduction: its tables as transcribed, and the quick run's invariants."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from facedetect.cli._main import main
from facedetect.reproduce._paper_figures import CBCL_TABLE, PAPER_COSTS
from facedetect.reproduce._paper import PaperConfig, run_paper
from facedetect.reproduce._paper_tables import (
    TABLES_FILE,
    paper_tables,
    parse_number,
    parse_paper_tables,
)
from facedetect.reproduce._report import write_paper_results
from facedetect.reproduce._tables import asymmetry_verdict, saving

PAPER_TEX = Path(__file__).resolve().parents[2] / "shared" / "paper" / "adaboostdb-paper.tex"


def test_parse_number_forms():
    assert parse_number(r"2.13$\cdot10^{-1}$") == pytest.approx(0.213)
    assert parse_number(r"\textbf{17.54\%}") == 17.54
    assert parse_number(r"\textbf{3244}") == 3244
    assert parse_number("0     ") == 0.0
    assert parse_number(r"\textbf{-}") is None


def test_shipped_tables_equal_the_latex_source():
    if not PAPER_TEX.is_file():
        pytest.skip(f"paper source not available at {PAPER_TEX}")
    assert parse_paper_tables(PAPER_TEX.read_text()) == json.loads(TABLES_FILE.read_text())


def test_tables_hold_hand_read_values():
    tables = paper_tables()
    runs = tables["time_cmp"]["runs"]
    assert runs["Spam"]["1,100"] == {"CS": [9637557, 6123.66], "DBN": [9637557, 4547.29],
                                     "DB": [23448, 20.50]}
    assert runs["Bayes"]["1,1"]["DB"] == [2320, 1.61]
    assert tables["time_cmp"]["improvement"]["Credit"]["CS->DB"] == [98.73, 98.54]
    assert tables["asym_perform"]["Credit"]["50,1"] == [0.0, 0.967, 0.677, 0.019]
    assert tables["diffs"]["TwoClouds"]["1,100"] == [0, 0, 0, 0]
    assert tables["asym_perform"]["Spam"]["100,1"][3] == pytest.approx(3.19e-2)
    for name in ("asym_perform", "diffs"):
        assert set(tables[name]) == {"Bayes", "TwoClouds", "Credit", "Ionosphere", "Diabetes",
                                     "Spam"}
        assert all(len(rows) == 19 for rows in tables[name].values())
    # Independently typed CBCL figures agree with the parsed ones.
    assert CBCL_TABLE[(1, 10)] == (0.278, 0.01, 0.144, 0.0343)
    assert len(CBCL_TABLE) == len(PAPER_COSTS) == 19


def test_paper_headline_is_what_the_tables_say():
    """The paper's "0.49% of CS's time" is the mean over data sets of DB/CS time."""
    improvement = paper_tables()["time_cmp"]["improvement"]
    mean_share = np.mean([100 - v["CS->DB"][1] for v in improvement.values()])
    assert mean_share == pytest.approx(0.485, abs=0.01)


def test_asymmetry_verdict_and_saving():
    costs = [(1, 10), (1, 1), (10, 1)]
    assert asymmetry_verdict(costs, [0.5, 0.2, 0.1], [0.01, 0.1, 0.4])[0] == "yes"
    assert asymmetry_verdict(costs, [0.1, 0.2, 0.5], [0.4, 0.1, 0.01])[0] == "no"
    assert saving(200.0, 1.0) == pytest.approx(99.5)
    assert saving(0, 1.0) is None


@pytest.fixture(scope="module")
def quick(uci_dir, tmp_path_factory):
    results = run_paper(PaperConfig.quick(uci_root=str(uci_dir)), progress=False)
    out = tmp_path_factory.mktemp("paper")
    return results, write_paper_results(results, out, "facedetect paper --quick"), out


def test_quick_run_writes_every_table_and_picture(quick):
    results, paths, out = quick
    for name in ("time_cmp.md", "time_cmp.csv", "asym_perform.md", "diffs.md", "bayes.md",
                 "summary.md", "bayes_envelopes.png", "results.json"):
        assert (out / name).stat().st_size > 0, name
    summary = (out / "summary.md").read_text()
    assert "paper: DB time / CS time" in summary and "0.33%" in summary  # paper's Bayes share
    assert json.loads((out / "results.json").read_text())["config"]["rounds"] == 10


def test_quick_run_db_equals_dbn_and_solves_far_fewer_roots(quick):
    results = quick[0]
    by_key = {(r.dataset, r.cost, r.fold, r.method): r for r in results["runs"]}
    for (dataset, cost, fold, method), run in by_key.items():
        if method != "db":
            continue
        exhaustive = by_key[(dataset, cost, fold, "dbn")]
        np.testing.assert_array_equal(run.stumps, exhaustive.stumps)
        assert run.roots < 0.1 * exhaustive.roots
    for name, figures in results["headline"].items():
        assert figures["roots_avoided_percent"] > 95, name


def test_quick_run_reproduces_the_asymmetry_and_the_credit_choice(quick):
    results = quick[0]
    for name, (verdict, rho_fn, rho_fp) in results["verdicts"].items():
        assert verdict == "yes", (name, rho_fn, rho_fp)
    credit = {row[0]: row for row in results["credit"].rows}
    assert credit["german"][1] == pytest.approx(0.3)
    assert credit["german"][2] < credit["australian"][2]  # FN error against the paper's
    _, _, areas = results["bayes"]
    assert 0 <= areas["db_vs_bayes"] < 0.05


def test_paper_cli_small_run_and_bad_input(uci_dir, tmp_path, capsys):
    out = tmp_path / "paper"
    code = main(["paper", "--uci", str(uci_dir), "--datasets", "german", "--costs", "1,10",
                 "--rounds", "3", "--folds", "2", "--repeats", "1", "--out-dir", str(out),
                 "--quiet"])
    assert code == 0
    assert (out / "asym_perform.csv").read_text().count("[1,10]") == 1
    assert main(["paper", "--datasets", "cifar", "--quiet"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown data set cifar" in err[0]


def test_quick_run_has_operating_point_rows_that_follow_the_costs(quick):
    """db-op and AdaMEC are method rows; at their operating points FN falls and FP rises
    as Cp/Cn grows on every data set (three costs: rho is -1/+1 or the run is wrong)."""
    results, _, out = quick
    assert "cost_response" in (out / "summary.md").read_text() or \
        (out / "cost_response.md").stat().st_size > 0
    for table in results["cost_response"]:
        rows = {row[0]: row for row in table.rows}
        assert set(rows) == {"db", "db-op", "adamec"}
        for method in ("db-op", "adamec"):
            assert rows[method][2] <= -0.9 and rows[method][3] >= 0.9, (table.dataset, rows)
        assert rows["db-op"][5] == 0.0   # its own gap
