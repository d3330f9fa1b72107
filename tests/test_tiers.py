"""The test tiers: every name the slow tier lists is a test, and every command keeps an
end-to-end test in the fast tier (`pytest -m "not slow"`)."""

from __future__ import annotations

import re
from pathlib import Path

from .conftest import END_TO_END, SLOW_TESTS

TESTS = Path(__file__).parent


def _defined() -> set[str]:
    return {name for path in TESTS.glob("test_*.py")
            for name in re.findall(r"^def (test_\w+)\(", path.read_text(), re.M)}


def test_every_slow_name_is_a_test():
    # a renamed test would otherwise fall silently into the fast tier
    assert not SLOW_TESTS - _defined()


def test_every_command_keeps_an_end_to_end_test_in_the_fast_tier():
    from facedetect.cli._main import build_parser
    commands = set(build_parser()._subparsers._group_actions[0].choices)
    names = {name for name in commands if "-" not in name or name in END_TO_END}
    assert {"train", "detect", "evaluate", "evaluate-images", "sweep", "paper", "show",
            "export-opencv", "data"} <= names
    assert names - {"train-detector", "evaluate-detector"} <= set(END_TO_END)
    for command, test in END_TO_END.items():
        assert test in _defined() and test not in SLOW_TESTS, command
