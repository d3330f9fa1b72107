"""What every command shares: the error wrapper and argument parsers for costs and paths."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import math
import os
import re
import sys
import tempfile
import warnings
from pathlib import Path

from ..errors import FacedetectError, InterruptedRun, InvalidParameter
from .._utils.interrupts import (quiet_compiler_finalizers, redelivered_interrupts,
                          terminate_as_interrupt)

EXIT_USAGE = 2
EXIT_FAILURE = 1
EXIT_INTERRUPTED = 130   # 128 + SIGINT, as shells report it


# A negative number as a flag's value (``--threshold -1e9``): argparse's own pattern knows
# no exponent, and took -1e9 for a flag.
NEGATIVE_NUMBER = re.compile(r"^-(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")


class OneLineErrorParser(argparse.ArgumentParser):
    """Usage errors as one line on stderr (``--help`` still shows the full usage)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = NEGATIVE_NUMBER

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")

    def unrecognized(self, extras: list[str]):
        """Refuse arguments no flag takes, with the closest flag of this command."""
        unknown = next((a.split("=")[0] for a in extras if a.startswith("-")), None)
        close = difflib.get_close_matches(unknown, list(self._option_string_actions), 1,
                                          0.6) if unknown else []
        hint = f" (did you mean {close[0]}?)" if close else ""
        self.error(f"unrecognized arguments: {' '.join(extras)}{hint}; see "
                   f"'{self.prog} --help'")

    def parse_args(self, args=None, namespace=None):
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            _chosen_parser(self, parsed).unrecognized(extras)
        return parsed

    def parse_known_args(self, args=None, namespace=None):
        # Each parser (a command's included) notes its flags by destination, so that a
        # value the library refuses later is said as the flag that gave it (run_safely).
        namespace = namespace if namespace is not None else argparse.Namespace()
        flags = getattr(namespace, "_flags", {})
        for action in self._actions:
            long = [flag for flag in action.option_strings   # OpenCV's -numPos too
                    if flag.startswith("--") or len(flag) > 2]
            if long:   # the first, as --help shows it (--tilted, not --no-tilted)
                flags.setdefault(action.dest, long[0])
        namespace._flags = flags
        return super().parse_known_args(args, namespace)


def _chosen_parser(parser: argparse.ArgumentParser, args) -> argparse.ArgumentParser:
    """The parser of the (sub)command ``args`` chose: its flags are the ones to suggest."""
    while True:
        choices = next((a for a in parser._actions
                        if isinstance(a, argparse._SubParsersAction)), None)
        name = getattr(args, choices.dest, None) if choices else None
        if name not in getattr(choices, "choices", {}):
            return parser
        parser = choices.choices[name]


