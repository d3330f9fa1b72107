"""How ``--cost`` travels from the flag to the model file: every call that receives the
cost itself (the flag's text or the pair) as an argument, in order, with its module.

Run: ``python -m benchmarks.cost_trace``

Two runs of ``train-detector --cost 1,10``: the window classifier of the paper
(``--recipe cbcl --no-bootstrap``) and the default recipe made tiny (3 rounds, one
bootstrap round of 2), so that both finish in minutes. A *return* is a call in a module
the trace had already left; issue 36 asks for none on the way from the flag to the file.
A dataclass's generated ``__init__`` (a configuration or a model copied with a field
filled in) only stores the pair and is not counted.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
import time

from .common import machine, write_results

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
    ``train-detector argv`` runs in this process."""
    from facedetect.cli import _train_cmd
    stops = []

    def profile(frame, event, arg):
        if event != "call" or not frame.f_globals.get("__name__", "").startswith("facedetect"):
            return
        code = frame.f_code
        if code.co_filename == "<string>":   # a dataclass's generated __init__: stores only
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
    if status != 0:
        raise RuntimeError(f"train-detector {' '.join(argv)} exited {status}")
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


def summary(stops: list[tuple[str, str]]) -> dict:
    modules = list(dict.fromkeys(module for module, _ in stops))
    return {"stops": [f"{module}.{function}" for module, function in stops],
            "n_stops": len(stops), "n_modules": len(modules), "returns": returns(stops),
            "cost_checks": sum(function == "check_cost" for _, function in stops)}


def main() -> None:
    # the traced runs' models go to a folder of their own, never over a user's file
    folder = tempfile.TemporaryDirectory(prefix="cost_trace-")
    out = os.path.join(folder.name, "model.json")
    runs = {"window classifier (--recipe cbcl --no-bootstrap --rounds 2)":
            ["--recipe", "cbcl", "--no-bootstrap", "--rounds", "2"],
            "default recipe, tiny (--rounds 3 --bootstrap-rounds 1 --stage-rounds 2)":
            ["--rounds", "3", "--bootstrap-rounds", "1", "--stage-rounds", "2",
             "--bootstrap-limit", "200", "--max-features", "500"]}
    results, lines = {"machine": machine()}, ["# How --cost travels", ""]
    for label, flags in runs.items():
        start = time.perf_counter()
        with contextlib.redirect_stderr(io.StringIO()):
            stops = trace_cost(["--cost", COST_TEXT, *flags, "--out", out, "--quiet"])
        row = results[label] = {**summary(stops), "seconds": time.perf_counter() - start}
        lines += [f"## {label}", "", f"{row['n_stops']} stops in {row['n_modules']} modules, "
                  f"{len(row['returns'])} returns ({', '.join(row['returns']) or 'none'}), "
                  f"{row['cost_checks']} cost check", "", *(f"1. `{s}`" for s in row["stops"]),
                  ""]
    folder.cleanup()
    write_results("cost_trace", results, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
