"""The package's texts name modules that exist: every ``tuner.a.b`` (and ``tuner.a.b.name``) in its sources, the
benchmarks and the README resolves to a module of the package and a name defined or imported there, and every
``tuner/a/b.py`` path of the package and the README to a file."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tuner"
DOTTED = re.compile(r"\btuner(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
PATH = re.compile(r"\btuner/[A-Za-z0-9_/]+\.(?:py|j2|cu|c)\b")
NOT_MODULES = {"tuner.families"}
"""Dotted names that are no module: the entry-point group of kernel families (``ENTRY_POINT_GROUP``)."""


def module_file(name: str) -> Path | None:
    base = ROOT.joinpath(*name.split("."))
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


@functools.cache
def defined_names(path: Path) -> frozenset[str]:
    """The names a module defines or imports at its top level."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            assigned = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            names.update(assigned)
            if "__all__" in assigned and node.value is not None:  # a public face's names, loaded on first use
                names.update(str(c.value) for c in ast.walk(node.value) if isinstance(c, ast.Constant))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return frozenset(names)


def unresolved(reference: str) -> bool:
    parts = reference.rstrip(".").split(".")
    found = max((i for i in range(1, len(parts) + 1) if module_file(".".join(parts[:i]))), default=0)
    if found == 0:
        return True
    rest = parts[found:]
    return bool(rest) and rest[0] not in defined_names(module_file(".".join(parts[:found])))


def texts(benchmarks: bool = True) -> list[Path]:
    """The package's sources, the README and (unless told) the benchmarks, which may name files as they were."""
    scripts = sorted((ROOT / "benchmarks").rglob("*.py")) if benchmarks else []
    return [*sorted(PACKAGE.rglob("*.py")), *scripts, ROOT / "README.md"]


def test_every_dotted_reference_names_a_module_and_a_name_of_it():
    stale = [f"{path.relative_to(ROOT)}:{number}: {match}" for path in texts()
             for number, line in enumerate(path.read_text().splitlines(), 1)
             for match in DOTTED.findall(line) if match not in NOT_MODULES and unresolved(match)]
    assert stale == []


def test_every_path_reference_names_a_file():
    stale = [f"{path.relative_to(ROOT)}:{number}: {match}" for path in texts(benchmarks=False)
             for number, line in enumerate(path.read_text().splitlines(), 1)
             for match in PATH.findall(line) if not (ROOT / match).is_file()]
    assert stale == []


def test_a_moved_module_or_a_missing_name_is_caught():
    assert unresolved("tuner.gpu.device") and unresolved("tuner.results.objectives.no_such_name")
    assert not unresolved("tuner.backends.pycuda.device.describe") and not unresolved("tuner.results")
