"""How far a cascade's stages go: the false alarms of its first ``k`` stages on the
held-out face-free pictures, and the time its trainer took to reach a given rate.

:mod:`benchmarks.trainers` asks this of every cascade it trains, so that "ours reaches
``opencv_traincascade``'s false-alarm rate N times faster" is a measurement: OpenCV runs
any prefix of a ``cascade.xml`` (the stages are tried in order), so the prefixes of one
trained cascade are the cascades its trainer had after each stage.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Callable

import numpy as np
from facedetect.images import read_grey

from .peer_detectors import opencv_cascade


def prefix_cascade(xml: str | Path, stages: int, out: str | Path) -> Path:
    """``xml`` (an OpenCV ``cascade.xml``) cut to its first ``stages`` stages, written
    to ``out``.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "c.xml").write_text(
    ...     '<?xml version="1.0"?><opencv_storage><cascade><stageNum>3</stageNum><stages>'
    ...     '<_>a</_><_>b</_><_>c</_></stages></cascade></opencv_storage>')
    >>> cut = ElementTree.parse(prefix_cascade(folder / "c.xml", 2, folder / "p.xml"))
    >>> cut.find("cascade/stageNum").text, [s.text for s in cut.find("cascade/stages")]
    ('2', ['a', 'b'])
    """
    tree = ElementTree.parse(xml)
    cascade = tree.getroot().find("cascade")
    stages_node = cascade.find("stages")
    if not 1 <= stages <= len(stages_node):
        raise ValueError(f"{xml} has {len(stages_node)} stages; cannot keep {stages}")
    for stage in list(stages_node)[stages:]:
        stages_node.remove(stage)
    cascade.find("stageNum").text = str(stages)
    tree.write(out, encoding="unicode", xml_declaration=True)
    return Path(out)


def false_alarms_per_mpx(xml: str | Path, pictures: list[np.ndarray]) -> float:
    """Boxes per megapixel that the cascade finds on face-free grey ``pictures``, run as
    the trainers' table runs it (:func:`~benchmarks.peer_detectors.opencv_cascade`:
    ``detectMultiScale(grey, 1.1, 3)``)."""
    cascade = opencv_cascade(str(xml), str(xml))
    found = sum(len(cascade.boxes(grey)) for grey in pictures)
    return found / (sum(grey.size for grey in pictures) / 1e6)


def first_stage_at(rate_of: Callable[[int], float], n_stages: int,
                   target: float) -> tuple[int | None, dict[int, float]]:
    """``(k or None, rates)``: by bisection, a number of stages ``k`` whose false alarms
    are at most ``target`` while ``k - 1`` stages' are over it (or ``k = 1``), and every
    rate measured on the way, ``{k: rate}``. None: even all ``n_stages`` stay above
    ``target``. A stage only removes windows, so the rate falls with ``k`` and ``k`` is
    the fewest; the grouping can break that by a box or two.

    Examples
    --------
    >>> first_stage_at(lambda k: 10.0 / k, 20, 1.0)
    (10, {20: 0.5, 10: 1.0, 5: 2.0, 7: 1.4285714285714286, 8: 1.25, 9: 1.1111111111111112})
    >>> first_stage_at(lambda k: 10.0 / k, 5, 1.0)[0] is None
    True
    """
    rates = {n_stages: rate_of(n_stages)}
    if rates[n_stages] > target:
        return None, rates
    low, high = 0, n_stages   # over the target with low stages (none: everything passes)
    while high - low > 1:
        middle = (low + high) // 2
        rates[middle] = rate_of(middle)
        low, high = (low, middle) if rates[middle] <= target else (middle, high)
    return high, rates


def seconds_to(stats: dict, stages: int) -> float:
    """The trainer's wall seconds until it had ``stages`` stages. Where the trainer
    records when each stage was done (``stage_elapsed``, seconds since its training began,
    facedetect's), its wall time outside training (start, reading, writing) plus that;
    otherwise its whole run less the stages after them (its start, reading and the first
    negatives count). A run stopped at the cap spent its last seconds on a stage it never
    finished, so there the finished stages' own seconds alone count (its log's clock: its
    start is left out, in its favour, as are its unfinished stage's seconds), or where it
    records when each stage was done, that moment (since its training began).

    Examples
    --------
    >>> seconds_to({"wall_s": 100.0, "stage_seconds": [10, 20, 30]}, 2)
    70.0
    >>> seconds_to({"wall_s": 900.0, "code": "capped", "stage_seconds": [10, 20, 30]}, 2)
    30.0
    >>> seconds_to({"wall_s": 100.0, "stage_seconds": [10, 20, 30], "training_seconds": 95,
    ...             "stage_elapsed": [12, 32, 62]}, 2)    # a failed fourth stage: 33 s
    37.0
    >>> seconds_to({"wall_s": 900.0, "code": "capped", "stage_seconds": [10, 20, 30],
    ...             "stage_elapsed": [12, 32, 62]}, 2)
    32.0
    """
    done = stats.get("stage_seconds", [])
    if stats.get("code") == "capped":
        if stats.get("stage_elapsed"):
            return round(float(stats["stage_elapsed"][stages - 1]), 1)
        return round(float(sum(done[:stages])), 1)
    if stats.get("stage_elapsed") and stats.get("training_seconds") is not None:
        outside = float(stats["wall_s"]) - float(stats["training_seconds"])
        return round(outside + float(stats["stage_elapsed"][stages - 1]), 1)
    return round(float(stats["wall_s"]) - sum(done[stages:]), 1)


def reach(stats: dict, pictures: list[np.ndarray], target: float, folder: Path,
          whole_rate: float | None = None,
          recall_of: Callable[[Path], float] | None = None) -> dict:
    """When the cascade of ``stats`` (a trainers' entry with its ``xml``) got to
    ``target`` false alarms per megapixel of ``pictures``: the stages, the seconds, and
    the rates measured on the way. ``whole_rate``: the whole cascade's rate where the
    trainers' table measured it already (it is not measured again). ``recall_of``: the
    held-out recall of a cascade file, asked of the stages that reached the target (a
    trainer that gets there by losing faces gets there sooner)."""
    xml = Path(stats["xml"])
    n_stages = len(ElementTree.parse(xml).getroot().find("cascade/stages"))
    if n_stages != len(stats.get("stage_seconds", [])):
        raise ValueError(f"{xml} holds {n_stages} stages, its trainer's record "
                         f"{len(stats.get('stage_seconds', []))}")

    def cut(k: int) -> Path:   # cut files named by the trainer's folder
        return xml if k == n_stages else prefix_cascade(
            xml, k, folder / f"{xml.parent.name}_{xml.stem}_{k}.xml")

    def rate_of(k: int) -> float:
        if k == n_stages and whole_rate is not None:
            return whole_rate
        return round(false_alarms_per_mpx(cut(k), pictures), 3)

    stages, rates = first_stage_at(rate_of, n_stages, target)
    found = {"target": target, "stages": stages,
             "seconds": None if stages is None else seconds_to(stats, stages),
             "rates": {str(k): rates[k] for k in sorted(rates)}}
    if recall_of is not None and stages is not None:
        found["recall"] = round(float(recall_of(cut(stages))), 4)
    return found


def reach_opencv(run: dict, picture_paths: list, folder: Path,
                 recall_of: Callable[[Path], float] | None = None) -> dict:
    """For each cascade: the stages and seconds its trainer took to get down to the
    held-out false alarms of ``opencv_traincascade``'s cascade (its last stage within the
    cap), measured on its own prefixes (:mod:`benchmarks.trainer_stages`), and with
    ``recall_of`` the held-out recall of those stages."""
    target = run["false_alarms_per_mpx"].get(f"{run['size']}: opencv_traincascade")
    if target is None:
        return reach_acceptance(run)
    greys = [read_grey(path) for path in picture_paths]
    return {name: reach(stats, greys, target, folder,
                        run["false_alarms_per_mpx"].get(f"{run['size']}: {name}"), recall_of)
            for name, stats in run["trainers"].items()
            if stats.get("xml") and Path(stats["xml"]).exists() and stats.get("stage_seconds")}


def reach_acceptance(run: dict) -> dict:
    """:func:`reach_opencv` where OpenCV's cascade was not evaluated (too permissive):
    the stages and seconds each trainer took until its stages accepted no more of the
    windows it mined than OpenCV's finished stages accepted of its own (each trainer's
    record: ``stage_acceptance[k]``, the share its first ``k`` stages accept, as
    ``opencv_traincascade`` logs it).

    Examples
    --------
    >>> run = {"trainers": {
    ...     "opencv_traincascade": {"code": "capped", "stage_seconds": [50, 60],
    ...                             "stage_acceptance": [1, 0.3, 0.1]},
    ...     "ours": {"wall_s": 40.0, "stage_seconds": [5, 5, 5, 5],
    ...              "stage_acceptance": [None, 0.5, 0.2, 0.08]}}}
    >>> rows = reach_acceptance(run)
    >>> rows["opencv_traincascade"]["stages"], rows["opencv_traincascade"]["seconds"]
    (2, 110.0)
    >>> rows["ours"]["stages"], rows["ours"]["seconds"], rows["ours"]["target"]
    (3, 35.0, 'acceptance 0.1')
    """
    opencv = run["trainers"].get("opencv_traincascade", {})
    done, accepted = len(opencv.get("stage_seconds", [])), opencv.get("stage_acceptance", [])
    if not done or len(accepted) <= done:
        return {}
    target, found = accepted[done], {}
    for name, stats in run["trainers"].items():
        ratios = stats.get("stage_acceptance") or []
        if not ratios:   # not a cascade trainer (dlib)
            continue
        stages = next((k for k in range(1, len(ratios))
                       if ratios[k] is not None and ratios[k] <= target), None)
        found[name] = {"target": f"acceptance {target:.4g}", "stages": stages,
                       "seconds": None if stages is None else seconds_to(stats, stages),
                       "rates": {} if stages is None else
                       {str(stages): float(f"{ratios[stages]:.4g}")}}
    return found


def reach_table(results: dict) -> list[str]:
    """The time each trainer took to reach OpenCV's held-out false alarms."""
    lines = ["", "Time to `opencv_traincascade`'s held-out false alarms per megapixel "
             "(its cascade's; each cascade's first stages, cut from its XML, run by OpenCV; "
             "where its cascade was too permissive to evaluate, the share of mined windows "
             "its stages accept, each trainer's own record, instead):",
             "", "| positives | trainer | target FA / Mpx | stages | seconds | "
             "/ OpenCV's seconds | held-out crops there | FA / Mpx after k stages |",
             "|---|---|---|---|---|---|---|---|"]
    for run in results["runs"]:
        reached = run.get("reach", {})
        opencv = reached.get("opencv_traincascade", {}).get("seconds")
        for name, row in reached.items():
            if row["stages"] is None:
                stages = seconds = ratio = "not reached"
            else:
                stages, seconds = row["stages"], row["seconds"]
                ratio = f"{seconds / opencv:.2f}x" if opencv else ""
            rates = ", ".join(f"{k}: {r}" for k, r in row["rates"].items())
            recall = f"{row['recall']:.3f}" if "recall" in row else ""
            lines.append(f"| {run['size']} | {name} | {row['target']} | {stages} | "
                         f"{seconds} | {ratio} | {recall} | {rates} |")
    return lines if any(run.get("reach") for run in results["runs"]) else []
