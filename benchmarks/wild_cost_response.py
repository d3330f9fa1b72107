"""Does ``--cost`` move the errors the way it says with the wild-faces recipe (24x24
window, calibrated on held-back wild faces)? A shortened recipe trained at several costs,
each model read on windows it never trained on: the held-out wild faces (misses) and
CBCL's held-out non-faces and random windows of the held-out fifth of the negative
pictures (false alarms), at its window operating point and at the raw 0.

Run: ``python -m benchmarks.wild_cost_response [--costs 1,100/1,10/1,1/10,1/100,1]``
(``$FACEDETECT_DATA``, ``$FACEDETECT_FACES`` and ``$FACEDETECT_NEGATIVES`` as the user
sets them.) The recipe is shortened (``SHORT``) so that five costs train in minutes; the
direction of the errors, not their size, is what this measures.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from .common import machine, write_results

SHORT = ["--rounds", "200", "--stage-rounds", "50", "--bootstrap-rounds", "1",
         "--max-features", "4000"]


HELD_OUT_WINDOWS = 20_000


def train(cost: str, out: Path) -> float:
    """Seconds to train ``out`` (a model already there is kept, its own training seconds
    reported; an interrupted one is resumed)."""
    if out.exists():
        return json.loads(out.read_text())["training"]["seconds"]
    resume = ["--resume"] if Path(str(out) + ".checkpoint.json").exists() else []
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "facedetect", "train", "--cost", cost, *SHORT,
                    *resume, "--quiet", "--out", str(out)], check=True, capture_output=True)
    return time.perf_counter() - start


def held_out_negative_windows(window) -> np.ndarray:
    """Random windows of the held-out fifth of the negative pictures: never mined, never
    calibrated on."""
    from facedetect.data import find_negatives, negative_files, split_negatives
    from facedetect.pipeline import random_windows
    held = split_negatives(negative_files(find_negatives(None)))[1]
    return random_windows(held, HELD_OUT_WINDOWS, seed=0, window=tuple(window),
                          warn=lambda line: None)


def errors(path: Path) -> dict:
    """Misses on the held-out wild windows and false alarms on CBCL's held-out non-faces,
    at the model's window operating point and at the raw threshold 0."""
    import facedetect
    from facedetect.data import load_cbcl
    from facedetect.data import framed_windows
    from facedetect.data import eye_line_for, face_windows
    from facedetect.data import find_faces_folder, load_wild_faces
    from facedetect.pipeline import heldout_faces
    model = facedetect.load_model(path)
    framing = model.framing
    faces = load_wild_faces(find_faces_folder(None), warn=lambda line: None)
    windows, _ = face_windows(heldout_faces(model, faces), tuple(model.window),
                              framing=framing, eye_line=eye_line_for(framing))
    cbcl = load_cbcl()
    held = set(model.document["training"]["heldout_names"])
    index = np.array([name in held for name in cbcl.names])
    non_faces = framed_windows(cbcl.images[index], cbcl.labels[index], model.window,
                               framing)[cbcl.labels[index] == 0]
    face_scores = model.decision_function(windows)
    non_face_scores = model.decision_function(non_faces)
    picture_scores = model.decision_function(held_out_negative_windows(model.window))
    found = {}
    for label, threshold in (("operating point", model.window_threshold), ("raw 0", 0.0)):
        found[label] = {"threshold": round(float(threshold), 4),
                        "fn_rate": round(float(np.mean(face_scores <= threshold)), 4),
                        "fp_rate": round(float(np.mean(non_face_scores > threshold)), 4),
                        "picture_fp_rate": round(float(np.mean(picture_scores > threshold)),
                                                 6)}
    found["faces"], found["non_faces"] = len(windows), len(non_faces)
    found["picture_windows"] = len(picture_scores)
    return found


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--costs", default="1,100/1,10/1,1/10,1/100,1")
    parser.add_argument("--folder", help="keep the models here (those already there are "
                                         "measured, not trained again)")
    args = parser.parse_args(argv)
    costs = args.costs.split("/")
    folder = Path(args.folder) if args.folder else Path(tempfile.mkdtemp())
    rows = []
    for cost in costs:
        out = folder / f"cost_{cost.replace(',', '_')}.json"
        seconds = train(cost, out)
        row = {"cost": cost, "seconds": round(seconds, 1), **errors(out)}
        rows.append(row)
        print(row, flush=True)
    ratio = [np.log(float(c.split(",")[0]) / float(c.split(",")[1])) for c in costs]
    rho = {label: {key: round(float(spearmanr(ratio, [r[label][rate] for r in rows])[0]), 3)
                   for key, rate in (("fn", "fn_rate"), ("fp", "fp_rate"),
                                     ("picture_fp", "picture_fp_rate"))}
           for label in ("operating point", "raw 0")}
    results = {"machine": machine(), "recipe": "train-detector --cost CP,CN " + " ".join(SHORT),
               "rows": rows, "spearman_vs_log_cp_over_cn": rho}
    lines = ["# --cost with the wild-faces recipe\n", f"Machine: {results['machine']}. "
             f"`{results['recipe']}`; misses on {rows[0]['faces']} held-out wild windows, "
             f"false alarms on {rows[0]['non_faces']} held-out CBCL non-faces and on "
             f"{rows[0]['picture_windows']:,} random windows of the held-out negative "
             "pictures.\n",
             "| cost | threshold | FN rate | FP rate (CBCL) | FP rate (pictures) | FN rate at 0 "
             "| FP rate at 0 (CBCL) | FP rate at 0 (pictures) | training s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        op, raw = r["operating point"], r["raw 0"]
        lines.append(f"| {r['cost']} | {op['threshold']:+.2f} | {op['fn_rate']:.4f} | "
                     f"{op['fp_rate']:.4f} | {op['picture_fp_rate']:.5f} | "
                     f"{raw['fn_rate']:.4f} | {raw['fp_rate']:.4f} | "
                     f"{raw['picture_fp_rate']:.5f} | {r['seconds']:.0f} |")
    lines.append(f"\nSpearman's rho against log(Cp/Cn): {rho}")
    write_results("wild_cost_response", results, "\n".join(lines) + "\n")
    return results


if __name__ == "__main__":
    main()
