"""The refined scan's coarse step as a speed lever: a coarser grid scans fewer windows,
and its looser neighbourhood needs a lower coarse threshold to find the same ones.

Run: ``python -m benchmarks.refine_step [--model default] [--settings 2:10,3:10,3:13,3:16]``

Each setting is ``REFINE_STEP:REFINE_MARGIN`` (:mod:`facedetect.detector._scan`); the
first is the reference. Training-side data only (what a default may be chosen on): 1,500
of the wild face crops outside the held-out split, and every eighth calibration negative
picture. Reported: the raw windows above the detection threshold (and how many the
reference finds too), the grouped boxes, the crops with a box, and the scan's seconds on
one thread (settings alternated, best of ``--repeat``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from .common import machine, write_results


def _data(faces_folder, count: int = 1500):
    from facedetect.data._negatives import (find_negatives, negative_files, split_negatives,
                                            split_training_negatives)
    from facedetect.data._wild_faces import find_faces, heldout_mask, load_wild_faces
    from facedetect.images import read_grey
    import os
    folder, negatives = find_faces(faces_folder), find_negatives(
        os.environ.get("FACEDETECT_NEGATIVES"))
    if folder is None or negatives is None:
        raise SystemExit("set FACEDETECT_FACES and FACEDETECT_NEGATIVES (or --faces)")
    faces = load_wild_faces(folder, warn=lambda line: None)
    train = np.flatnonzero(~heldout_mask(faces.groups))
    pick = np.random.default_rng(0).choice(train, min(count, len(train)), replace=False)
    calibration = split_training_negatives(split_negatives(negative_files(negatives))[0])[1]
    return ([faces.crops[i] for i in pick],
            [read_grey(path) for path in calibration[::8]])


def _scan(model, images):
    """Per image: (raw windows, grouped windows) as sets, and the seconds in all."""
    from facedetect.detector import _multiscale as multiscale
    params = multiscale.params_for(model)
    scanner = multiscale.scanner_for(model, params)
    found, seconds = [], 0.0
    for grey in images:
        start = time.perf_counter()
        rects, scores, _ = multiscale.scan_raw(np.ascontiguousarray(grey), scanner, params)
        windows = multiscale.group_detections(rects, scores, params.threshold,
                                              params.min_neighbors, params.neighbor_margin)[0]
        seconds += time.perf_counter() - start
        found.append((set(map(tuple, rects.tolist())), set(map(tuple, windows.tolist()))))
    return found, seconds


def main(argv=None) -> dict:
    import facedetect
    from facedetect.detector import _multiscale as multiscale
    from facedetect.detector import _scan as scan
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--settings", default="2:10,3:10,3:13,3:16")
    parser.add_argument("--faces")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--label", default="refine_step")
    args = parser.parse_args(argv)
    settings = [(int(step), float(margin)) for step, margin in
                (item.split(":") for item in args.settings.split(","))]
    model = facedetect.load_model(args.model)
    crops, pictures = _data(args.faces)
    multiscale.level_threads = lambda: 1   # one thread: the scan's own cost
    found, seconds = {}, {s: {"crops": [], "pictures": []} for s in settings}
    for _ in range(args.repeat):
        for setting in settings:
            scan.REFINE_STEP, scan.REFINE_MARGIN = setting
            multiscale.REFINE_MARGIN = setting[1]
            for kind, images in (("crops", crops), ("pictures", pictures)):
                found[setting, kind], spent = _scan(model, images)
                seconds[setting][kind].append(spent)
    reference = settings[0]
    rows = {}
    for setting in settings:
        row = {}
        for kind in ("crops", "pictures"):
            mine, theirs = found[setting, kind], found[reference, kind]
            row[kind] = {"raw": sum(len(a) for a, _ in mine),
                         "raw_shared": sum(len(a & b) for (a, _), (b, _) in zip(mine, theirs)),
                         "boxes": sum(len(g) for _, g in mine),
                         "same_boxes": sum(g == h for (_, g), (_, h) in zip(mine, theirs)),
                         "images": len(mine), "seconds": min(seconds[setting][kind])}
        row["crops_with_a_box"] = sum(len(g) > 0 for _, g in found[setting, "crops"])
        rows[f"{setting[0]}:{setting[1]:g}"] = row
    results = {"machine": machine(), "model": args.model, "crops": len(crops),
               "pictures": len(pictures),
               "megapixels": round(sum(p.size for p in pictures) / 1e6, 2), "settings": rows}
    lines = [f"# The refined scan's coarse step ({args.label})\n",
             f"Machine: {results['machine']}. Model `{args.model}`; {len(crops)} training-side "
             f"wild crops, {len(pictures)} calibration pictures ({results['megapixels']} Mpx); "
             f"one thread, best of {args.repeat}. Reference: {settings[0][0]}:"
             f"{settings[0][1]:g}.\n",
             "| step:margin | crops with a box | crop raw windows (shared) | crops with the "
             "same boxes | crop s | picture raw windows (shared) | picture s |",
             "|---|---|---|---|---|---|---|"]
    for name, row in rows.items():
        c, p = row["crops"], row["pictures"]
        lines.append(f"| {name} | {row['crops_with_a_box']} | {c['raw']} ({c['raw_shared']}) | "
                     f"{c['same_boxes']}/{c['images']} | {c['seconds']:.2f} | {p['raw']} "
                     f"({p['raw_shared']}) | {p['seconds']:.2f} |")
    write_results(args.label, results, "\n".join(lines) + "\n")
    return results


if __name__ == "__main__":
    main()
