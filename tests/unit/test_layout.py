"""The floors of the code: every import runs down, never up or sideways, and no module
imports itself back through others. Imports inside functions count too."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tests.conftest import REPO

# Lowest first. A package may import the packages on lower floors only.
FLOORS: Mapping[str, int] = {
    "artifacts": 0,  # file formats and the error type
    "report_templates": 0,  # package data
    "compare": 1,  # statistics, verdicts, the stop rule
    "runner": 2,  # servers, schedule, measuring (consults the stop rule)
    "report": 2,  # rendering (reads artifacts only)
    "ci": 3,  # PR check, shards, merge, history
    "chperf": 4,  # the CLI: the only package that knows every stage
}


def modules(root: Path, packages: Mapping[str, int]) -> dict[str, Path]:
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def imports(path: Path, name: str, known: Mapping[str, Path]) -> Iterator[tuple[str, int]]:
    """(imported module of `known`, line) for every import in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from _resolve(alias.name, known, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                target = f"{base}.{alias.name}"
                yield from _resolve(target if target in known else base, known, node.lineno)


def _resolve(module: str, known: Mapping[str, Path], line: int) -> Iterator[tuple[str, int]]:
    while module and module not in known:
        module = module.rpartition(".")[0]
    if module:
        yield module, line


def violations(root: Path, floors: Mapping[str, int]) -> list[str]:
    known = modules(root, floors)
    found = []
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        own = name.split(".")[0]
        for target, line in imports(path, name, known):
            other = target.split(".")[0]
            if target != name:
                graph[name].add(target)
            if other != own and floors[other] >= floors[own]:
                where = f"{path.relative_to(root)}:{line}"
                found.append(f"{where}: {own} (floor {floors[own]}) imports {target} "
                             f"(floor {floors[other]})")  # fmt: skip
    found.extend(f"import cycle: {' -> '.join(cycle)}" for cycle in cycles(graph))
    return found


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def test_no_import_runs_up_or_sideways_and_no_module_imports_itself_back() -> None:
    assert violations(REPO, FLOORS) == []


def test_every_package_of_the_wheel_has_a_floor() -> None:
    packages = {p.parent.name for p in REPO.glob("*/__init__.py")} - {"tests", "bench"}
    assert packages == set(FLOORS)


def _tree(root: Path, files: Mapping[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"low/a.py": "from high.b import x\n", "high/b.py": "x = 1\n"}, "low (floor 0) imports"),
        ({"low/a.py": "def f():\n    import high.b\n", "high/b.py": ""}, "low/a.py:2"),
        ({"high/a.py": "from high import b\n", "high/b.py": "from high.a import y\n"},
         "import cycle: high.a -> high.b"),
        ({"low/a.py": "from . import b\n", "low/b.py": "from .a import z\n"},
         "import cycle: low.a -> low.b"),
        ({"mid/a.py": "import side.b\n", "side/b.py": ""}, "mid (floor 1) imports side.b"),
    ],
)  # fmt: skip
def test_the_checker_finds_upward_and_sideways_imports_and_cycles(
    tmp_path: Path, files: Mapping[str, str], expected: str
) -> None:
    root = _tree(tmp_path, files)
    floors = {"low": 0, "mid": 1, "side": 1, "high": 2}
    for package in floors:
        (root / package).mkdir(exist_ok=True)
        (root / package / "__init__.py").touch()
    found = violations(root, floors)
    assert any(expected in v for v in found), found
