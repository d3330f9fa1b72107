"""Does ``--cost`` move the errors the way it says, at every number of rounds, on every
data set of ``facedetect paper``? The CBCL sweep's protocol on the paper's data sets.

Run: ``python -m benchmarks.cost_response [--uci DIR] [--rounds 10,50,200,400]``

Per data set, 19 costs and 3 folds: AdaBoostDB at the raw threshold 0 (trained on the
whole fold), AdaBoostDB at its operating point (80% of the fold, Platt on the other 20%,
Bayes cut), the same model at the least empirical cost, and calibrated AdaMEC; one
training at the largest round count gives the smaller ones. Reports Spearman's rho of FN
and FP against log(Cp/Cn) and the NEC differences (``benchmarks/results/cost_response.md``).
"""

from __future__ import annotations

import argparse
import time

from tqdm.auto import tqdm

from facedetect.training._splits import stratified_kfold
from facedetect.reproduce._paper_figures import PAPER_COSTS
from facedetect.reproduce._cbcl_sweep import Fold, fold_results
from facedetect.reproduce._cbcl_sweep_report import mean_table, summary
from facedetect.reproduce._datasets import ALL_DATASETS, load_experiment_data

from .common import machine, write_results


def run(uci, rounds, folds: int = 3, seed: int = 0) -> dict:
    found = {}
    for name in ALL_DATASETS:
        start = time.perf_counter()
        data = load_experiment_data(name, uci, seed=seed)
        rows = []
        bar = tqdm(total=folds * (2 * len(PAPER_COSTS) + 1), desc=name, leave=False)
        for k, (train, test) in enumerate(stratified_kfold(data.y, folds, seed=seed)):
            fold = Fold.from_matrix(data.X, data.y, train, test, 0.2, seed)
            rows += [dict(r, fold=k) for r in fold_results(fold, PAPER_COSTS, rounds, "root",
                                                           bar)]
        bar.close()
        found[name] = {"summary": summary(mean_table(rows), PAPER_COSTS, rounds),
                       "seconds": time.perf_counter() - start}
    return found


def markdown(results, rounds) -> str:
    lines = [f"Machine: {results['machine']}. 19 costs, 3 folds; rho against log(Cp/Cn); "
             "NEC differences are db-op minus the other (negative: db-op better), the worst "
             "over costs, and the costs where db-op is worse beyond 2 standard errors of the "
             "fold differences.", "",
             "| data set | rounds | method | rho FN | rho FP | vs db-raw: mean / worst / "
             "worse | vs db-emp | vs adamec |", "|---|---|---|---|---|---|---|---|"]
    for name, found in results["datasets"].items():
        for row in found["summary"]:
            cells = []
            for other in ("vs db-raw", "vs db-emp", "vs adamec"):
                d = row.get(other)
                cells.append(f"{d['mean']:+.4f} / {d['worst']:+.4f} / "
                             f"{d['worse_beyond_noise']}" if d else "")
            lines.append(f"| {name} | {row['rounds']} | {row['method']} | "
                         f"{row['rho_fn']:+.3f} | {row['rho_fp']:+.3f} | " + " | ".join(cells)
                         + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uci", default="../shared/datasets/uci")
    parser.add_argument("--rounds", default="10,50,200,400")
    args = parser.parse_args(argv)
    rounds = sorted(int(r) for r in args.rounds.split(","))
    results = {"machine": machine(), "rounds": rounds, "datasets": run(args.uci, rounds)}
    write_results("cost_response", results, markdown(results, rounds))
    return results


if __name__ == "__main__":
    main()
