"""The package's shape: its import graph has no cycle, and the settings and lower stages stay light."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tuner"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, known: set[str]) -> set[str]:
    """Every tuner module ``path`` imports, at any depth of the code (in functions and TYPE_CHECKING too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        found.update(name for name in names if name in known)
    return found


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    known = set(paths)
    return {name: imports_of(path, known) - {name} for name, path in paths.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_import_graph_has_no_cycle():
    graph = import_graph()
    graph.pop("tuner")  # the public API's __init__ imports the top of the flow, which nothing imports back
    for imported in graph.values():
        imported.discard("tuner")
    assert cycles(graph) == []


def test_settings_import_nothing_of_the_project():
    assert import_graph()["tuner.settings"] == set()


def test_the_lower_stages_do_not_reach_up():
    graph = import_graph()
    upward = {"tuner.tuning", "tuner.study", "tuner.report", "tuner.experiment", "tuner.cli"}
    for stage in ("tuner.kernels", "tuner.compile", "tuner.backends", "tuner.verify", "tuner.measure"):
        for name, imported in graph.items():
            if name == stage or name.startswith(f"{stage}."):
                reached = {i for i in imported if any(i == u or i.startswith(f"{u}.") for u in upward)}
                assert not reached, f"{name} imports {reached}"
