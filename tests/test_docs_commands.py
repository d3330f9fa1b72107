"""Every example command line (``$ ...``) in the README and docs/ parses with the program's own
parser (running them all would take an hour; the suite runs each command elsewhere)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from facedetect.cli._main import build_parser

REPO = Path(__file__).resolve().parents[1]
STANDALONE = {"train-detector": "train", "evaluate-detector": "evaluate", "detect": "detect"}


def _command_lines():
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found = re.match(r"^\$ (.+)$", line)   # the shell prompt of an example
            if found:
                yield pytest.param(found.group(1), id=f"{path.name}:{number}")


def _argv(command: str):
    argv = shlex.split(command.split(" | ")[0])
    while argv and argv[0] in ("/usr/bin/time", "-v", "nice", "-n", "5"):
        argv = argv[1:]
    if not argv:
        return None
    if argv[0] in STANDALONE:
        return [STANDALONE[argv[0]], *argv[1:]]
    if argv[0] == "facedetect":
        return argv[1:]
    return None   # python, pip, ...: not ours


@pytest.mark.parametrize("command", list(_command_lines()))
def test_documented_command_parses(command):
    argv = _argv(command)
    if argv is None or "..." in command or "--help" in argv:
        pytest.skip("not a facedetect command line")
    parser = build_parser()
    try:
        parser.parse_args(argv)
    except SystemExit as error:
        pytest.fail(f"{command!r} does not parse (exit {error.code})")
