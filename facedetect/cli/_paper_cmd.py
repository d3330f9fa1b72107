"""``facedetect paper``: the paper's synthetic and UCI experiments, our tables beside its."""

from __future__ import annotations

import argparse
import shlex
import sys

from ..errors import FacedetectError
from ..reproduce._datasets import ALL_DATASETS
from ..reproduce._methods import METHODS
from ._sweep_cmd import parse_costs


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "paper", help="reproduce the paper's tables (CS vs DBN vs DB, asymmetry, Bayes)")
    parser.add_argument("--quick", action="store_true",
                        help="3 costs, 10 rounds, 1 repeat: a few minutes (CI runs it)")
    parser.add_argument("--uci", help="folder of the UCI sets (default: $FACEDETECT_UCI, "
                                      "./data/uci, or beside the CBCL data)")
    parser.add_argument("--datasets", default=",".join(ALL_DATASETS),
                        help="comma-separated subset of " + ", ".join(ALL_DATASETS))
    parser.add_argument("--costs", type=parse_costs,
                        help="'paper' (the 19 costs) or e.g. '1,10;1,1;10,1'")
    parser.add_argument("--rounds", type=int, help="boosting rounds (full 50, quick 10)")
    parser.add_argument("--folds", type=int, default=3, help="cross-validation folds "
                                                                "(default 3)")
    parser.add_argument("--repeats", type=int, help="timing repeats per model (full 3, quick 1)")
    parser.add_argument("--methods", default=",".join(METHODS),
                        help="comma-separated subset of " + ", ".join(METHODS))
    parser.add_argument("--jobs", type=int, default=1,
                        help="data sets trained at once, one process and one core each")
    parser.add_argument("--out-dir", default="results/paper",
                        help="folder for the tables and pictures (default results/paper)")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.set_defaults(func=run)


def _names(text: str, allowed, what: str) -> tuple:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in allowed]
    if unknown or not names:
        raise FacedetectError(f"unknown {what} {', '.join(unknown) or '(none given)'}; "
                              f"choose from {', '.join(allowed)}")
    return names


def run(args: argparse.Namespace) -> int:
    from ..reproduce._paper import PaperConfig, run_paper
    from ..reproduce._report import summary_markdown, write_paper_results
    overrides = {k: v for k, v in (("costs", args.costs), ("rounds", args.rounds),
                                   ("repeats", args.repeats)) if v is not None}
    overrides.update(datasets=_names(args.datasets, ALL_DATASETS, "data set"),
                     methods=_names(args.methods, tuple(METHODS), "method"),
                     folds=args.folds, uci_root=args.uci, jobs=args.jobs)
    config = PaperConfig.quick(**overrides) if args.quick else PaperConfig(**overrides)
    if config.rounds < 1 or config.folds < 2 or config.repeats < 1 or config.jobs < 1:
        raise FacedetectError("--rounds, --repeats and --jobs must be >= 1 and --folds >= 2")
    if "db" not in config.methods:
        raise FacedetectError("--methods must include db (every table compares against it)")
    command = "facedetect paper " + " ".join(shlex.quote(a) for a in sys.argv[2:])
    results = run_paper(config, progress=not args.quiet)
    paths = write_paper_results(results, args.out_dir, command)
    print(summary_markdown(results, command))
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0
