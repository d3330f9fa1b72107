"""``facedetect paper``: reproduce the paper's synthetic and UCI experiments.

Writes, under the output folder: ``time_cmp.md/.csv``, ``asym_perform.md/.csv``,
``diffs.md/.csv``, ``bayes.md/.csv``, ``bayes_envelopes.png``, ``credit.md``,
``summary.md`` (the headline figures) and ``results.json``.
"""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import numba
import numpy as np
from .._utils.progress import progress_bar

from ._paper_figures import PAPER_COSTS
from .._utils.sysinfo import machine
from ._bayes import bayes_comparison
from ._datasets import ALL_DATASETS, load_experiment_data
from ._experiment import METHODS, run_dataset, warm_up
from ._tables import (
    asym_table,
    cost_response_table,
    asymmetry_verdict,
    credit_match,
    diffs_table,
    group_runs,
    improvement_rows,
    mean_final,
    pair_differences,
    time_table,
    totals,
)

QUICK_COSTS = [(1, 10), (1, 1), (10, 1)]


@dataclass(kw_only=True)
class PaperConfig:
    """What to run. The defaults are the full run; :meth:`quick` is the CI run.

    Parameters
    ----------
    datasets : tuple of str
        Synthetic and UCI sets by name.
    costs : list of (float, float)
        The cost pairs; the paper's 19 by default.
    rounds, folds, repeats : int
        Boosting rounds, cross-validation folds and repetitions.
    methods : tuple of str
        The algorithms compared.
    seed : int
        Seeds the folds.
    uci_root : str, optional
        Where the UCI files are.
    threads, jobs : int
        numba threads per process, and data sets trained at once.

    See Also
    --------
    run_paper : run it.

    Examples
    --------
    >>> config = PaperConfig.quick(datasets=("bayes",))
    >>> config.rounds, config.datasets
    (10, ('bayes',))
    """

    datasets: tuple = ALL_DATASETS
    costs: list = field(default_factory=lambda: list(PAPER_COSTS))
    rounds: int = 50
    folds: int = 3
    repeats: int = 3
    methods: tuple = tuple(METHODS)
    seed: int = 0
    uci_root: str | None = None
    threads: int = 1    # numba threads per process: every method gets one core
    jobs: int = 1       # data sets trained at the same time, one process each

    @classmethod
    def quick(cls, **overrides) -> PaperConfig:
        settings = {"costs": list(QUICK_COSTS), "rounds": 10, "repeats": 1}
        settings.update(overrides)
        return cls(**settings)


def _run_one(name: str, config: PaperConfig, progress: bool):
    """One data set, every method, in this process (after a warm-up compile)."""
    numba.set_num_threads(min(config.threads, numba.config.NUMBA_NUM_THREADS))
    warm_up(config.methods)
    data = load_experiment_data(name, config.uci_root, seed=config.seed)
    runs, disagreement = run_dataset(data, config.costs, config.methods,
                                     rounds=config.rounds, folds=config.folds,
                                     repeats=config.repeats, seed=config.seed,
                                     progress=progress)
    return data, runs, disagreement


def run_paper(config: PaperConfig, progress: bool = True) -> dict:
    """Train everything; returns the tables and headline figures (nothing written).

    Parameters
    ----------
    config : PaperConfig
    progress : bool
        Progress bars on stderr.

    Returns
    -------
    dict
        The runs, the paper's comparisons (``"diffs"``, ``"verdicts"``, ...), the
        ``"headline"`` figures and the settings, for :mod:`._report`.

    Raises
    ------
    FacedetectError
        CBCL or UCI data that cannot be found or read.

    See Also
    --------
    PaperConfig : its settings.

    Examples
    --------
    >>> result = run_paper(PaperConfig.quick(datasets=("bayes",), costs=[(1, 2)],
    ...                                      methods=("db",)), progress=False)
    >>> "headline" in result and "verdicts" in result
    True
    """
    started = time.perf_counter()
    for name in config.datasets:  # fail on missing data before any training
        load_experiment_data(name, config.uci_root, seed=config.seed)
    if config.jobs > 1:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(config.jobs, mp_context=context) as pool:
            futures = [pool.submit(_run_one, name, config, False) for name in config.datasets]
            done = [f.result()
                    for f in progress_bar(futures, desc="data sets", disable=not progress)]
    else:
        done = [_run_one(name, config, progress) for name in config.datasets]
    datasets = [d for d, _, _ in done]
    runs = [run for _, found, _ in done for run in found]
    disagreement = {d.name: found for d, _, found in done}
    grouped = group_runs(runs)
    results = {"config": config, "machine": machine(), "datasets": datasets, "runs": runs,
               "time": [], "improvement": {}, "asym": [], "verdicts": {}, "diffs": [],
               "cost_response": [], "headline": {}}
    for data in datasets:
        results["time"].append(time_table(data, config.costs, grouped))
        results["improvement"][data.name] = improvement_rows(data, config.costs, grouped)
        results["asym"].append(asym_table(data, config.costs, grouped))
        finals = [mean_final(grouped[(data.name, tuple(c), "db")]) for c in config.costs]
        results["verdicts"][data.name] = asymmetry_verdict(
            config.costs, [f[0] for f in finals], [f[1] for f in finals])
        results["cost_response"].append(cost_response_table(data, config, grouped))
        if "cs" in config.methods:
            results["diffs"].append(diffs_table(data, config.costs, grouped, disagreement))
        results["headline"][data.name] = headline(data, config, grouped, disagreement)
    results["credit"] = credit_match(config.costs, grouped, {
        d.name: d.prior_positive for d in datasets if d.paper_name == "Credit"})
    if "bayes" in config.datasets and "cs" in config.methods:
        results["bayes"] = bayes_comparison(config.costs, grouped)
    results["seconds"] = time.perf_counter() - started
    return results


def headline(data, config, grouped, disagreement) -> dict:
    """Roots and time of DB against CS and vectorised CS; DB/CS disagreement."""
    found = {m: totals(data, config.costs, grouped, m) for m in config.methods}
    figures = {"roots": {m: v[0] for m, v in found.items()},
               "seconds": {m: v[1] for m, v in found.items()}}
    if "cs" in found and "db" in found:
        figures["db_time_percent_of_cs"] = 100 * found["db"][1] / found["cs"][1]
        figures["roots_avoided_percent"] = 100 * (1 - found["db"][0] / found["cs"][0])
        mismatch = [pair_differences(grouped[(data.name, tuple(c), "db")],
                                     grouped[(data.name, tuple(c), "cs")])[-1]
                    for c in config.costs]
        figures["db_cs_stumps_differ"] = float(np.mean(mismatch))
    if "cs-vectorized" in found and "db" in found:
        figures["db_time_percent_of_cs_vectorized"] = (100 * found["db"][1]
                                                       / found["cs-vectorized"][1])
    if "dbn" in found and "db" in found:
        figures["roots_avoided_vs_dbn_percent"] = 100 * (1 - found["db"][0] / found["dbn"][0])
    figures["rules_differ_same_weights"] = float(np.mean(list(disagreement[data.name].values())))
    return figures
