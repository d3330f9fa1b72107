"""``facedetect sweep``: the paper's CBCL experiment (all costs, balanced subset, k-fold CV)."""

from __future__ import annotations

import argparse

from ..data import load_cbcl
from ..errors import FacedetectError
from ..paper_figures import PAPER_COSTS
from ..training.sweep import run_sweep, sweep_markdown, write_sweep
from .common import parse_cost


def parse_costs(text: str):
    if text == "paper":
        return list(PAPER_COSTS)
    try:
        return [parse_cost(part) for part in text.split(";")]
    except argparse.ArgumentTypeError as error:
        raise argparse.ArgumentTypeError(f"--costs: {error} (separate costs with ';')") from None


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("sweep", help="the paper's CBCL cost sweep with k-fold CV")
    parser.add_argument("--data", help="CBCL folder or faces.tar.gz")
    parser.add_argument("--rounds", type=int, default=200, help="rounds per model (default 200)")
    parser.add_argument("--costs", type=parse_costs, default=list(PAPER_COSTS),
                        help="'paper' (the 19 paper costs, default) or e.g. '1,10;1,1;10,1'")
    parser.add_argument("--folds", type=int, default=3, help="cross-validation folds (default 3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--selection", choices=("root", "loss"), default="root")
    parser.add_argument("--out-dir", default="results/sweep",
                        help="where the tables and the picture go (default results/sweep)")
    parser.add_argument("--quiet", action="store_true")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.rounds < 1 or args.folds < 2:
        raise FacedetectError("--rounds must be >= 1 and --folds >= 2")
    data = load_cbcl(args.data)
    rows = run_sweep(data, args.costs, rounds=args.rounds, folds=args.folds, seed=args.seed,
                     selection=args.selection, progress=not args.quiet)
    n_per_class = int(min((data.labels == 1).sum(), (data.labels == 0).sum()))
    paths = write_sweep(rows, args.out_dir, args.rounds, args.folds, n_per_class)
    print(sweep_markdown(rows, args.rounds, args.folds, n_per_class))
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0
