"""The one exception type the command line turns into a single line on stderr."""

from __future__ import annotations


class FacedetectError(Exception):
    """A user-facing error: bad input, missing data, a tampered model file.

    The command line prints ``str(error)`` on one line and exits non-zero; library users
    catch it like any other exception. Subclasses ``ValueError`` semantics loosely: it is
    raised for problems with what was passed in, not for bugs.

    See Also
    --------
    facedetect.costs.InvalidCost : a cost that is not two positive numbers.
    facedetect.detector.DetectionParams : scan settings, refused by name.

    Examples
    --------
    >>> import facedetect
    >>> try:
    ...     facedetect.load_model("no-such-model.json")
    ... except facedetect.FacedetectError as error:
    ...     print(error)
    no-such-model.json: model file not found
    """


class InvalidParameter(FacedetectError, ValueError, TypeError):
    """A parameter out of its range or of the wrong kind: one line naming it, and both a
    ``ValueError`` and a ``TypeError``, as scikit-learn's ``InvalidParameterError`` is.
    ``parameter`` is its name, so that the command line can say the flag instead.

    Examples
    --------
    >>> error = InvalidParameter("rounds must be an integer in 1..100000, got 0", "rounds")
    >>> isinstance(error, ValueError), isinstance(error, TypeError), error.parameter
    (True, True, 'rounds')
    """

    def __init__(self, message: str, parameter: str | None = None):
        super().__init__(message)
        self.parameter = parameter


class DataNotFoundError(FacedetectError):
    """No dataset was found in any of the places searched."""


class InterruptedRun(FacedetectError):
    """Ctrl-C or SIGTERM stopped a run that saved where it stood; the command line exits
    130, as for any interrupt, after saying how to resume. ``saved`` says what was saved,
    ``hint`` how to go on (a command that resumes otherwise words its own)."""

    def __init__(self, saved: str, hint: str = ""):
        super().__init__(f"{saved}; {hint}" if hint else saved)
        self.saved, self.hint = saved, hint


class CheckpointMismatch(FacedetectError):
    """A checkpoint to resume from was written by a run with other settings or data."""


class UnusableCheckpoint(FacedetectError):
    """A checkpoint to resume from is damaged or unreadable; ``reason`` says how."""

    def __init__(self, message: str, reason: str = ""):
        super().__init__(message)
        self.reason = reason or message
