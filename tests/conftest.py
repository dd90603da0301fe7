import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def root() -> Path:
    return ROOT


def run_cli(*args: str, cwd: Path = ROOT, timeout: float = 600):
    """Run ``python -m tuner ARGS`` in a subprocess; returns the CompletedProcess."""
    import subprocess

    return subprocess.run([sys.executable, "-m", "tuner", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)
