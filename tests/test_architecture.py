"""The package's layering, checked: layers in folders, no import cycles, no reaching into
another object's private members."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_rnncov"


def test_the_import_linter_layers_contract_is_kept():
    done = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"],
        capture_output=True,
        text=True,
        cwd=PACKAGE.parent,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 kept, 0 broken" in done.stdout  # layers; a framework-free core; a numpy-free base


def test_no_module_imports_itself_through_others():
    import grimp

    graph = grimp.build_graph("pytest_rnncov")
    modules = sorted(graph.modules)
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in modules}
    state: dict[str, int] = {}
    cycles = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(edges[module]):
            if state.get(target) == 1:
                cycles.append(
                    path[path.index(target) :] + [target] if target in path else [module, target]
                )
            elif target not in state:
                visit(target, path + [target])
        state[module] = 2

    for module in modules:
        if module not in state:
            visit(module, [module])
    assert not cycles, cycles


def test_the_layers_are_folders():
    """Each layer of the contract is a folder (or a shared top-level module), and every
    module of the package belongs to exactly one layer."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # the test extra installs it there
        import tomli as tomllib

    config = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())
    layers = config["tool"]["importlinter"]["contracts"][0]["layers"]
    named = {
        name.strip().removeprefix("pytest_rnncov.") for layer in layers for name in layer.split("|")
    }
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith("__")}
    assert folders == {"core", "adapters", "generation", "reporting", "plugin", "config"}
    assert folders <= named
    top = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"}
    assert top <= named, top - named  # every top-level module sits in a layer
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        assert parts[0] in named or parts == ("__init__",), path


def test_no_private_name_is_imported_from_another_module():
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                found += [
                    f"{path.relative_to(PACKAGE)}:{node.lineno} {node.module}.{a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
    assert not found, found


def test_no_module_reaches_into_another_objects_private_members():
    """``x._name`` only on self, cls or the module's own classes (a framework's internals
    named in the allow-list are the documented exceptions)."""
    allowed = {"_nodes_by_depth", "_keras_mask", "_fields", "_version"}
    found = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and node.attr not in allowed
            ):
                owner = node.value
                if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                    continue
                if isinstance(owner, ast.Call) and getattr(owner.func, "id", None) == "super":
                    continue
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} .{node.attr}")
    assert not found, found
