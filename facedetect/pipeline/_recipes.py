"""Named training recipes (``train-detector --recipe NAME``) and recipe files (``--config``).

A recipe is a whole training: every setting of :class:`~._config.TrainConfig` fixed, and
the data it needs named. The same command line therefore trains the same model on every
machine, or is refused in one line naming the flag that gives the missing data; nothing
is chosen by which data folders happen to exist. Expert settings go in a TOML file whose
keys are ``TrainConfig``'s fields (:func:`read_recipe_file`); a flag given on the command
line wins over the file, and the file over the recipe.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path

from ..errors import FacedetectError, InvalidParameter
from ._config import TrainConfig, check_config, check_field, resolved_window

__all__ = ["Recipe", "RECIPES", "DEFAULT_RECIPE", "RECIPE_LINES", "recipe_config",
           "read_recipe_file", "recipe_lines"]

# A recipe file is a handful of settings: anything larger is not one.
MAX_RECIPE_FILE_BYTES = 64 * 1024
TUPLE_FIELDS = ("cost", "window")


@dataclass(frozen=True)
class Recipe:
    """One named training.

    Attributes
    ----------
    name, summary : str
    config : TrainConfig
        Every setting, none left to be resolved from the data found.
    faces : {"wild", "cbcl", "positives"}
        The positives it trains on: faces from the wild beside CBCL's non-faces (``--faces``
        or where it looks), CBCL's own faces (``--data``), or the user's samples of any
        object (``--positives`` / ``--positives-info``).
    cascade : bool
        An attentional cascade (``--stages``, at most ``stages``), not one stage.
    stages : int
        The cascade's stages at most (OpenCV's ``-numStages`` default).
    verifier : bool
        Then train a verifier on the model (``train-verifier``'s defaults): a second look
        at each face it proposes (``--no-verifier``: the one-stage model alone).

    Examples
    --------
    >>> RECIPES["faces"].config.window, RECIPES["cbcl"].config.window
    ((24, 24), (19, 19))
    >>> RECIPES["opencv"].config.channels, RECIPES["object"].cascade
    (False, True)
    >>> RECIPES["faces"].verifier, RECIPES["opencv"].verifier
    (True, False)
    """

    name: str
    summary: str
    config: TrainConfig
    faces: str
    cascade: bool = False
    stages: int = 20
    verifier: bool = False


def _one_stage(wild: bool, **settings) -> TrainConfig:
    """The recipe's config: ``settings`` with the rest filled in as the window asks."""
    return resolved_window(TrainConfig(**settings), wild_faces=wild)


RECIPES = {recipe.name: recipe for recipe in (
    Recipe("faces", "the shipped default.json: faces from the wild at 24x24, Haar, tilted "
           "and channel features, hard negatives mined from the negative pictures",
           _one_stage(True, cost=(1.0, 10.0)), "wild", verifier=True),
    Recipe("opencv", "the shipped haar.json: the faces recipe without channel features or "
           "verifier, "
           "so export-opencv writes it for cv2.CascadeClassifier",
           _one_stage(True, cost=(1.0, 10.0), channels=False), "wild"),
    Recipe("cbcl", "the paper's 19x19 window classifier on CBCL's faces alone (Haar "
           "features of the five basic types)", _one_stage(False), "cbcl"),
    Recipe("object", "an attentional cascade of any object from --positives or "
           "--positives-info and --negatives, 24x24 (--window), Haar and tilted features: "
           "exportable to OpenCV", TrainConfig(tilted=True, channels=False, jitter_shift=0.75),
           "positives", cascade=True),
)}
DEFAULT_RECIPE = "faces"
# The settings each recipe states in --help and the docs: the ones that differ between them.
STATED = ("cost", "window", "framing", "tilted", "channels", "jitter_shift", "posterize",
          "bootstrap_rounds", "rounds")


# A cascade's window is its positives' (--window) and its stages end by their own rules.
CASCADE_UNSTATED = ("window", "rounds", "bootstrap_rounds", "framing", "posterize")


def recipe_config(name: str = DEFAULT_RECIPE, **settings) -> TrainConfig:
    """The config of the recipe ``name`` with ``settings`` (``TrainConfig``'s fields) over
    it, checked: what ``train-detector --recipe NAME`` trains, flags as keywords.

    Parameters
    ----------
    name : {"faces", "opencv", "cbcl", "object"}
        The recipe (:data:`RECIPES`; ``faces``, the default, is the shipped model's).
    **settings
        ``TrainConfig`` fields over the recipe's, as a ``--config`` file's keys.

    Returns
    -------
    TrainConfig

    Raises
    ------
    InvalidParameter
        An unknown recipe or field, or a value the field does not take.

    See Also
    --------
    facedetect.train_detector : trains it.
    read_recipe_file : the same settings from a TOML file.

    Examples
    --------
    >>> config = recipe_config("cbcl", rounds=50)
    >>> config.window, config.rounds, config.tilted
    ((19, 19), 50, False)
    >>> recipe_config("faces").posterize
    0.02
    >>> recipe_config("frontal")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    facedetect.errors.InvalidParameter: recipe must be one of faces, opencv, ..., got 'frontal'
    """
    if name not in RECIPES:
        raise InvalidParameter(f"recipe must be one of {', '.join(RECIPES)}, got {name!r}",
                               "recipe")
    config = replace(RECIPES[name].config, **_checked_settings(settings, "settings"))
    check_config(config)
    return config


def _checked_settings(settings: dict, where: str) -> dict:
    """``settings`` as ``TrainConfig``'s fields take them, or a refusal naming the key."""
    names = [field.name for field in fields(TrainConfig)]
    checked = {}
    for key, value in settings.items():
        if key not in names:
            raise InvalidParameter(f"{where}: unknown setting {key!r}; the keys are "
                                   f"TrainConfig's fields: {', '.join(names)}", key)
        if key in TUPLE_FIELDS:
            if not (isinstance(value, (list, tuple)) and len(value) == 2):
                raise InvalidParameter(f"{where}: {key} must be a pair of numbers, got "
                                       f"{value!r}", key)
            value = tuple(float(v) if key == "cost" and isinstance(v, int)
                          and not isinstance(v, bool) else v for v in value)
        elif key != "max_features":   # a fraction or a count: TrainConfig's check reads it
            value = check_field(key, value)
        checked[key] = value
    return checked


def read_recipe_file(path) -> dict:
    """The settings of a TOML recipe file: ``TrainConfig``'s fields as keys, each value
    checked as the field takes it (``cost = [1, 10]``, ``jitter = 5``, ``tilted = false``).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "recipe.toml"
    >>> _ = path.write_text("cost = [1, 10]\\njitter = 5\\n")
    >>> read_recipe_file(path)
    {'cost': (1.0, 10.0), 'jitter': 5}
    """
    try:
        import tomllib
    except ImportError:   # Python 3.10
        import tomli as tomllib
    from .._utils.files import read_bounded
    path = Path(path)
    where = f"--config {path}"
    try:
        # a regular file only (a pipe or /dev/zero never ends), within the bound
        text = read_bounded(path, MAX_RECIPE_FILE_BYTES, "a recipe file").decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or "not UTF-8 text"
        raise FacedetectError(f"{where}: cannot read it ({reason})") from None
    except FacedetectError as error:
        raise FacedetectError(f"{where}: {str(error).partition(': ')[2] or error}") from None
    try:
        settings = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise FacedetectError(f"{where}: not a TOML file ({error})") from None
    tables = [key for key, value in settings.items() if isinstance(value, dict)]
    if tables:
        raise FacedetectError(f"{where}: [{tables[0]}] is a table; a recipe file holds "
                              "TrainConfig's fields at its top level")
    try:
        return _checked_settings(settings, where)
    except InvalidParameter as error:
        message = str(error)
        raise FacedetectError(message if message.startswith(where) else
                              f"{where}: {message}") from None


def recipe_lines() -> list[str]:
    """One line per recipe: its name, what it is and the settings that set it apart."""
    lines = []
    for recipe in RECIPES.values():
        settings = ", ".join(f"{name}={_shown(getattr(recipe.config, name))}"
                             for name in STATED
                             if not (recipe.cascade and name in CASCADE_UNSTATED))
        extra = (f", stages={recipe.stages}" if recipe.cascade else "") + \
            (", then a verifier" if recipe.verifier else "")
        lines.append(f"{recipe.name}: {recipe.summary} ({settings}{extra})")
    return lines


def _shown(value) -> str:
    if isinstance(value, tuple):
        return ",".join(f"{v:g}" for v in value) if isinstance(value[0], float) else \
            "x".join(str(v) for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)


# Said by --help: made once, when the recipes are.
RECIPE_LINES = tuple(recipe_lines())
