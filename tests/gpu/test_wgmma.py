"""The wgmma family through the real backend: every rung of its ladder of designs, in every dtype, verifies at 4096³
and at shapes whose edges no tile divides (a cluster's second block wholly outside M, K below one slice, one row);
problems whose rows TMA cannot describe are refused as invalid with the reason; other GPUs refuse the sm_90a code."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import replace

import pytest

from tests.gpu.support import QUICK
from tests.wgmma_configs import GPU_PARAMETERS
from tuner.config import Config, Problem
from tuner.kernels.matmul import tolerance
from tuner.measure.measurement import Status
from tuner.settings import CompileSettings

pytestmark = pytest.mark.gpu

PROBLEMS = (Problem(4096, 4096, 4096), Problem(1000, 3000, 2000), Problem(129, 136, 520), Problem(77, 200, 40),
            Problem(1, 8, 8))
CONFIGS = [Config.make(problem, "wgmma", dtype, params) for dtype, params in GPU_PARAMETERS for problem in PROBLEMS]


@pytest.fixture(scope="module")
def hopper() -> Iterator:
    from tuner.backends.pycuda.backend import PycudaBackend

    # A deadlocked pipeline shows as a crash after 20 s rather than the default minute.
    with PycudaBackend(replace(QUICK, timeout_s=20.0), CompileSettings(arch="sm_90a")) as backend:
        backend.prefetch(CONFIGS)
        yield backend


@functools.cache
def on_hopper() -> bool:
    """Whether the GPU the measuring process measures on is compute capability 9.0 (a driver query; no context is
    made)."""
    import pycuda.driver as cuda

    cuda.init()
    return cuda.Device(0).compute_capability() == (9, 0)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.key}")
def test_wgmma_is_correct(hopper, config: Config):
    result = hopper.evaluate(config)
    if not on_hopper():
        assert result.status is Status.INVALID and "runs only on GPUs of that architecture" in result.reason
        return
    assert result.status is Status.OK, result.reason
    assert result.error is not None and result.error <= tolerance(config.dtype, config.problem).bound
    assert result.timing is not None and result.timing.count >= 3
    assert result.resources.local_bytes == 0


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "tf32"])
def test_rows_tma_cannot_describe_are_refused(hopper, dtype):
    params = next(p for d, p in GPU_PARAMETERS if d == dtype)
    result = hopper.evaluate(Config.make(Problem(1000, 3000, 777), "wgmma", dtype, params))
    assert result.status is Status.INVALID
    if on_hopper():
        assert "buffer A (1000×777" in result.reason and "16 bytes" in result.reason, result.reason
