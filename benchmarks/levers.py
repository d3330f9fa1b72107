"""Model files compared one lever at a time, on held-out data only.

The data: the held-out wild crops (MTFL + Caltech: clean, grainy, posterised; UTKFace and
Yale B apart) and the held-out face-free pictures. The development images are not read:
they measure the final choice (``benchmarks.peers``), never a lever.

Run: ``python -m benchmarks.levers MODEL ... [--label levers]``
(``$FACEDETECT_FACES`` and ``$FACEDETECT_NEGATIVES`` as the user sets them): each model
at its own operating point: its recall on the crops, its false alarms per megapixel on
the pictures, its training time as recorded, and its detect time against OpenCV's default
cascade (:func:`benchmarks.detect_speed.seconds_per_mpx`).

``--curves`` (label ``lever_curves``) compares them at equal false alarms instead: each
model's recall on the crops against its false alarms per megapixel on the pictures, over
thresholds around its own image operating point (``--offsets``), read at ``--alarms``. A
lever that finds more crops at its own operating point may only have moved along its
curve (a lower threshold finds more faces and raises more alarms); the curves tell a
better detector from a looser one. Both sets are held out from training and calibration:
this compares levers, it chooses no operating point.

With ``--curves``, ``--opencv-export`` measures instead the staged XMLs ``export-opencv``
writes for each model (stages cut at the levels learnt at the export's threshold, and
with ``--detect-levels``), run by our scanner as ``detectMultiScale`` runs them (scale
1.1, its step, bilinear levels, 3 neighbours: the same windows, tests/test_staging.py),
the last stage's threshold moved about the exported one. ``--posterised`` also scores the
crops posterised as ``benchmarks.peers`` scores them, at the same thresholds, and reads
them at the same (clean-picture) false alarms: a lever for posterised faces must not buy
them with a looser threshold.
"""

from __future__ import annotations

import argparse

import numpy as np

from .common import machine, wild_data, write_results

OFFSETS = (-1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0)   # from each model's own threshold
ALARM_LEVELS = (0.25, 0.3, 0.35, 0.4, 0.45)           # where the curves are compared


def opencv_forms(path: str) -> dict:
    """``{label: staged model}``: what ``export-opencv`` writes for the model at ``path``,
    with its stages cut at the export's own levels and at ``detect``'s, set to scan as
    OpenCV does at the exported threshold."""
    import facedetect
    from facedetect.detector import exported_form
    from facedetect.detector import OPENCV_MIN_NEIGHBORS, OPENCV_SCALE_FACTOR
    # detectMultiScale's defaults, as the export's operating point assumes them
    scan = {"step": "auto", "pyramid": "linear", "min_neighbors": OPENCV_MIN_NEIGHBORS,
            "neighbor_margin": 0.0, "scale_factor": OPENCV_SCALE_FACTOR}
    model = facedetect.load_model(path)
    forms = {}
    for label, detect_levels in (("export", False), ("export, detect's levels", True)):
        staged, threshold = exported_form(model, None, False, detect_levels)
        forms[f"{path} [{label}]"] = staged.with_detection(dict(scan, threshold=threshold))
    return forms


def curve(path: str, held, pictures, model=None, posterised: bool = False,
          offsets=OFFSETS) -> dict:
    """``{threshold, recall, alarms}`` lists for one model (``model``, else the file at
    ``path``) over ``offsets``; with ``posterised`` also ``posterised_recall``, the crops
    posterised."""
    import facedetect
    from facedetect.detector import detect_faces, params_for
    from facedetect.images import read_grey
    from facedetect.pipeline import crop_recall

    from .heldout_sets import COMPARED, pooled
    from .heldout_sets import posterised as posterise
    model = facedetect.load_model(path) if model is None else model
    greys = [read_grey(p) for p in pictures]
    megapixels = sum(g.size for g in greys) / 1e6
    own = params_for(model).threshold
    rows = {"threshold": [], "recall": [], "alarms": []}
    for offset in offsets:
        params = params_for(model, threshold=own + offset)
        # every held-out crop, as the point comparison scores them (the box-width limit
        # is the median over all of them), pooled over MTFL and Caltech
        found = crop_recall(lambda crop: detect_faces(crop, model, params).boxes, held)
        alarms = sum(len(detect_faces(g, model, params).boxes) for g in greys) / megapixels
        rows["threshold"].append(own + offset)
        rows["recall"].append(pooled(found._asdict()["by_source"], COMPARED))
        # each source's own recall too (UTKFace, Yale B), read at the same false alarms
        rows.setdefault("by_source", []).append(
            {source: row["recall"] for source, row in found._asdict()["by_source"].items()})
        rows["alarms"].append(alarms)
        if posterised:
            flat = crop_recall(lambda crop: detect_faces(posterise(crop), model, params).boxes,
                               held)
            rows.setdefault("posterised_recall", []).append(
                pooled(flat._asdict()["by_source"], COMPARED))
        flat_found = [f"{rows['posterised_recall'][-1]:.3f}"] if posterised else []
        print(path, f"{own + offset:.2f}", f"{rows['recall'][-1]:.3f}", f"{alarms:.3f}",
              *flat_found, flush=True)
    return rows


