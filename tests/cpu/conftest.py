"""What the CPU tests share: a cache folder of their own, quickly measured ceilings and one backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tuner.errors import TunerError
from tuner.measure.machine_load import ProcCounters
from tuner.settings import MeasureSettings

QUICK = MeasureSettings(warmup=0, min_samples=3, max_samples=5, max_time_s=0.05, timeout_s=60.0)
"""Enough samples to exercise the timing method."""
QUICK_CEILINGS = MeasureSettings(cold_caches=False, warmup=1, min_samples=3, max_samples=5, max_time_s=0.2)
CEILING_ARRAY_BYTES = 4 * 2**20


@pytest.fixture(scope="session")
def cc() -> str:
    from tuner.compile.cc import find_cc

    try:
        return find_cc()
    except TunerError as exc:
        pytest.skip(f"no C compiler here, so nothing can be compiled: {exc}")


@pytest.fixture(scope="session")
def cpu_cache(tmp_path_factory: pytest.TempPathFactory, cc: str) -> Iterator[Path]:
    """TUNER_CACHE_DIR for the session (and the processes it starts): every kernel is compiled afresh."""
    folder = tmp_path_factory.mktemp("tuner-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TUNER_CACHE_DIR", str(folder))
        yield folder


class UnwatchedCounters(ProcCounters):
    """CPU counters that see no other process: the quick ceilings below are measured for real, but cached whatever
    the machine's load, so that the backends of the tests find them (tests/test_machine_load.py tests the load)."""

    def busy_ticks(self, cpus: set[int]) -> int:
        return 0

    def tree_ticks(self, root_pid: int) -> int:
        return 0


@pytest.fixture(scope="session")
def quick_ceilings(cpu_cache: Path) -> dict[str, Any]:
    """The CPU's ceilings measured with few samples over small arrays, cached where the backend looks."""
    from tuner.backends.cpu.summary import summary
    from tuner.measure.machine_load import LoadMeter

    return summary(remeasure=True, settings=QUICK_CEILINGS, array_bytes=CEILING_ARRAY_BYTES,
                   load=LoadMeter(counters=UnwatchedCounters()))


@pytest.fixture(scope="session")
def backend(quick_ceilings: dict[str, Any]) -> Iterator[Any]:
    from tuner.backends.cpu.backend import CpuBackend

    with CpuBackend(QUICK) as cpu:
        yield cpu
