"""How soon the command line answers: ``--version``, every command's ``--help`` and a
mistyped flag, against ``python -c pass``, idle and with one core busy.

Run: ``python -m benchmarks.cli_startup``

Each row: the best and the median of 7 runs of a fresh process, in seconds. The target
(issue 36) is 0.3 s on an idle machine: a command imports numba, OpenCV and scikit-learn
only when it runs, not when it reads its flags.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time

from .common import machine, one_core_busy, write_results

RUNS = 7
COMMANDS = ["train", "detect", "evaluate", "evaluate-images", "sweep", "paper", "show",
            "export-opencv", "data"]


def program() -> list[str]:
    found = shutil.which("facedetect")
    return [found] if found else [sys.executable, "-m", "facedetect"]


def cases() -> dict[str, list[str]]:
    facedetect = program()
    rows = {"python -c pass": [sys.executable, "-c", "pass"],
            "facedetect --version": [*facedetect, "--version"],
            "facedetect --help": [*facedetect, "--help"]}
    rows.update({f"facedetect {name} --help": [*facedetect, name, "--help"]
                 for name in COMMANDS})
    rows["facedetect train --bogus"] = [*facedetect, "train", "--bogus"]
    rows["detect --help"] = [shutil.which("detect") or "detect", "--help"]
    return rows


def seconds(command: list[str]) -> tuple[float, float]:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(command, capture_output=True)
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def main(argv=None) -> dict:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    rows = cases()
    results = {"machine": machine(), "idle": {k: seconds(v) for k, v in rows.items()}}
    with one_core_busy():
        results["one core busy"] = {k: seconds(v) for k, v in rows.items()}
    lines = ["# Command-line start-up\n", f"Machine: {results['machine']}. Best and median "
             f"of {RUNS} fresh processes, seconds.\n",
             "| command | idle best | idle median | one core busy median |", "|---|---|---|---|"]
    for name in rows:
        best, median = results["idle"][name]
        lines.append(f"| `{name}` | {best:.3f} | {median:.3f} | "
                     f"{results['one core busy'][name][1]:.3f} |")
    write_results("cli_startup", results, "\n".join(lines) + "\n")
    print("\n".join(lines))
    return results


if __name__ == "__main__":
    main()