def recall_at(rows: dict, alarms: float, key: str = "recall") -> float | None:
    """Recall (``rows[key]``) at ``alarms`` false alarms per Mpx, read off the curve
    linearly (None outside the range measured)."""
    order = np.argsort(rows["alarms"])
    x, y = np.asarray(rows["alarms"])[order], np.asarray(rows[key])[order]
    if not x[0] <= alarms <= x[-1]:
        return None
    return float(np.interp(alarms, x, y))


def _numbers(text: str) -> tuple[float, ...]:
    """``"0.1,0.2"`` as rising finite numbers."""
    try:
        numbers = tuple(sorted(float(part) for part in text.split(",")))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of numbers: {text!r}") from None
    if not numbers or not all(abs(n) < 1e6 for n in numbers):   # also refuses NaN, inf
        raise argparse.ArgumentTypeError(f"numbers must be finite: {text!r}")
    return numbers


def _levels(text: str) -> tuple[float, ...]:
    """``"0.1,0.2"`` as rising false-alarm rates (per Mpx)."""
    levels = _numbers(text)
    if levels[0] < 0:
        raise argparse.ArgumentTypeError(f"rates must be numbers from 0: {text!r}")
    return levels


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A markdown table's lines: ``header``, its rule, then ``rows``.

    >>> _table(["model", "recall"], [["a.json", "0.950"]])
    ['| model | recall |', '|---|---|', '| a.json | 0.950 |']
    """
    return [f"| {' | '.join(header)} |", "|---" * len(header) + "|",
            *(f"| {' | '.join(cells)} |" for cells in rows)]


def _curve_table(curves: dict, alarms, key: str) -> list[str]:
    """Each curve's ``key`` read at each of ``alarms`` (``-`` outside its range)."""
    rows = []
    for path, points in curves.items():
        cells = [recall_at(points, a, key) for a in alarms]
        rows.append([path, *("-" if c is None else f"{c:.3f}" for c in cells)])
    return _table(["model", *(f"{a:g} FA/Mpx" for a in alarms)], rows)


def _point_table(results: dict, models: list[str], names: list[str]) -> list[str]:
    """Each model's cells at its own operating point."""
    import facedetect

    from .detect_speed import OPENCV_DEFAULT
    from .heldout_sets import COMPARED, pooled
    seconds = results["seconds_per_mpx"]
    rows = []
    for name, path in zip(names, models):
        crop, alarms = results["crops"][name], results["false_alarms_per_mpx"][name]
        training = facedetect.load_model(path).document["training"]
        rows.append([path, *(f"{pooled(crop[kind]['by_source'], COMPARED):.3f}"
                             for kind in ("clean", "grainy", "posterised")),
                     f"{pooled(crop['clean']['by_source'], ['utkface']):.3f}",
                     f"{pooled(crop['clean']['by_source'], ['extended-yale-b']):.3f}",
                     *(f"{alarms[kind]:.3f}" for kind in ("clean", "grainy", "posterised")),
                     f"{seconds[name] / seconds[OPENCV_DEFAULT]:.2f}x",
                     f"{training.get('seconds', 0):.0f}"])
    return _table(["model", "MTFL + Caltech", "grainy", "posterised", "UTKFace", "Yale B",
                   "FA/Mpx", "grainy", "posterised", "detect / OpenCV", "training s"], rows)