def run_safely(function, args, prog: str = "facedetect") -> int:
    """Run a command; a user-facing error becomes one line on stderr, prefixed with the
    command's own name (``train-detector: error: ...``), and a non-zero exit."""
    args.prog = prog
    try:
        with warnings.catch_warnings(), terminate_as_interrupt(), redelivered_interrupts():
            warnings.showwarning = _one_line_warning(prog)
            return int(function(args) or 0)
    except InterruptedRun as error:
        quiet_compiler_finalizers()
        print(f"{prog}: {error}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except InvalidParameter as error:
        flag = _flag_of(error.parameter, args)
        if flag is None:
            print(f"{prog}: error: {error}", file=sys.stderr)
            return EXIT_FAILURE
        # A value the library refuses is a usage error of the flag that gave it, as argparse
        # says it: the error carries the parameter's name, the flag is its dashed form.
        print(f"{prog}: error: argument {flag}: {error}", file=sys.stderr)
        return EXIT_USAGE
    except FacedetectError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        quiet_compiler_finalizers()
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except MemoryError:
        print(f"{prog}: error: out of memory", file=sys.stderr)
        return EXIT_FAILURE
    except BrokenPipeError:
        # The reader went away (``detect ... | head``): stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except OSError as error:
        # A file system refusal the checks before the work could not foresee (disk full,
        # a folder removed meanwhile): one line, naming the file.
        where = f"{error.filename}: " if error.filename else ""
        print(f"{prog}: error: {where}{error.strerror or error}", file=sys.stderr)
        return EXIT_FAILURE


def _flag_of(parameter: str | None, args: argparse.Namespace) -> str | None:
    """The flag that sets ``parameter`` (the library's name for it), None when the command
    has no such flag."""
    return getattr(args, "_flags", {}).get(parameter) if parameter else None


def _one_line_warning(prog: str):
    """A ``warnings.showwarning`` that prints ``prog: warning: message`` on one line (no
    source line, no file path), once per distinct message."""
    shown = set()

    def show(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())
        if text not in shown:
            shown.add(text)
            print(f"{prog}: warning: {text}", file=sys.stderr)
    return show


def parse_cost(text: str) -> tuple[float, float]:
    """``"CP,CN"`` -> two floats (argparse type). Only the text is read here: the values
    are checked once, with the rest of the configuration
    (:func:`facedetect.costs.check_cost`), and a refusal names ``--cost``."""
    parts = text.split(",")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(
            f"expected two costs CP,CN (e.g. 1,10), got {text!r}")
    try:
        return tuple(float(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"costs must be numbers, got {text!r}") from None


def bounded_int(low: int, high: int):
    """An argparse type: an integer in ``[low, high]``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected an integer in {low}..{high}, got "
                                             f"{text!r}")
        return value
    return parse


def bounded_float(low: float, high: float):
    """An argparse type: a finite number in ``[low, high]``."""
    def parse(text: str) -> float:
        value = finite_float(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected a number in {low:g}..{high:g}, got "
                                             f"{text!r}")
        return value
    return parse


def field_type(name: str, limits: dict | None = None):
    """An argparse type for the field ``name`` of a settings object: the kind and range
    its table declares (default ``TrainConfig``'s
    :data:`~facedetect.pipeline._config.FIELD_LIMITS`; ``RUN_LIMITS`` and
    ``CASCADE_LIMITS`` of :mod:`facedetect.pipeline._settings`), checked by the library's
    own check."""
    from ..pipeline._config import FIELD_LIMITS   # plain data: no numba here
    from ..limits import check_limited
    kind, low, high, ends, _ = (FIELD_LIMITS if limits is None else limits)[name]
    # A flag always carries a value: its message must not offer None, which the
    # library's field may take (the recipe's choice) but the command line cannot.
    flag_limits = {name: (kind, low, high, ends, False)}

    def parse(text: str):
        try:
            value = int(text) if kind == "int" else finite_float(text)
        except (ValueError, argparse.ArgumentTypeError):
            what = "an integer" if kind == "int" else "a finite number"
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        try:
            return check_limited(name, value, flag_limits)
        except FacedetectError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    parse.__name__ = name   # argparse names the type in its messages
    return parse


def finite_float(text: str) -> float:
    """A finite real number (argparse type): refuses nan and inf."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def scheduler(text: str) -> str:
    """A Dask scheduler address (argparse type): ``tcp://HOST:PORT``, ``ws://HOST:PORT``
    or ``HOST:PORT``."""
    from ..training._cluster import scheduler_address   # Dask itself is not imported
    try:
        return scheduler_address(text)
    except FacedetectError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("--scheduler: ")) from None


def feature_share(text: str) -> float | int:
    """A fraction in (0, 1], or a whole count above 1 (argparse type): scikit-learn's
    ``max_features``, where "1" stays the whole (as the fraction it always was here)."""
    value = finite_float(text)
    if value > 1 and value == int(value) and value <= 10**7:
        return int(value)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1] or a count of "
                                         f"features in 2..10^7, got {text!r}")
    return value


def probability(text: str) -> float:
    """A number strictly between 0 and 1 (argparse type)."""
    value = finite_float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}")
    return value


