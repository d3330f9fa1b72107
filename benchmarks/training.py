"""The one command, timed: ``train-detector --cost 1,10`` as the README runs it, idle and
with one core busy: wall time, CPU time, peak memory, scratch bytes, and each phase (the
verifier's, where the recipe trains one, as one column).

Run: ``python -m benchmarks.training [--runs idle,busy] [--label training] [-- FLAGS]``

Each run is the command in a child process (data found as the command finds it:
``--data``, ``$FACEDETECT_*``, ``./data/``), with ``--json`` for its phases and scratch
bytes; its CPU time and peak resident memory come from the child's resource usage. "busy"
runs a busy loop beside it for the whole run. Flags after ``--`` go to the command (for
instance ``-- --memory 2`` for the spilled path).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from .common import machine, one_core_busy, write_results

COMMAND = ["-m", "facedetect", "train", "--cost", "1,10", "--json"]


def train_once(flags: list[str], busy: bool, folder: Path) -> dict:
    """One run of the command: its summary, wall and CPU seconds, peak memory."""
    out = folder / ("busy.json" if busy else "idle.json")
    command = [sys.executable, *COMMAND, "--out", str(out), *flags]
    # A fresh process per run: RUSAGE_CHILDREN's peak is the largest child's so far.
    wrapper = ("import resource, subprocess, sys, time; start = time.perf_counter(); "
               "done = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
               "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
               "print(done.stdout); print(done.stderr, file=sys.stderr); "
               "print('USAGE', time.perf_counter() - start, u.ru_utime + u.ru_stime, "
               "u.ru_maxrss); sys.exit(done.returncode)")
    with one_core_busy() if busy else contextlib.nullcontext():
        done = subprocess.run([sys.executable, "-c", wrapper, *command], capture_output=True,
                              text=True)
    if done.returncode:
        raise SystemExit(f"train-detector failed: {done.stderr.strip()[-2000:]}")
    usage = next(line for line in done.stdout.splitlines() if line.startswith("USAGE"))
    wall, cpu, rss_kib = (float(v) for v in usage.split()[1:])
    summary = json.loads(done.stdout[:done.stdout.index("USAGE")])
    return {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "peak_rss_gib": round(rss_kib / 2**20, 2),
            "scratch_bytes": summary["scratch_bytes"], "seconds": summary["seconds"],
            "phases": summary["phases"], "stumps": summary["rounds"],
            "train_windows": summary["train_windows"],
            "threshold": summary["detection"]["threshold"] if summary["detection"] else None,
            "verifier_seconds": (summary.get("verifier") or {}).get("seconds"),
            "model": str(out), "same_stumps_as_shipped": _same_stumps(out),
            "same_verifier_as_shipped": _same_stumps(out, "verifier")}


def _same_stumps(model: Path, section: str | None = None) -> bool | None:
    """Whether the model trained has the shipped default's stumps (those of its
    ``section``, the verifier's: None where the model has none): the same features,
    thresholds and polarities, value for value, and weights within ``ALPHA_RTOL`` of each
    other (a spilled run sums a round's weights in another order: the last digit moves)."""
    from facedetect.detector import shipped_model_path
    documents = [json.loads(Path(path).read_text())
                 for path in (model, shipped_model_path("default"))]
    if section is not None:
        if section not in documents[0]:
            return None
        documents = [document[section]["model"] for document in documents]
    return same_stumps(documents[0]["stumps"], documents[1]["stumps"])


# Summation order moves an alpha by a few units in the last place (1.4e-14 measured); a
# different model moves it by far more than this.
ALPHA_RTOL = 1e-12


def same_stumps(stumps: list[dict], others: list[dict]) -> bool:
    """Whether two models' stump lists agree: features, thresholds and polarities exactly,
    alphas within ``ALPHA_RTOL`` relative.

    Examples
    --------
    >>> stump = {"feature": 3, "threshold": 0.5, "polarity": 1, "alpha": 0.6740277676631111}
    >>> same_stumps([stump], [dict(stump, alpha=0.6740277676631113)])
    True
    >>> same_stumps([stump], [dict(stump, alpha=0.674)])
    False
    >>> same_stumps([stump], [dict(stump, threshold=0.5000001)])
    False
    """
    if len(stumps) != len(others):
        return False
    exact = [{k: v for k, v in stump.items() if k != "alpha"} for stump in stumps]
    if exact != [{k: v for k, v in stump.items() if k != "alpha"} for stump in others]:
        return False
    alphas, other_alphas = (np.array([stump["alpha"] for stump in group], float)
                            for group in (stumps, others))
    return bool(np.allclose(alphas, other_alphas, rtol=ALPHA_RTOL, atol=0.0))


def phase_totals(phases: list[dict]) -> dict:
    """Seconds by phase, summed over the stages (features, boosting, mining, ...)."""
    totals: dict[str, float] = {}
    for record in phases:
        totals[record["phase"]] = totals.get(record["phase"], 0.0) + record["seconds"]
    return {name: round(seconds, 1) for name, seconds in totals.items()}


def markdown(results: dict) -> str:
    lines = ["# The one command: `train-detector --cost 1,10` "
             + " ".join(results["flags"]) + "\n",
             f"Machine: {results['machine']}.\n",
             "| run | wall | CPU | peak RSS | scratch writes | features | boosting | mining "
             "| operating points | verifier |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name, run in results["runs"].items():
        totals = phase_totals(run["phases"])
        points = totals.get("window operating point", 0) + totals.get(
            "image operating point", 0)
        lines.append(f"| {name} | {run['wall_s'] / 60:.1f} min | {run['cpu_s'] / 60:.1f} min "
                     f"| {run['peak_rss_gib']:.2f} GiB | "
                     f"{run['scratch_bytes'] / 2**30:.2f} GiB | "
                     f"{totals.get('features', 0):.0f} s | {totals.get('boosting', 0):.0f} s | "
                     f"{totals.get('mining', 0):.0f} s | {points:.0f} s | "
                     f"{_verifier_cell(run.get('verifier_seconds'))} |")
    lines += ["", "Phases of the idle run (stage: seconds, windows, rounds):", ""]
    first = next(iter(results["runs"].values()))
    for record in first["phases"]:
        extra = ", ".join(f"{k} {record[k]:,}" for k in ("windows", "rounds") if k in record)
        stage = f"stage {record['stage']} " if record["stage"] else ""
        lines.append(f"- {stage}{record['phase']}: {record['seconds']:.1f} s"
                     + (f" ({extra})" if extra else ""))
    return "\n".join(lines) + "\n"


def _verifier_cell(seconds: dict | None) -> str:
    if not seconds:
        return "none"
    return f"{sum(seconds.values()):.0f} s (" + ", ".join(
        f"{name} {value:.0f} s" for name, value in seconds.items()) + ")"


def main(argv=None) -> dict:
    argv = list(sys.argv[1:] if argv is None else argv)
    flags = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="idle,busy", help="idle, busy or both")
    parser.add_argument("--label", default="training")
    parser.add_argument("--keep", help="folder to keep the trained models in")
    args = parser.parse_args(argv)
    results = {"machine": machine(), "flags": flags, "runs": {}}
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(args.keep or temporary)
        folder.mkdir(parents=True, exist_ok=True)
        for name in args.runs.split(","):
            if name not in ("idle", "busy"):
                raise SystemExit(f"--runs: unknown run {name!r} (idle, busy)")
            started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            run = train_once(flags, name == "busy", folder)
            results["runs"][name] = dict(run, started=started)
            print(json.dumps({name: phase_totals(run["phases"]), "wall_s": run["wall_s"]}),
                  flush=True)
    write_results(args.label, results, markdown(results))
    return results


if __name__ == "__main__":
    main()
