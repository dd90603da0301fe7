"""The package reads in short steps: no function of tuner/ is longer than 60 lines, no module longer than 450, no
module docstring longer than 20 (a module says what it owns; the why of a design is the README's)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tuner"
MOST_LINES = 60
MOST_MODULE_LINES = 450
MOST_DOCSTRING_LINES = 20


@functools.cache
def parsed(path: Path) -> ast.Module:
    """The module's syntax tree, parsed once for every check of this file."""
    return ast.parse(path.read_text())


def function_lengths(path: Path) -> list[tuple[str, int]]:
    """Every function and method of the module (nested ones too), named with its line, and its lines from
    ``def`` to its end."""
    return [(f"{node.lineno} {node.name}", node.end_lineno - node.lineno + 1)
            for node in ast.walk(parsed(path))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None]


def test_no_function_of_the_package_is_over_60_lines():
    paths = sorted(PACKAGE.rglob("*.py"))
    assert len(paths) > 100
    too_long = [f"{path.relative_to(ROOT)}:{where}: {lines} lines" for path in paths
                for where, lines in function_lengths(path) if lines > MOST_LINES]
    assert too_long == []


def test_a_function_counts_from_def_to_its_end_and_methods_count(tmp_path):
    module = tmp_path / "lengths.py"
    module.write_text("def short():\n    return 1\n\n\nclass A:\n    def long(self):\n" + "        x = 1\n" * 61)
    assert function_lengths(module) == [("1 short", 2), ("6 long", 62)]


def test_no_module_of_the_package_is_over_450_lines():
    too_long = [f"{path.relative_to(ROOT)}: {lines} lines" for path in sorted(PACKAGE.rglob("*.py"))
                if (lines := len(path.read_text().splitlines())) > MOST_MODULE_LINES]
    assert too_long == []


def docstring_lines(path: Path) -> int:
    """The lines of the module's docstring, its quotes included (0 where it has none)."""
    module = parsed(path)
    if ast.get_docstring(module) is None:
        return 0
    first = module.body[0]
    assert first.end_lineno is not None
    return first.end_lineno - first.lineno + 1


def test_no_module_docstring_of_the_package_is_over_20_lines():
    too_long = [f"{path.relative_to(ROOT)}: {lines} lines" for path in sorted(PACKAGE.rglob("*.py"))
                if (lines := docstring_lines(path)) > MOST_DOCSTRING_LINES]
    assert too_long == []


def test_a_docstring_counts_from_its_opening_to_its_closing_quotes(tmp_path):
    module = tmp_path / "documented.py"
    module.write_text('"""One line.\n\nThree more,\nthen the quotes.\n"""\n\nX = 1\n')
    bare = tmp_path / "bare.py"
    bare.write_text("X = 1\n")
    assert (docstring_lines(module), docstring_lines(bare)) == (5, 0)
