"""Progress bars: tqdm's, redrawn as usual on a terminal, and at most every
``LOG_INTERVAL`` seconds where standard error goes to a file or a pipe, so that a log of
a 20-minute training holds a few dozen progress lines rather than thousands of redraws."""

from __future__ import annotations

import sys

LOG_INTERVAL = 30.0   # seconds between a bar's lines in a log


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):   # replaced or closed
        return False


def progress_bar(iterable=None, **settings):
    """``tqdm.auto.tqdm(iterable, **settings)``, redrawn at most every ``LOG_INTERVAL``
    seconds when standard error is not a terminal (unless ``mininterval`` is given).

    Examples
    --------
    >>> bar = progress_bar(range(3), disable=True)
    >>> list(bar)
    [0, 1, 2]
    """
    from tqdm.auto import tqdm
    if not _stderr_is_terminal():
        settings.setdefault("mininterval", LOG_INTERVAL)
    return tqdm(iterable, **settings)
