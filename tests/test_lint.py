"""The code base stays ruff-clean."""

import importlib.util
import shutil
import subprocess
import sys

import pytest


def test_ruff_is_clean(root):
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (it comes with the 'test' extra)")
    folders = ["tuner", "kernel_templates", "tests", "benchmarks", "examples"]
    result = subprocess.run([ruff, "check", *folders], cwd=root,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_mypy_is_clean(root):
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (it comes with the 'test' extra)")
    result = subprocess.run([sys.executable, "-m", "mypy", "tuner"], cwd=root, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ci_runs_the_readme_test_command(root):
    readme = (root / "README.md").read_text()
    ci = (root / ".ci/run").read_text()
    assert 'python -m pip install -e ".[test]" && python -m pytest' in readme
    assert "README.md" in ci
