"""The peers benchmark's tables and curve picture (:mod:`benchmarks.peers`)."""

from __future__ import annotations

from .common import RESULTS
from .heldout_sets import COMPARED, pooled


def _budgets(row: dict) -> str:
    return " | ".join(f"{v:.3f}" for v in row["tpr_at_fp"].values())


def markdown(results: dict, label: str) -> str:
    names = results["detectors"]
    budgets = " | ".join(f"TPR at {b} FP" for b in results["budgets"])
    rule = "|---" * (len(results["budgets"]) + 3) + "|"
    lines = [f"# Peers, one run ({label})\n", f"Machine: {results['machine']}.\n",
             "## MIT+CMU development images (44 pictures, 218 faces)\n",
             "Each detector's own knob swept; peers with raw boxes, then with one box mapping "
             "(scale about the centre, downward shift in box heights) fitted on these images. "
             "Our models keep their file's mapping.\n",
             f"| detector | boxes | {budgets} | shipped setting |", rule]
    for name in names:
        row = results["dev"][name]
        shipped = row["raw"]["shipped"]
        lines.append(f"| {name} | {'own' if 'mapped' not in row else 'raw'} | "
                     f"{_budgets(row['raw'])} | {shipped['tpr']:.3f} at "
                     f"{shipped['false_positives']} |")
        if "mapped" in row:
            m, shipped = row["mapping"], row["mapped"]["shipped"]
            lines.append(f"| {name} | x{m['scale']:.2f}, {m['shift']:+.2f} | "
                         f"{_budgets(row['mapped'])} | {shipped['tpr']:.3f} at "
                         f"{shipped['false_positives']} |")
    lines += ["\n## Held-out data, each detector at its shipped setting\n",
              "| detector | wild crops, MTFL + Caltech | grainy | posterised | UTKFace | "
              "Yale B | face-free FA/Mpx | grainy | posterised | s/Mpx | / OpenCV default, "
              "idle | one core busy |", "|---" * 12 + "|"]
    speed, busy = results["seconds_per_mpx"], results["seconds_per_mpx_one_core_busy"]
    reference = "OpenCV default"
    for name in names:
        crops, alarms = results["crops"][name], results["false_alarms_per_mpx"][name]
        lines.append(
            f"| {name} | {pooled(crops['clean']['by_source'], COMPARED):.3f} | "
            f"{pooled(crops['grainy']['by_source'], COMPARED):.3f} | "
            f"{pooled(crops['posterised']['by_source'], COMPARED):.3f} | "
            f"{pooled(crops['clean']['by_source'], ['utkface']):.3f} | "
            f"{pooled(crops['clean']['by_source'], ['extended-yale-b']):.3f} | "
            f"{alarms['clean']:.3f} | {alarms['grainy']:.3f} | {alarms['posterised']:.3f} | "
            f"{speed[name]:.3f} | "
            + (f"{speed[name] / speed[reference]:.2f}x | "
               f"{busy[name] / busy[reference]:.2f}x |" if reference in speed else "| |"))
    lines.append(f"\nThe curves: [{label}_curves.png]({label}_curves.png).")
    return "\n".join(lines) + "\n"


def plot_curves(results: dict, label: str) -> None:
    """Faces found against false positives on the development images, one line each."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(7.5, 5))
    for name in results["detectors"]:
        row = results["dev"][name]
        curve = row.get("mapped", row["raw"])
        points = sorted((p["false_positives"], p["found"] / curve["faces"])
                        for p in curve["points"])
        best, xs, ys = 0.0, [], []
        for fp, tpr in points:   # the best TPR within each budget: a step curve
            best = max(best, tpr)
            xs.append(fp)
            ys.append(best)
        style = "-" if row.get("mapped") is None else "--"
        ax.step(xs, ys, style, where="post", label=name)
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xlim(0, 200)
    ax.set_ylim(0.4, 1)
    ax.set_xlabel("false positives on the 44 development images")
    ax.set_ylabel("fraction of the 218 faces found")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title("Solid: our models (own boxes); dashed: peers with fitted box mapping")
    fig.tight_layout()
    RESULTS.mkdir(exist_ok=True)
    fig.savefig(RESULTS / f"{label}_curves.png", dpi=110)
    plt.close(fig)
