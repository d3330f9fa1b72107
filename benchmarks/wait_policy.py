"""Boosting's speed under each OpenMP wait policy: a round of AdaBoostDB over every CBCL
window (6,977 x 63,960 compact features), in fresh processes.

Run: ``python -m benchmarks.wait_policy [--rounds 8] [--repeat 3] [--busy]``

``train-detector`` leaves the policy to OpenMP (``unset``); ``detect`` and
``evaluate-images`` ask for ``PASSIVE`` (:mod:`facedetect.threads`). The figure is the
median seconds per round of ``--rounds``, the median of ``--repeat`` fresh processes; with
``--busy`` also beside a busy-loop process holding one core.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from .common import machine, write_results

CHILD = r"""
import json, sys, numpy as np
import facedetect   # what train-detector imports first: the policy must survive it
from facedetect.data import load_cbcl
from facedetect.haar import haar_feature_pool
from facedetect.pipeline.storage import compact_features
from facedetect.training import AdaBoostDB
cbcl = load_cbcl()
store = compact_features(cbcl.images, haar_feature_pool(19, 19))
AdaBoostDB(1, (1, 10)).fit_binned(store, cbcl.labels)   # compile
rounds = []
AdaBoostDB(int(sys.argv[1]), (1, 10)).fit_binned(
    store, cbcl.labels, callback=lambda m, s: rounds.append(s.history[-1]["seconds"]))
print(json.dumps({"round_s": float(np.median(rounds))}))
"""
POLICIES = ("unset", "ACTIVE", "PASSIVE")


def measure(policy: str, rounds: int, busy: bool) -> float:
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    if policy != "unset":
        env["OMP_WAIT_POLICY"] = policy
    loop = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    try:
        time.sleep(0.5 if busy else 0)
        output = subprocess.run([sys.executable, "-c", CHILD, str(rounds)], env=env,
                                check=True, capture_output=True, text=True).stdout
    finally:
        if loop is not None:
            loop.kill()
            loop.wait()
    return json.loads(output.strip().splitlines()[-1])["round_s"]


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
             f"Machine: {results['machine']}. AdaBoostDB over every CBCL window (6,977 x "
             f"63,960 compact features), median s/round of {args.rounds}, median of "
             f"{args.repeat} fresh processes.\n",
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
