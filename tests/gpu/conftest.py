"""GPU tests: each carries ``@pytest.mark.gpu`` and skips itself, with the reason, without PyCUDA or a GPU."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from tests.gpu.support import QUICK

HERE = Path(__file__).parent


@cache
def gpu_missing() -> str | None:
    """Why the GPU tests cannot run here, or None (a driver query; no context is created)."""
    if importlib.util.find_spec("pycuda") is None:
        return "PyCUDA is not installed"
    try:
        import pycuda.driver as cuda

        cuda.init()
        if cuda.Device.count() == 0:
            return "no CUDA GPU is visible"
    except Exception as exc:  # ImportError without libcuda, pycuda.driver.Error without a device
        return f"no usable CUDA GPU ({exc})"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(item.path).parents and "gpu" in item.keywords and gpu_missing():
            item.add_marker(pytest.mark.skip(reason=gpu_missing()))


@pytest.fixture(scope="session")
def backend() -> Iterator:
    from tuner.backends.pycuda.backend import PycudaBackend

    with PycudaBackend(QUICK) as b:
        yield b

