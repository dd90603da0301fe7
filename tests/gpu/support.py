"""What the GPU tests share: quick measuring settings, a configuration for the raw test kernels, and a backend for
sm_90a kernels with what their measurements must show."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from dataclasses import replace

from tuner.config import Config, Problem
from tuner.kernels.discovery import get_family
from tuner.measure.measurement import Measurement, Status
from tuner.settings import CompileSettings, MeasureSettings

QUICK = MeasureSettings(warmup=1, min_samples=3, max_samples=10, max_time_s=0.2)
"""Enough samples to exercise the timing method without spending the GPU's time on precision."""
RAW_PROBLEM = Problem(256, 192, 160)


def float32_config(problem: Problem = RAW_PROBLEM, block: tuple[int, int] = (16, 16)) -> Config:
    """A naive float32 configuration whose geometry the raw test kernels borrow."""
    return Config.make(problem, "naive", "float32", {"BLOCK_X": block[0], "BLOCK_Y": block[1]})


@contextlib.contextmanager
def hopper_backend(configs: list[Config]) -> Iterator:
    """A PyCUDA backend compiling for sm_90a, the configurations' compilation started; a deadlocked pipeline shows
    as a crash after 20 s rather than the default minute."""
    from tuner.backends.pycuda.backend import PycudaBackend

    with PycudaBackend(replace(QUICK, timeout_s=20.0), CompileSettings(arch="sm_90a")) as backend:
        backend.prefetch(configs)
        yield backend


@functools.cache
def on_hopper() -> bool:
    """Whether the GPU the measuring process measures on is compute capability 9.0 (a driver query; no context is
    made)."""
    import pycuda.driver as cuda

    cuda.init()
    return cuda.Device(0).compute_capability() == (9, 0)


def assert_right_on_hopper(result: Measurement, config: Config) -> None:
    """An sm_90a kernel's measurement: verified within its family's tolerance and timed, without local memory, on a
    Hopper GPU; refused as invalid with the reason on any other."""
    if not on_hopper():
        assert result.status is Status.INVALID and "runs only on GPUs of that architecture" in result.reason
        return
    assert result.status is Status.OK, result.reason
    assert result.error is not None
    assert result.error <= get_family(config.family).tolerance(config.dtype, config.problem).bound
    assert result.timing is not None and result.timing.count >= 3
    assert result.resources.local_bytes == 0
