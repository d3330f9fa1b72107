"""Feature-sharded boosting on Dask against one process: s/round, peak memory of the
driver and of every worker, and what a round moves.

    python -m benchmarks.sharded [--rounds 20] [--storage exact] [--repeat 3] [--busy]

The job: every CBCL training window (2,429 faces, 4,548 non-faces) and the 63,960-feature
pool, AdaBoostDB at cost 1,4, train-detector's default 3 GiB memory setting. Each
configuration runs in a fresh process, one after the other, so each peak is its own: one
process (no Dask), then a LocalCluster of 1 and of 2 worker processes (one thread each, the
2 cores shared). ``--busy`` runs them again beside a process that keeps one core busy. Every
configuration trains the same model (checked).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np

from benchmarks.common import machine, peak_rss_gib, write_results

ROUNDS = 20
COST = (1.0, 4.0)
MEMORY = 3 * 2**30   # train-detector's default --memory, in this process and per worker


def _job(storage: str):
    from facedetect.data import load_cbcl
    data = load_cbcl()
    return data.images, data.labels.astype(int), storage == "exact"


def _round_seconds(estimator) -> float:
    """Median seconds of a round after the first (which compiles and warms caches)."""
    return float(np.median(estimator.round_seconds_[1:]))


def child_one_process(storage: str, rounds: int) -> dict:
    from facedetect.haar import haar_feature_pool
    from facedetect.pipeline._storage import compact_features, exact_features
    from facedetect.training import AdaBoostDB
    images, y, exact = _job(storage)
    pool = haar_feature_pool(19, 19)
    start = time.perf_counter()
    estimator = AdaBoostDB(rounds, cost=COST)
    if exact:
        X, order = exact_features(images, pool, progress=False)
        features = time.perf_counter() - start
        estimator.fit(X, y, order=order)
    else:
        binned = compact_features(images, pool, MEMORY, progress=False)
        features = time.perf_counter() - start
        estimator.fit_binned(binned, y)
    return {"features_s": features, "round_s": _round_seconds(estimator),
            "driver_peak_gib": peak_rss_gib(), "stumps": estimator.features_.tolist(),
            "alphas": estimator.alphas_.tolist()}


def child_workers(storage: str, rounds: int, workers: int) -> dict:
    from facedetect.haar import haar_feature_pool
    from facedetect.pipeline._storage import HaarColumns
    from facedetect._utils.sysinfo import peak_rss_gib as worker_peak
    from facedetect.training import AdaBoostDB
    from facedetect.training._cluster import connect, disconnect
    from facedetect.training._sharded import ShardedFeatures
    images, y, exact = _job(storage)
    pool = haar_feature_pool(19, 19)
    client = connect(workers=workers)
    try:
        start = time.perf_counter()
        sharded = ShardedFeatures(client, HaarColumns(pool, exact, MEMORY), len(pool), workers)
        sharded.set_windows(images)
        features = time.perf_counter() - start
        searches, overheads = [], []

        def on_round(model, state):
            total = state.history[-1]["seconds"]
            searches.append(max(sharded.search_seconds))
            overheads.append(total - max(sharded.search_seconds))
        estimator = AdaBoostDB(rounds, cost=COST).fit_sharded(sharded, y, callback=on_round)
        per_worker = client.run(worker_peak)
        message = sharded.bytes_sent
    finally:
        disconnect(client)
    return {"features_s": features, "round_s": _round_seconds(estimator),
            "search_s": float(np.median(searches[1:])),
            "overhead_s": float(np.median(overheads[1:])),
            "driver_peak_gib": peak_rss_gib(),
            "worker_peak_gib": sorted(per_worker.values()), "bytes_per_round": message,
            "windows": len(y), "stumps": estimator.features_.tolist(),
            "alphas": estimator.alphas_.tolist()}


def run_child(*arguments: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "benchmarks.sharded", "--child",
                           *arguments], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


CONFIGURATIONS = {"one process": ("one",), "1 worker": ("workers", "1"),
                  "2 workers": ("workers", "2")}


def measure(storage: str, rounds: int, repeat: int) -> dict:
    """Each configuration ``repeat`` times, interleaved (this VM's speed drifts); times
    are the medians over the repeats, memory the largest peak."""
    runs = {name: [] for name in CONFIGURATIONS}
    for _ in range(repeat):
        for name, (kind, *workers) in CONFIGURATIONS.items():
            runs[name].append(run_child(kind, storage, str(rounds), *workers))
    reference = (runs["one process"][0]["stumps"], runs["one process"][0]["alphas"])
    rows = {}
    for name, results in runs.items():
        row = dict(results[-1])
        for key in ("round_s", "search_s", "overhead_s", "features_s"):
            if key in row:
                row[key] = float(np.median([r[key] for r in results]))
        row["driver_peak_gib"] = max(r["driver_peak_gib"] for r in results)
        row["same_model"] = all((r.pop("stumps"), r.pop("alphas")) == reference
                                for r in results)
        row.pop("stumps"), row.pop("alphas")
        rows[name] = row
    return rows


def table(rows: dict) -> str:
    base = rows["one process"]
    lines = ["| configuration | s/round | vs one process | search / overhead s | features s "
             "| driver peak GiB | worker peaks GiB | bytes/round | same model |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, row in rows.items():
        lines.append(
            f"| {name} | {row['round_s']:.3f} | {row['round_s'] / base['round_s']:.2f}x | "
            + (f"{row['search_s']:.3f} / {row['overhead_s']:.3f}" if "search_s" in row
               else "-")
            + f" | {row['features_s']:.1f} | {row['driver_peak_gib']:.2f} | "
            + (", ".join(f"{g:.2f}" for g in row["worker_peak_gib"])
               if "worker_peak_gib" in row else "-")
            + f" | {row.get('bytes_per_round', 0):,} | {row['same_model']} |")
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--storage", choices=("exact", "compact"), default="exact")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of each configuration, interleaved (default 3)")
    parser.add_argument("--busy", action="store_true",
                        help="measure again with one core kept busy")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        kind, storage, rounds, *rest = args.child
        result = (child_one_process(storage, int(rounds)) if kind == "one"
                  else child_workers(storage, int(rounds), int(rest[0])))
        print(json.dumps(result))
        return result
    results = {"machine": machine(), "storage": args.storage, "rounds": args.rounds,
               "idle": measure(args.storage, args.rounds, args.repeat)}
    sections = [f"## Idle\n\n{table(results['idle'])}"]
    if args.busy:
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            results["one core busy"] = measure(args.storage, args.rounds, args.repeat)
        finally:
            busy.kill()
            busy.wait()
        sections.append(f"## One core busy\n\n{table(results['one core busy'])}")
    markdown = (f"# Feature-sharded boosting on Dask\n\nMachine: {results['machine']}. "
                f"Every CBCL training window ({results['idle']['2 workers']['windows']:,}) x "
                f"63,960 features, {args.storage} storage, AdaBoostDB at cost 1,4, "
                f"{args.rounds} rounds (median of rounds 2 on; medians of {args.repeat} "
                f"interleaved runs). `python -m benchmarks.sharded"
                f"{' --busy' if args.busy else ''} --storage {args.storage}`.\n\n"
                + "\n\n".join(sections) + "\n")
    write_results(f"sharded_{args.storage}", results, markdown)
    return results


if __name__ == "__main__":
    main()
