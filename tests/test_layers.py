"""The package imports downward only (docs/architecture.md), and no module imports itself
back through others. Imports inside functions count: they are dependencies too."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "facedetect"
# Lowest first. A module may import its own package, any package of a lower layer, and
# nothing beside it: packages that share a layer (training and detector) never import each
# other, so the detector runs without the trainer and the trainer works on any matrix.
BASE = {"errors", "limits", "costs", "_version", "_utils", "modelfile", "metrics", "plots",
        "images", "__init__"}
LAYERS = [
    [BASE],
    [{"haar"}],
    [{"data"}, {"training"}, {"detector"}],
    [{"pipeline"}],
    [{"reproduce"}],
    [{"cli", "__main__"}],
]
RANK = {part: rank for rank, groups in enumerate(LAYERS) for parts in groups for part in parts}
GROUP = {part: min(parts) for groups in LAYERS for parts in groups for part in parts}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """The facedetect modules ``path`` imports, as dotted names."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [f"{target}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found.update(n for n in names if n.split(".")[0] == "facedetect")
    return found


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        targets = set()
        for imported in _imports(path):
            # "from .x import y" names y, a function or a module: keep the longest module.
            while imported not in modules and "." in imported:
                imported = imported.rsplit(".", 1)[0]
            if imported in modules and imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def _part(module: str) -> str:
    return module.split(".")[1] if "." in module else "__init__"


def _layer(module: str) -> int:
    return RANK[_part(module)]


def _forbidden(importer: str, imported: str) -> bool:
    """Upward, or sideways into another package of the same layer."""
    a, b = _part(importer), _part(imported)
    return RANK[b] > RANK[a] or (RANK[b] == RANK[a] and GROUP[a] != GROUP[b])


def test_every_part_of_the_package_has_a_layer():
    parts = {p.relative_to(PACKAGE).parts[0].removesuffix(".py") for p in PACKAGE.iterdir()
             if p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists())}
    assert parts <= set(RANK), sorted(parts - set(RANK))


def test_imports_go_downward_only():
    upward = sorted(f"{a} -> {b}" for a, targets in _graph().items() for b in targets
                    if _forbidden(a, b))
    assert not upward, upward


def test_no_import_cycles():
    graph = _graph()
    state, cycles = {}, []

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not cycles, cycles[:3]


def test_the_layer_check_catches_an_upward_import(tmp_path, monkeypatch):
    # The checker itself: a detector module importing the trainer is reported.
    fake = tmp_path / "facedetect"
    (fake / "detector").mkdir(parents=True)
    (fake / "training").mkdir()
    for folder in (fake, fake / "detector", fake / "training"):
        (folder / "__init__.py").write_text("")
    (fake / "training" / "pipeline.py").write_text("X = 1\n")
    (fake / "detector" / "scan.py").write_text("from ..training.pipeline import X\n")
    monkeypatch.setitem(globals(), "PACKAGE", fake)
    graph = _graph()
    assert graph["facedetect.detector.scan"] == {"facedetect.training.pipeline"}
    assert _forbidden("facedetect.detector.scan", "facedetect.training.pipeline")


def test_the_layer_check_catches_a_sideways_import():
    # Training and detection share a layer and may not lean on each other, either way.
    assert _forbidden("facedetect.training.bootstrap", "facedetect.detector._scan")
    assert _forbidden("facedetect.training._splits", "facedetect.data._cbcl")
    assert not _forbidden("facedetect.pipeline._train", "facedetect.detector._scan")
    assert not _forbidden("facedetect.modelfile._io", "facedetect.errors")
