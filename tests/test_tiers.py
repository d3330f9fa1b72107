"""The test tiers: slow tests are marked where they are defined, and every command keeps an
end-to-end test in the fast tier (`pytest -m "not slow"`)."""

from __future__ import annotations

import re
from pathlib import Path

from .conftest import END_TO_END

TESTS = Path(__file__).parent
# Names of one command: the standalone programs' names for the subcommands.
ALIASES = {"train-detector": "train", "evaluate-detector": "evaluate"}


def _tests() -> dict[str, bool]:
    """``{test name: marked slow}`` over the test files, read from their source: a test is
    slow when ``@pytest.mark.slow`` is among the decorators right above its ``def``."""
    found = {}
    for path in TESTS.glob("test_*.py"):
        lines = path.read_text().split("\n")
        for number, line in enumerate(lines):
            name = re.match(r"^def (test_\w+)\(", line)
            if not name:
                continue
            above, slow = number - 1, False
            while above >= 0 and lines[above] and not lines[above].startswith(("def ", "#")):
                slow |= lines[above].strip() == "@pytest.mark.slow"
                above -= 1
            found[name.group(1)] = slow
    return found


def test_every_command_keeps_an_end_to_end_test_in_the_fast_tier():
    from facedetect.cli._main import build_parser
    commands = set(build_parser()._subparsers._group_actions[0].choices)
    assert set(ALIASES) <= commands and set(ALIASES.values()) <= commands
    # every command, hyphenated or not, but an alias of another: none may go untested
    assert commands - set(ALIASES) == set(END_TO_END)
    tests = _tests()
    for command, test in END_TO_END.items():
        assert test in tests, (command, test)
        assert not tests[test], f"{command}'s end-to-end test {test} is marked slow"


def test_the_slow_marks_are_read_where_they_are_written():
    # the reader above against a hand-made case of each layout it meets
    tests = _tests()
    assert tests["test_every_command_keeps_an_end_to_end_test_in_the_fast_tier"] is False
    # the mark above another decorator
    assert tests["test_a_scan_like_opencvs_skips_the_windows_opencv_never_scores"] is True
    assert tests["test_mutated_model_loads_and_works_or_is_refused_cleanly"] is True
