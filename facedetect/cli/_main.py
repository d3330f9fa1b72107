"""``facedetect``: one program with subcommands."""

from __future__ import annotations

import argparse
import sys

from .._version import __version__
from . import _calibrate_cmd as calibrate_cmd
from . import _data_cmd as data_cmd
from . import _detect_cmd as detect_cmd
from . import _evaluate_cmd as evaluate_cmd
from . import _evaluate_images_cmd as evaluate_images_cmd
from . import _export_cmd as export_cmd
from . import _opencv_cmd as opencv_cmd
from . import _paper_cmd as paper_cmd
from . import _show_cmd as show_cmd
from . import _sweep_cmd as sweep_cmd
from . import _train_cmd as train_cmd
from . import _verifier_cmd as verifier_cmd
from ._common import OneLineErrorParser, run_safely

COMMAND_MODULES = [train_cmd, verifier_cmd, detect_cmd, evaluate_cmd, evaluate_images_cmd,
                   sweep_cmd, paper_cmd, show_cmd, export_cmd, calibrate_cmd, data_cmd,
                   opencv_cmd]


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog="facedetect",
        description="Train cost-sensitive face detectors (AdaBoostDB) and run them on images.")
    parser.add_argument("--version", action="version", version=f"facedetect {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND",
                                       parser_class=OneLineErrorParser)
    for module in COMMAND_MODULES:
        module.add_parser(subparsers)
    for action in subparsers._choices_actions:   # every command's --help opens with a line
        command = subparsers.choices[action.dest]
        if command.description is None and action.help:
            command.description = action.help[0].upper() + action.help[1:] + "."
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
