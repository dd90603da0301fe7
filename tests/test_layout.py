"""The package's shape: its import graph has no cycle, and the settings and lower stages stay light."""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

from tests.patience import patient

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


@functools.cache
def _parsed_graph() -> dict[str, frozenset[str]]:
    """The package parsed once for every test of the session (the sources do not change while it runs)."""
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    known = set(paths)
    return {name: frozenset(imports_of(path, known) - {name}) for name, path in paths.items()}


def import_graph() -> dict[str, set[str]]:
    """Every module of the package and the modules it imports (a copy of its own for each caller to change)."""
    return {name: set(imported) for name, imported in _parsed_graph().items()}


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


STAGES = (
    ("foundation", ("tuner.errors", "tuner.config", "tuner.precision", "tuner.settings", "tuner.lifetime",
                    "tuner.atomic_file", "tuner.input_file", "tuner.peaks", "tuner.text_table", "tuner.optuna_attrs",
                    "tuner.console", "tuner.names")),
    ("energy", ("tuner.energy",)),
    ("measure", ("tuner.measure",)),
    ("kernels", ("tuner.kernels",)),
    ("space", ("tuner.space",)),
    ("compile", ("tuner.compile",)),
    ("results", ("tuner.results",)),
    ("strategies", ("tuner.strategies",)),
    ("recorded", ("tuner.recorded",)),
    ("experiment", ("tuner.experiment",)),
    ("counters", ("tuner.counters",)),
    ("backends", ("tuner.backends",)),
    ("search", ("tuner.search",)),
    ("report", ("tuner.report",)),
    ("compare", ("tuner.compare",)),
    ("tuning", ("tuner.tuning",)),
    ("table", ("tuner.table",)),
    ("door", ("tuner", "tuner.__main__", "tuner.cli")),
)
"""The packages in the order they may import each other: each imports only its own stage and the ones above it.
The experiment is validated against the kernels, the space and the strategies, so they come before it; the search
drives the backends, so they come before it; the run (``tuning``) ties every stage together."""


def stage_of(module: str) -> int:
    matches = [(len(prefix), rank) for rank, (_, prefixes) in enumerate(STAGES) for prefix in prefixes
               if module == prefix or (prefix != "tuner" and module.startswith(f"{prefix}."))]
    assert matches, f"{module} belongs to no stage of tests/test_layout.py's STAGES: place it in a stage's package"
    return max(matches)[1]


def test_every_module_belongs_to_a_stage_and_few_lie_loose():
    graph = import_graph()
    for name in graph:
        stage_of(name)
    loose = [p.name for p in PACKAGE.glob("*.py")]
    assert len(loose) <= 13, f"tuner/ holds {len(loose)} modules directly: {sorted(loose)}"


def test_no_package_imports_a_later_stage():
    """Imports inside functions and under TYPE_CHECKING count too."""
    upward = []
    for name, imported in import_graph().items():
        here = stage_of(name)
        upward += [f"{name} imports {target} ({STAGES[stage_of(target)][0]}, after {STAGES[here][0]})"
                   for target in sorted(imported) if target != "tuner" and stage_of(target) > here]
    assert upward == []


def test_the_experiment_parser_loads_no_scipy():
    """The command line reads an experiment before anything else (each of its errors costs a process start): the
    strategies that need SciPy are imported when a search asks for them."""
    probe = "import sys, tuner.experiment.schema, tuner.cli; print(sorted({m.split('.')[0] for m in sys.modules}))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=patient(120),
                          check=True)
    assert "'scipy'" not in done.stdout


def backend_folders() -> set[str]:
    """The packages of the catalog's backends (each backend's folder)."""
    from tuner.backends.catalog import BACKENDS

    return {path.partition(":")[0].rsplit(".", 1)[0] for path, _ in BACKENDS.values()}


def module_file_exists(name: str) -> bool:
    return ROOT.joinpath(*name.split(".")).with_suffix(".py").is_file()


def test_the_catalog_is_the_only_door_to_a_backend():
    """No module outside a backend's folder imports it (in functions and under TYPE_CHECKING too): the run, the
    command line and the reports reach backends through :mod:`tuner.backends.catalog`, which imports none."""
    folders = backend_folders()
    assert len(folders) >= 3 and all(module_file_exists(f"{folder}.__init__") for folder in folders)

    def folder_of(module: str) -> str | None:
        return next((f for f in folders if module == f or module.startswith(f"{f}.")), None)

    through = [f"{name} imports {target}" for name, imported in import_graph().items()
               for target in sorted(imported) if folder_of(target) not in (None, folder_of(name))]
    assert through == []


def test_importing_the_backends_face_and_catalog_loads_no_backend():
    probe = ("import sys, tuner.backends, tuner.backends.catalog; "
             "print(sorted(m for m in sys.modules if m.startswith('tuner.backends.')))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=True)
    assert not any(folder in done.stdout for folder in ("backends.pycuda", "backends.cpu", "backends.replay"))
