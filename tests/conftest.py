import os
import sys
from pathlib import Path

import pytest

from tests.scripted_backend import ScriptedBackend
from tuner.errors import TunerError

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session", autouse=True)
def no_fsync():
    """The tests' runs write their journals without forcing each line to the disk: fsync guards against a machine
    that loses power, which a test never sees, and cost a third of a small run's time (Optuna's journal syncs
    every line). Processes the tests start, such as the runs that are killed, still sync, as the test PostgreSQL
    server does not (tests/postgres_server.py)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "fsync", lambda descriptor: None)
        yield


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch):
    """The package's own families only, and the process left as it was found (for tests that add folders)."""
    from tuner.kernels import discovery

    monkeypatch.setattr(discovery, "_dirs", ())
    discovery.families.cache_clear()
    yield
    discovery.families.cache_clear()


@pytest.fixture
def root() -> Path:
    return ROOT


def run_cli(*args: str, cwd: Path = ROOT, timeout: float = 600):
    """Run ``python -m tuner ARGS`` in a subprocess; returns the CompletedProcess. ``timeout``: what it may take on
    an idle machine, stretched by the machine's load (tests/patience.py)."""
    import subprocess

    from tests.patience import patient

    return subprocess.run([sys.executable, "-m", "tuner", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=patient(timeout))


@pytest.fixture(scope="session")
def nvcc() -> str:
    from tuner.compile.nvcc import find_nvcc

    try:
        return find_nvcc()
    except TunerError as exc:
        pytest.skip(f"nvcc is not installed here, so nothing can be compiled: {exc}")


@pytest.fixture(scope="session")
def recording(tmp_path_factory) -> Path:
    """Every valid fermi_like configuration answered by the scripted stand-in: a fixture of the replay logic."""
    import tuner

    out = tmp_path_factory.mktemp("recording")
    tuner.run(tuner.load_experiment(ROOT / "experiments/fermi_like.yaml"), backend=ScriptedBackend(),
              strategy="grid", trials=100, out=out, quiet=True, report=False)
    return out


@pytest.fixture(scope="session")
def recorded_gemm():
    """The shipped brute-force GEMM recordings, by file stem."""
    from tuner.recorded import load_recorded

    folder = ROOT / "experiments" / "data" / "recorded"
    return {name: load_recorded(folder / f"{name}.json.gz") for name in ("gemm_A100", "gemm_RTX_2080_Ti")}


@pytest.fixture(scope="session")
def postgres_server():
    """A throwaway PostgreSQL server for the whole session (tests/postgres_server.py)."""
    from tests.postgres_server import running_server, why_not_available

    reason = why_not_available()
    if reason is not None:
        pytest.skip(reason)
    with running_server() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server, request) -> str:
    """The URL of a new empty database on the session's PostgreSQL server."""
    import re

    name = re.sub(r"[^a-z0-9_]", "_", request.node.name.lower())[:50] + f"_{id(request) % 100000}"
    return postgres_server.create_database(name)
