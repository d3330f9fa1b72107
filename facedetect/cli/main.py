"""``facedetect``: one program with subcommands."""

from __future__ import annotations

import argparse
import sys

from .. import __version__
from . import (
    data_cmd,
    detect_cmd,
    evaluate_cmd,
    evaluate_images_cmd,
    export_cmd,
    paper_cmd,
    show_cmd,
    sweep_cmd,
    train_cmd,
)
from .common import OneLineErrorParser, run_safely

COMMAND_MODULES = [train_cmd, detect_cmd, evaluate_cmd, evaluate_images_cmd, sweep_cmd,
                   paper_cmd, show_cmd, export_cmd, data_cmd]


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog="facedetect",
        description="Train cost-sensitive face detectors (AdaBoostDB) and run them on images.")
    parser.add_argument("--version", action="version", version=f"facedetect {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND",
                                       parser_class=OneLineErrorParser)
    for module in COMMAND_MODULES:
        module.add_parser(subparsers)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    # A command with verbs (``data fetch``) is named with its verb.
    name = " ".join(filter(None, (args.command, getattr(args, "data_command", None))))
    return run_safely(args.func, args, f"facedetect {name}")


if __name__ == "__main__":
    sys.exit(main())
