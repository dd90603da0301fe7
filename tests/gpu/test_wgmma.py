"""The wgmma family through the real backend: every rung of its ladder of designs, in every dtype, verifies at 4096³
and at shapes whose edges no tile divides (a cluster's second block wholly outside M, K below one slice, one row);
problems whose rows TMA cannot describe are refused as invalid with the reason; other GPUs refuse the sm_90a code."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.gpu.support import assert_right_on_hopper, hopper_backend, on_hopper
from tests.wgmma_configs import GPU_PARAMETERS
from tuner.config import Config, Problem
from tuner.measure.measurement import Status

pytestmark = pytest.mark.gpu

PROBLEMS = (Problem(4096, 4096, 4096), Problem(1000, 3000, 2000), Problem(129, 136, 520), Problem(77, 200, 40),
            Problem(1, 8, 8))
CONFIGS = [Config.make(problem, "wgmma", dtype, params) for dtype, params in GPU_PARAMETERS for problem in PROBLEMS]


@pytest.fixture(scope="module")
def hopper() -> Iterator:
    with hopper_backend(CONFIGS) as backend:
        yield backend


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.key}")
def test_wgmma_is_correct(hopper, config: Config):
    assert_right_on_hopper(hopper.evaluate(config), config)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "tf32"])
def test_rows_tma_cannot_describe_are_refused(hopper, dtype):
    params = next(p for d, p in GPU_PARAMETERS if d == dtype)
    result = hopper.evaluate(Config.make(Problem(1000, 3000, 777), "wgmma", dtype, params))
    assert result.status is Status.INVALID
    if on_hopper():
        assert "buffer A (1000×777" in result.reason and "16 bytes" in result.reason, result.reason