def _probe_folder(folder: Path, flag: str, shown) -> None:
    """Create and remove a file in ``folder``: the one test of writability that holds for
    every file system and user (``os.access`` says yes to root on a read-only mount)."""
    try:
        handle, probe = tempfile.mkstemp(prefix=".facedetect-probe-", dir=folder)
        os.close(handle)
        os.unlink(probe)
    except OSError as error:
        raise FacedetectError(f"{flag}: cannot write in {str(shown)!r} "
                              f"({error.strerror or error})") from None


def check_writable(path, flag: str) -> Path:
    """``path`` names a file that can be written (checked before any work is done)."""
    path = Path(path)
    if not path.parent.is_dir():
        raise FacedetectError(f"{flag}: folder {str(path.parent)!r} does not exist")
    if path.is_dir():
        raise FacedetectError(f"{flag}: {str(path)!r} is a folder; name a file")
    if path.exists() and not os.access(path, os.W_OK):
        raise FacedetectError(f"{flag}: {str(path)!r} is not writable")
    _probe_folder(path.parent, flag, path)
    return path


def writable_folder(path, flag: str) -> Path:
    """``path`` as a folder that exists and can be written, creating it (and its parents)
    if need be; checked before any work is done."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise FacedetectError(f"{flag}: {str(path)!r} is a file; name a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise FacedetectError(f"{flag}: cannot create folder {str(path)!r} "
                              f"({error.strerror or error})") from None
    _probe_folder(path, flag, path)
    return path


# Files a training run keeps beside its output: another run's --out must not be one.
RUN_FILE_SUFFIXES = (".lock", ".checkpoint.json", ".checkpoint.json.npz")


def check_not_run_file(path, flag: str) -> None:
    """Refuse an output named like a run's lock or checkpoint (``m.json.lock``): writing a
    model there would break the run that owns it, or be taken for its state."""
    name = str(path)
    import re
    if re.search(r"\.checkpoint\.json\.[0-9a-f]{16}\.npz$", name):
        raise FacedetectError(f"{flag}: {name!r} is named like a training run's checkpoint "
                              "windows; choose another name")
    for suffix in RUN_FILE_SUFFIXES:
        if name.endswith(suffix):
            raise FacedetectError(f"{flag}: {name!r} is named like a training run's "
                                  f"{suffix} file; choose another name")


@contextlib.contextmanager
def created_folder(path, flag: str):
    """:func:`writable_folder` for the block; the folders it created are removed again
    if the block fails and leaves them empty (nothing left behind by a failed run)."""
    path = Path(path)
    missing = [folder for folder in (path, *path.parents) if not folder.exists()]
    writable_folder(path, flag)
    try:
        yield path
    except BaseException:
        for folder in missing:          # deepest first
            try:
                folder.rmdir()
            except OSError:
                break                   # not empty, or not ours to remove
        raise


def describe_operating_point(point: dict | None) -> str:
    """One line saying where a model's window operating point came from."""
    if point is None:
        return "no operating point recorded: threshold 0"
    how = ("least expected cost" if point["rule"] == "expected-cost" else
           f"{point['calibration']['method']}-calibrated probability at the Bayes cut")
    extreme = f"; at the extreme: {point['extreme']}" if point.get("extreme") else ""
    # A file may leave out how many windows calibrated it: said only where recorded.
    count = (f"{point['n_calibration']} calibration windows" if "n_calibration" in point
             else "calibration windows not recorded")
    return (f"operating point: threshold {point['threshold']:+.4f} ({how}, cost "
            f"{point['cost'][0]:g},{point['cost'][1]:g}, prior {point['prior']:.3f}, "
            f"{count}{_calibrated_on(point)}{extreme})")


def _calibrated_on(point: dict) -> str:
    """Which faces calibrated a window operating point, where not CBCL's."""
    faces = point.get("calibration_faces")
    return f": {faces} and CBCL's non-faces" if faces else ""


def print_json(data) -> None:
    json.dump(data, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


def standalone_main(prog: str, description: str, configure, argv=None) -> int:
    """The entry point of a one-command program (``train-detector``, ``detect``, ...)."""
    parser = OneLineErrorParser(prog=prog, description=description)
    configure(parser)
    args = parser.parse_args(argv)
    return run_safely(args.func, args, prog)
