"""``train-detector``'s recipe: ``--recipe NAME``, ``--config FILE`` and the flags over them.

The TrainConfig a run trains is the recipe's (:mod:`facedetect.pipeline._recipes`), then the
recipe file's settings over it, then every setting flag given on the command line (their
defaults are None: a flag not given leaves the recipe's value). Expert settings still work
as flags for this release, each with one warning line saying what replaces it; the
warnings are printed once the run is sure to start, so that a refusal stays one line.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from ..errors import FacedetectError
from ..pipeline._config import TrainConfig
from ..pipeline._recipes import (DEFAULT_RECIPE, RECIPE_LINES, RECIPES, Recipe,
                                 read_recipe_file)

__all__ = ["recipe_options", "chosen_recipe", "config_from", "expert_flag_lines"]

# Settings that leave the command line in the next release: field -> its flag. A recipe
# file (--config) takes them; the flags a user needs stay (data, --cost, --rounds, --seed,
# --algorithm, --no-bootstrap, --window, the cascade's rules, the run's options).
EXPERT_FLAGS = {
    "selection": "--selection", "max_features": "--max-features", "framing": "--framing",
    "tilted": "--tilted/--no-tilted", "channels": "--channels/--no-channels",
    "holdout": "--holdout", "balanced": "--balanced", "mirror": "--mirror/--no-mirror",
    "jitter": "--jitter", "jitter_shift": "--jitter-shift", "grain": "--grain",
    "posterize": "--posterize", "calibration_split": "--calibration-split",
    "prior": "--prior", "calibration": "--calibration", "threshold_rule": "--threshold-rule",
    "stage_rounds": "--stage-rounds", "keep_features": "--keep-features",
    "bootstrap_limit": "--bootstrap-limit", "bootstrap_threshold": "--bootstrap-threshold",
    "exact": "--exact",
}
SETTING_FIELDS = tuple(TrainConfig().as_dict())


def recipe_options(parser: argparse.ArgumentParser) -> None:
    """``--recipe`` and ``--config``."""
    group = parser.add_argument_group("recipe")
    group.add_argument("--recipe", choices=tuple(RECIPES), metavar="NAME",
                       help="the whole training, every setting fixed, whatever data "
                            f"folders exist (default {DEFAULT_RECIPE}). "
                            + "; ".join(RECIPE_LINES))
    group.add_argument("--config", metavar="FILE",
                       help="a TOML recipe file whose keys are TrainConfig's fields "
                            "(cost = [1, 10], jitter = 5, tilted = false): over the "
                            "recipe, under the flags given (docs/detector-training.md)")


def chosen_recipe(args: argparse.Namespace) -> Recipe:
    """The recipe the flags name: ``--recipe``, or ``cbcl`` for the old ``--no-wild-faces``,
    ``--stages`` alone the old cascade of CBCL's faces (or of ``--positives``), else the
    default; contradictions refused."""
    name = args.recipe
    if args.no_wild_faces:
        if name not in (None, "cbcl"):
            raise FacedetectError(f"--no-wild-faces and --recipe {name} contradict each "
                                  "other (--recipe cbcl trains on CBCL's faces alone)")
        name = "cbcl"
    if args.stages and name in ("faces", "opencv"):
        raise FacedetectError(f"--stages trains a cascade, and --recipe {name} is one "
                              "stage: --recipe object trains a cascade of your positives, "
                              "--recipe cbcl --stages N one of CBCL's faces")
    if name is None:
        name = "cbcl" if args.stages else DEFAULT_RECIPE
    return RECIPES[name]


def config_from(args: argparse.Namespace, recipe: Recipe | None = None) -> TrainConfig:
    """The TrainConfig of the run: the recipe's, the ``--config`` file's settings over it,
    then every setting flag given."""
    recipe = recipe or chosen_recipe(args)
    from_file = read_recipe_file(args.config) if getattr(args, "config", None) else {}
    given = {name: getattr(args, name) for name in SETTING_FIELDS
             if getattr(args, name, None) is not None}
    if "cost" in given:
        given["cost"] = tuple(given["cost"])
    settings = {**from_file, **given}   # a flag given wins over the file
    config = replace(recipe.config, **settings)
    if not config.bootstrap_rounds and "stage_rounds" not in settings:
        config = replace(config, stage_rounds=None)   # no bootstrap stages to shorten
    return config


def expert_flag_lines(args: argparse.Namespace) -> list[str]:
    """One warning per expert setting given as a flag, with the recipe-file line that
    replaces it; and one for ``--no-wild-faces``."""
    lines = []
    if args.no_wild_faces:
        lines.append("warning: --no-wild-faces is --recipe cbcl now, and leaves the command "
                     "line in the next release")
    rounds = getattr(args, "bootstrap_rounds", None)
    if rounds not in (None, 0):   # 0 is --no-bootstrap, which stays
        lines.append(_expert_line("--bootstrap-rounds", "bootstrap_rounds", rounds))
    for name, flag in EXPERT_FLAGS.items():
        value = getattr(args, name, None)
        if value is not None:
            lines.append(_expert_line(flag, name, value))
    return lines


def _expert_line(flag: str, name: str, value) -> str:
    return (f"warning: {flag} is an expert setting and leaves the command line in the next "
            f"release: put `{name} = {_toml(value)}` in a --config file")


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return f"{value:g}" if isinstance(value, float) else str(value)
