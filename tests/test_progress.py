"""Progress bars in a log: a few lines, not one per update."""

import io
import time

from facedetect._utils import progress


def _redraws(stream_is_terminal: bool, monkeypatch) -> int:
    log = io.StringIO()
    monkeypatch.setattr(progress, "_stderr_is_terminal", lambda: stream_is_terminal)
    for _ in progress.progress_bar(range(40), file=log, desc="work"):
        time.sleep(0.01)
    return log.getvalue().count("work")


def test_a_bar_in_a_log_draws_its_start_and_end_only(monkeypatch):
    assert _redraws(False, monkeypatch) == 2


def test_a_bar_on_a_terminal_redraws_as_it_goes(monkeypatch):
    assert _redraws(True, monkeypatch) > 2