def at_operating_points(args, held, pictures) -> dict:
    """Each model at its own operating point (see the module's docstring)."""
    import cv2

    from .detect_speed import OPENCV_CASCADE, OPENCV_DEFAULT, seconds_per_mpx
    from .peer_detectors import opencv_cascade, ours
    from .peers import crops, false_alarms
    detectors = [ours(m) for m in args.models]
    results = {"machine": machine(), "crops": crops(detectors, held),
               "false_alarms_per_mpx": false_alarms(detectors, pictures)}
    reference = opencv_cascade(cv2.data.haarcascades + OPENCV_CASCADE, OPENCV_DEFAULT)
    results["seconds_per_mpx"] = seconds_per_mpx(
        {d.name: d.boxes for d in detectors + [reference]}, args.repeat)
    lines = [f"# Levers on held-out data ({args.label})\n", f"Machine: {results['machine']}.\n",
             *_point_table(results, args.models, [d.name for d in detectors])]
    write_results(args.label, results, "\n".join(lines) + "\n")
    return results


def at_equal_false_alarms(args, held, pictures) -> dict:
    """Each model's curve, read at equal false alarms (``--curves``)."""
    results = {"machine": machine(), "offsets": args.offsets, "alarm_levels": args.alarms,
               "curves": {}}
    for path in args.models:
        forms = opencv_forms(path) if args.opencv_export else {path: None}
        for label, model in forms.items():
            results["curves"][label] = curve(label, held, pictures, model, args.posterised,
                                             args.offsets)
    lines = [f"# Levers at equal false alarms ({args.label})\n",
             f"Machine: {results['machine']}. Held-out MTFL + Caltech crops found, at the "
             "threshold where the held-out face-free pictures raise the given false alarms "
             "per megapixel (read off each model's curve).\n",
             *_curve_table(results["curves"], args.alarms, "recall")]
    if args.posterised:
        lines += ["", "The same crops posterised (4 grey levels), at the same thresholds:\n",
                  *_curve_table(results["curves"], args.alarms, "posterised_recall")]
    write_results(args.label, results, "\n".join(lines) + "\n")
    return results


def main(argv=None) -> dict:
    from facedetect._utils.threads import wait_passively
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--label", help="results file name (default levers; --curves "
                                        "lever_curves)")
    parser.add_argument("--repeat", type=int, default=5,
                        help="rounds of detect's timing (default 5; not with --curves)")
    curves = parser.add_argument_group("at equal false alarms")
    curves.add_argument("--curves", action="store_true",
                        help="compare the models' curves at equal false alarms")
    curves.add_argument("--alarms", type=_levels,
                        help="false alarms per Mpx to compare at, comma-separated "
                             f"(default {','.join(f'{a:g}' for a in ALARM_LEVELS)})")
    curves.add_argument("--offsets", type=_numbers,
                        help="thresholds to score, from each model's own, comma-separated "
                             f"(default {','.join(f'{o:g}' for o in OFFSETS)})")
    curves.add_argument("--opencv-export", action="store_true",
                        help="measure the staged XMLs export-opencv writes (see above)")
    curves.add_argument("--posterised", action="store_true",
                        help="also the posterised crops at the same false alarms")
    args = parser.parse_args(argv)
    given = [flag for flag, value in (("--alarms", args.alarms), ("--offsets", args.offsets),
                                      ("--opencv-export", args.opencv_export),
                                      ("--posterised", args.posterised)) if value]
    if given and not args.curves:
        parser.error(f"{', '.join(given)} needs --curves")
    args.alarms = ALARM_LEVELS if args.alarms is None else args.alarms
    args.offsets = OFFSETS if args.offsets is None else args.offsets
    args.label = args.label or ("lever_curves" if args.curves else "levers")
    wait_passively()   # as the detect command does
    import facedetect
    from facedetect.pipeline import heldout_faces
    faces, pictures = wild_data(None)
    held = heldout_faces(facedetect.load_model(args.models[0]), faces)
    measure = at_equal_false_alarms if args.curves else at_operating_points
    return measure(args, held, pictures)


if __name__ == "__main__":
    main()
