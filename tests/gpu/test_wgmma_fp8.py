"""The FP8 families on the GPU: every design of the ladder, in e4m3 and e5m2 (and two in e4m3 × e5m2), with
per-tensor and fine-grained scales, verifies on odd shapes (M and N of no tile width, K a multiple of 16 but of no
128-deep slice, K below one slice, decode M = 1 with split-K); and the vendor's FP8 GEMM is measured as the
baseline, verified alike."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fp8_configs import FP8_CONFIGS
from tests.gpu.support import assert_right_on_hopper, hopper_backend, on_hopper
from tuner.config import Config, Problem
from tuner.measure.measurement import Status

pytestmark = pytest.mark.gpu

PROBLEMS = (
    Problem(512, 512, 512),
    Problem(77, 201, 528),       # odd M, odd N (C's rows start at odd elements), K = 4·128 + 16
    Problem(1, 4096, 4096),      # decode
    Problem(300, 264, 48),       # K below one slice
    Problem(1000, 3000, 2000),   # many tiles for persistent blocks
)
CONFIGS = [Config.make(problem, family, dtype, params) for family, dtype, params in FP8_CONFIGS for problem in PROBLEMS]


@pytest.fixture(scope="module")
def hopper() -> Iterator:
    with hopper_backend(CONFIGS) as backend:
        yield backend


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.key)
def test_fp8_is_correct(hopper, config: Config):
    assert_right_on_hopper(hopper.evaluate(config), config)


def test_k_not_a_multiple_of_16_is_refused_naming_the_buffer(hopper):
    family, dtype, params = FP8_CONFIGS[0]
    result = hopper.evaluate(Config.make(Problem(128, 128, 200), family, dtype, params))
    assert result.status is Status.INVALID
    if on_hopper():
        assert "buffer A" in result.reason and "multiple of 16" in result.reason


@pytest.mark.parametrize("dtype", ["float8_e4m3", "float8_e4m3_e5m2"])
def test_the_vendor_fp8_gemm_is_the_baseline(hopper, dtype: str):
    result = hopper.baseline(Problem(1000, 3000, 2000), dtype)
    if not on_hopper():
        pytest.skip("cuBLASLt runs FP8 on compute capability 8.9 and 9.0 only")
    assert result.status is Status.OK, result.reason
    assert "cuBLASLt" in result.reason
