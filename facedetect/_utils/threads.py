"""How numba's OpenMP threads wait between parallel regions: spinning for training,
sleeping for detection beside other work.

By default OpenMP's idle threads spin. Beside a process that holds a core, the spinning
thread takes the time the working one needs: ``detect`` ran 1.8x slower with one core busy,
and 1.05x with passive waiting. Boosting on an idle machine is the other way round: passive
waiting made a round 1.5x slower, as its threads sleep and wake between the many short
parallel regions of a round (``python -m benchmarks.boosting --busy``). So the policy is
chosen per command, before the OpenMP runtime loads (it reads the setting once):
``detect`` and ``evaluate-images`` wait passively, training keeps OpenMP's default. A
user's own
``OMP_WAIT_POLICY`` wins.
"""

from __future__ import annotations

import os

__all__ = ["wait_passively"]

POLICY_VARIABLE = "OMP_WAIT_POLICY"


def wait_passively() -> None:
    """Let idle OpenMP threads sleep (``OMP_WAIT_POLICY=PASSIVE``) unless the user chose;
    effective only before the first parallel kernel runs.

    Examples
    --------
    >>> saved = os.environ.pop(POLICY_VARIABLE, None)
    >>> wait_passively()
    >>> os.environ[POLICY_VARIABLE]
    'PASSIVE'
    >>> os.environ[POLICY_VARIABLE] = "ACTIVE"     # the user's own choice wins
    >>> wait_passively()
    >>> os.environ[POLICY_VARIABLE]
    'ACTIVE'
    >>> _ = os.environ.pop(POLICY_VARIABLE)
    >>> if saved is not None:
    ...     os.environ[POLICY_VARIABLE] = saved
    """
    os.environ.setdefault(POLICY_VARIABLE, "PASSIVE")
