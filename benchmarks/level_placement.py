"""``detect``'s levels on two threads after the caller has kept one core busy: the caller
working beside the pool (:func:`facedetect.detector._level_pool.ordered_map`) against the
caller waiting on it (the pool before 2026-11-29, kept here to compare), and one thread.

A single-threaded call before ``detect`` (dlib's HOG, or any long Python loop) left the
pool's two threads to share one core for a while: the kernel placed them where the waiting
caller had run. Each case times ``detect`` with the default model on the five photographs
(median of ``--repeat`` calls each, geometric mean in s/Mpx), each timed call right after
an untimed one and after what comes before it: nothing, 0.17 s of the caller spinning, or
0.17 s of sleep. The variants take turns within each repeat.

Run: ``python -m benchmarks.level_placement``
"""

from __future__ import annotations

import argparse
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .cascade import IMAGES   # the photographs every speed benchmark times
from .common import machine, write_results

GAP = 0.17   # seconds: about one dlib HOG call at upsample 2 on a 512x512 picture


_waiting_pools: dict = {}


def waiting_ordered_map(function, items, workers):
    """The pool before 2026-11-29: every item on a pool of ``workers`` threads (its own,
    so that the variants do not replace each other's), the caller waiting in order."""
    if workers <= 1:
        yield from map(function, items)
        return
    executor = _waiting_pools.setdefault(workers, ThreadPoolExecutor(workers))
    pending: deque = deque()
    try:
        for item in items:
            pending.append(executor.submit(function, item))
            if len(pending) > workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()


def _spin(seconds: float) -> None:
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        pass


BEFORE = {"nothing": lambda: None, "the caller busy 0.17 s": lambda: _spin(GAP),
          "0.17 s asleep": lambda: time.sleep(GAP)}


def main(argv=None) -> dict:
    from PIL import Image
    from skimage import data

    from facedetect._utils.threads import wait_passively
    from facedetect.detector import _level_pool, _multiscale
    from facedetect.images import to_grey
    wait_passively()   # as the detect command does
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    import facedetect
    model = facedetect.load_model("default")
    params = _multiscale.params_for(model)
    scanner = _multiscale.scanner_for(model, params)
    greys = [to_grey(Image.fromarray(getattr(data, name)())) for name in IMAGES]
    threads = _multiscale.level_threads
    variants = {"caller works (shipped)": (_level_pool.ordered_map, threads),
                "caller waits (before)": (waiting_ordered_map, threads),
                "one thread": (_level_pool.ordered_map, lambda: 1)}

    def detect(variant, grey):
        _multiscale.ordered_map, _multiscale.level_threads = variants[variant]
        return _multiscale.detect_faces(grey, model, params, scanner)

    results = {"machine": machine(), "threads": threads(), "seconds_per_mpx": {}}
    try:
        for before, action in BEFORE.items():
            per_mpx = {v: [] for v in variants}
            for grey in greys:
                times = {v: [] for v in variants}
                for variant in variants:
                    detect(variant, grey)   # compiled, caches filled
                for _ in range(args.repeat):
                    for variant in variants:
                        action()
                        detect(variant, grey)
                        start = time.perf_counter()
                        detect(variant, grey)
                        times[variant].append(time.perf_counter() - start)
                for variant, seconds in times.items():
                    per_mpx[variant].append(float(np.median(seconds)) / (grey.size / 1e6))
            results["seconds_per_mpx"][before] = {
                v: round(float(np.exp(np.mean(np.log(s)))), 4) for v, s in per_mpx.items()}
            print(before, results["seconds_per_mpx"][before], flush=True)
    finally:
        _multiscale.ordered_map, _multiscale.level_threads = variants["caller works (shipped)"]
    lines = ["# detect's levels after the caller kept a core busy (level_placement)\n",
             f"Machine: {results['machine']}; {results['threads']} level threads.\n",
             "s/Mpx, default model, five photographs, each timed call right after an "
             "untimed one and after what the row names.\n",
             "| before each call | " + " | ".join(variants) + " |",
             "|---" * (len(variants) + 1) + "|"]
    for before, row in results["seconds_per_mpx"].items():
        lines.append(f"| {before} | " + " | ".join(f"{row[v]:.4f}" for v in variants) + " |")
    write_results("level_placement", results, "\n".join(lines) + "\n")
    return results


if __name__ == "__main__":
    main()
