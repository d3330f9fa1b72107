"""Issue 36: following ``--cost`` from the flag to the file visits each module once, and
the cost is checked once. The trace: every call in the package that receives the cost
itself (the flag's text or the pair) as an argument, in order, with its module; a
*return* is a call in a module the trace had already left."""

import json
import sys

import numpy as np
import pytest
from sklearn import config_context

from facedetect import AdaBoostDB

COST_TEXT = "1,10"


def holds_cost(value, text: str = COST_TEXT) -> bool:
    """Whether ``value`` is the cost as typed or as the pair it parses to."""
    if isinstance(value, str):
        return value == text
    if not (isinstance(value, tuple) and len(value) == 2):
        return False
    try:
        return tuple(float(v) for v in value) == tuple(float(v) for v in text.split(","))
    except (TypeError, ValueError):
        return False


def trace_cost(argv: list[str]) -> list[tuple[str, str]]:
    """``(module, function)`` of every call in the package that receives the cost, while
    ``train-detector argv`` runs in this process. A dataclass's generated ``__init__``
    only stores the pair and is not counted."""
    from facedetect.cli import _train_cmd
    stops = []

    def profile(frame, event, arg):
        if event != "call" or not frame.f_globals.get("__name__", "").startswith("facedetect"):
            return
        code = frame.f_code
        if code.co_filename == "<string>":   # a dataclass's generated __init__
            return
        for name in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]:
            if holds_cost(frame.f_locals.get(name)):
                stops.append((frame.f_globals["__name__"], code.co_name))
                return
    sys.setprofile(profile)
    try:
        status = _train_cmd.main(argv)
    finally:
        sys.setprofile(None)
    assert status == 0, f"train-detector {' '.join(argv)} exited {status}"
    return stops


def returns(stops: list[tuple[str, str]]) -> list[str]:
    """The modules the trace comes back to after leaving them, in order."""
    seen, back, last = set(), [], None
    for module, _ in stops:
        if module != last and module in seen:
            back.append(module)
        seen.add(module)
        last = module
    return back


def test_returns_counts_a_module_left_and_come_back_to():
    stops = [("a", "f"), ("a", "g"), ("b", "h"), ("a", "f"), ("c", "k"), ("b", "h")]
    assert returns(stops) == ["a", "b"]
    assert returns(stops[:3]) == []


def test_the_cost_travels_from_the_flag_to_the_file_through_each_module_once(
        small_cbcl, tmp_path):
    out = tmp_path / "m.json"
    stops = trace_cost(["--cost", "1,10", "--recipe", "cbcl", "--no-bootstrap", "--rounds", "2",
                        "--data", str(small_cbcl), "--out", str(out), "--quiet"])
    assert stops[0] == ("facedetect.cli._common", "parse_cost")
    assert returns(stops) == [], stops
    assert [function for _, function in stops].count("check_cost") == 1
    modules = [module for module, _ in stops]
    for module in ("facedetect.costs", "facedetect.training._algorithms",
                   "facedetect.training._model_io", "facedetect.training._operating_point"):
        assert module in modules
    assert json.loads(out.read_text())["cost"] == [1.0, 10.0]


def test_an_estimator_checks_its_cost_unless_its_caller_already_did():
    X, y = np.eye(4), [0, 0, 1, 1]
    with pytest.raises(ValueError, match="positive"):
        AdaBoostDB(n_rounds=2, cost=(1, 0)).fit(X, y)
    # scikit-learn's skip_parameter_validation: the pipeline fits with it once its whole
    # configuration is checked; a good cost then trains as it does with the check
    with config_context(skip_parameter_validation=True):
        skipped = AdaBoostDB(n_rounds=2, cost=(1, 10)).fit(X, y)
    checked = AdaBoostDB(n_rounds=2, cost=(1, 10)).fit(X, y)
    assert skipped.alphas_ == pytest.approx(checked.alphas_)


@pytest.mark.parametrize("argv, flag", [
    (["train", "--cost", "1,0"], "argument --cost: costs must be positive"),
    (["sweep", "--costs", "1,2;1,0"], "argument --costs: costs must be positive"),
    (["paper", "--costs", "1,2e7"], "argument --costs: the cost ratio"),
])
def test_a_refused_cost_is_said_as_its_flag_before_any_work(argv, flag, capsys, tmp_path,
                                                            monkeypatch):
    from facedetect.cli._main import main
    monkeypatch.chdir(tmp_path)   # nothing is written, nor any data sought
    try:
        code = main(argv)
    except SystemExit as stop:    # argparse's own refusal
        code = stop.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and flag in err[0], err
    assert not any(tmp_path.iterdir())


def test_a_plan_changed_after_it_was_checked_is_checked_again(toy_cbcl_dir):
    from facedetect.costs import InvalidCost
    from facedetect.pipeline._plan import plan_training
    from facedetect.pipeline._train import train_detector

    from .conftest import plain_config
    plan = plan_training(plain_config((1, 10), 2), str(toy_cbcl_dir), faces=None)
    assert plan.is_checked()
    plan.config.cost = (1, 1e9)   # TrainConfig is mutable: the run fits without re-checks
    assert not plan.is_checked()
    with pytest.raises(InvalidCost, match="ratio"):
        train_detector(plan, progress=False)
