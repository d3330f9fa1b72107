"""``facedetect sweep``: the paper's CBCL experiment (all costs, balanced subset, k-fold CV)."""

from __future__ import annotations

import argparse

from ..reproduce._paper_figures import PAPER_COSTS
from ._common import parse_cost, writable_folder


def parse_costs(text: str):
    """``"CP,CN;CP,CN;..."`` or ``paper`` -> checked cost pairs (argparse type): a sweep
    has no configuration object to check them later, so each is checked here."""
    from ..costs import InvalidCost, check_cost   # the standard library only
    if text == "paper":
        return list(PAPER_COSTS)
    try:
        return [check_cost(parse_cost(part), shown=repr(part)) for part in text.split(";")]
    except (argparse.ArgumentTypeError, InvalidCost) as error:
        raise argparse.ArgumentTypeError(f"{error} (separate costs with ';')") from None


def _parse_rounds(text: str) -> list[int]:
    try:
        rounds = sorted({int(part) for part in text.split(",")})
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected round counts like 10,50,200, got "
                                         f"{text!r}") from None
    if rounds[0] < 1 or rounds[-1] > 100_000:
        raise argparse.ArgumentTypeError(f"round counts must be in 1..100000, got {text!r}")
    return rounds


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("sweep", help="the paper's CBCL cost sweep with k-fold CV")
    parser.add_argument("--data", help="CBCL folder or faces.tar.gz")
    parser.add_argument("--rounds", type=_parse_rounds, default=[10, 50, 200, 400],
                        help="round counts, comma-separated (default 10,50,200,400; one "
                             "training at the largest serves them all)")
    parser.add_argument("--calibration-split", type=float, default=0.2, metavar="F",
                        help="fraction of each training fold that chooses the operating "
                             "point (default 0.2)")
    parser.add_argument("--costs", type=parse_costs, default=list(PAPER_COSTS),
                        help="'paper' (the 19 paper costs, default) or e.g. '1,10;1,1;10,1'")
    parser.add_argument("--folds", type=int, default=3, help="cross-validation folds (default 3)")
    parser.add_argument("--seed", type=int, default=0, help="fold seed (default 0)")
    parser.add_argument("--selection", choices=("root", "loss"), default="root",
                        help="AdaBoostDB's rule: largest root (paper, default) or smallest "
                             "loss")
    parser.add_argument("--out-dir", default="results/sweep",
                        help="where the tables and the picture go (default results/sweep)")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..data import load_cbcl
    from ..reproduce._cbcl_sweep import SweepSettings, run_sweep
    from ..reproduce._cbcl_sweep_report import mean_table, sweep_markdown, write_sweep
    settings = SweepSettings(costs=tuple(args.costs), rounds=tuple(args.rounds),
                             folds=args.folds, seed=args.seed, selection=args.selection,
                             calibration_split=args.calibration_split)
    settings.check()
    data = load_cbcl(args.data)
    out_dir = writable_folder(args.out_dir, "--out-dir")
    checkpoint = out_dir / "cbcl_sweep_checkpoint.json"
    rows = run_sweep(data, settings, progress=not args.quiet, checkpoint=checkpoint)
    n_per_class = int(min((data.labels == 1).sum(), (data.labels == 0).sum()))
    paths = write_sweep(rows, args.out_dir, args.costs, args.folds, n_per_class)
    print(sweep_markdown(mean_table(rows), args.costs, args.rounds, args.folds, n_per_class))
    checkpoint.unlink(missing_ok=True)
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0
