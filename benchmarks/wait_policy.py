"""Boosting's speed under each OpenMP wait policy: rounds of ``train-detector`` (AdaBoostDB,
compact features, the recipe's mirrored and jittered CBCL windows without mining), in
fresh processes.

Run: ``python -m benchmarks.wait_policy [--rounds 8] [--repeat 3] [--busy]``

``train-detector`` leaves the policy to OpenMP (``unset``); ``detect`` and
``evaluate-images`` ask for ``PASSIVE`` (:mod:`facedetect._utils.threads`). The figure is the
median seconds per round of ``--rounds`` (as the model file records them, compilation
left out), the median of ``--repeat`` fresh processes; with
``--busy`` also beside a busy-loop process holding one core.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from .common import machine, write_results

ROUNDS_COMMAND = ["-m", "facedetect", "train", "--no-bootstrap", "--no-wild-faces", "--quiet"]


def _round_seconds(model_path: str) -> float:
    """Median seconds per round of a model file, past the first two (compilation)."""
    seconds = json.loads(open(model_path).read())["training"]["diagnostics"]["seconds"]
    return float(sorted(seconds[2:])[len(seconds[2:]) // 2])


POLICIES = ("unset", "ACTIVE", "PASSIVE")


def measure(policy: str, rounds: int, busy: bool) -> float:
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    if policy != "unset":
        env["OMP_WAIT_POLICY"] = policy
    loop = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    try:
        time.sleep(0.5 if busy else 0)
        with tempfile.TemporaryDirectory() as folder:
            out = os.path.join(folder, "model.json")
            subprocess.run([sys.executable, *ROUNDS_COMMAND, "--rounds", str(rounds + 2),
                            "--out", out], env=env, check=True, capture_output=True)
            return _round_seconds(out)
    finally:
        if loop is not None:
            loop.kill()
            loop.wait()


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--busy", action="store_true")
    args = parser.parse_args(argv)
    loads = (False, True) if args.busy else (False,)
    results = {"machine": machine(), "rows": {}}
    for busy in loads:
        for policy in POLICIES:   # interleaved, so drift in the shared VM hits all alike
            runs = sorted(measure(policy, args.rounds, busy) for _ in range(args.repeat))
            results["rows"][f"{policy}{' busy' if busy else ''}"] = runs[len(runs) // 2]
    rows = results["rows"]
    lines = ["# Boosting under each OpenMP wait policy\n",
             f"Machine: {results['machine']}. `train-detector --no-bootstrap "
             f"--no-wild-faces --rounds {args.rounds + 2}` ({args.rounds} timed rounds over "
             f"the recipe's CBCL windows, compact features), median of {args.repeat} fresh "
             "processes.\n",
             "| OMP_WAIT_POLICY | s/round idle | vs unset |" + (" one core busy |" if
                                                              args.busy else ""),
             "|---|---|---|" + ("---|" if args.busy else "")]
    for policy in POLICIES:
        line = f"| {policy} | {rows[policy]:.3f} | {rows[policy] / rows['unset']:.2f}x |"
        if args.busy:
            line += f" {rows[policy + ' busy']:.3f} |"
        lines.append(line)
    write_results("wait_policy", results, "\n".join(lines) + "\n")
    return results


if __name__ == "__main__":
    main()
