"""The dtypes whose C is written in 16 bits on the GPU: the wgmma family in bfloat16_out_bfloat16 and
float16_out_float16 and the FP8 families with a bfloat16 C verify on a few designs at odd shapes (decode M = 1, and
333×520×208, whose M and N no tile divides and whose K is no whole slice); split-K, which would round the splits'
partial sums, does not compile; and the vendor's GEMM with a 16-bit C is measured as the baseline of each (but
e5m2 × e5m2, which cuBLASLt has no GEMM of: refused with the reason)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fp8_configs import FP8_OUT_CONFIGS
from tests.gpu.support import assert_right_on_hopper, hopper_backend, on_hopper
from tests.wgmma_configs import OUTPUT_16_PARAMETERS
from tuner.config import Config, Problem
from tuner.kernels.discovery import get_family
from tuner.kernels.targets import target
from tuner.measure.measurement import Status
from tuner.space.entry_space import violations

pytestmark = pytest.mark.gpu

PROBLEMS = (
    Problem(1, 4096, 4096),      # decode
    Problem(333, 520, 208),      # M and N of no tile width, K of no whole slice
    Problem(1000, 3000, 2000),   # many tiles for persistent blocks
)
DESIGNS = [("wgmma", dtype, params) for dtype, params in OUTPUT_16_PARAMETERS] + FP8_OUT_CONFIGS
CONFIGS = [Config.make(problem, family, dtype, params) for family, dtype, params in DESIGNS for problem in PROBLEMS]
CONFIGS += [Config.make(Problem(333, 77, 208), family, dtype, params)  # FP8's N may be odd: rows at odd elements
            for family, dtype, params in FP8_OUT_CONFIGS]
NEW_DTYPES = sorted({dtype for _, dtype, _ in DESIGNS})
SPLIT = [Config.make(Problem(333, 520, 208), family, dtype, {**params, "SPLIT_K": 2})
         for family, dtype, params in (DESIGNS[0], FP8_OUT_CONFIGS[0])]


@pytest.fixture(scope="module")
def hopper() -> Iterator:
    with hopper_backend(CONFIGS + SPLIT) as backend:
        yield backend


def test_every_new_dtype_is_run():
    assert NEW_DTYPES == ["bfloat16_out_bfloat16", "float16_out_float16", "float8_e4m3_e5m2_out_bfloat16",
                          "float8_e4m3_out_bfloat16", "float8_e5m2_out_bfloat16"]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.key)
def test_a_16_bit_c_is_correct(hopper, config: Config):
    assert_right_on_hopper(hopper.evaluate(config), config)


@pytest.mark.parametrize("config", SPLIT, ids=lambda c: c.key)
def test_split_k_with_a_16_bit_c_is_refused(hopper, config: Config):
    reasons = violations(get_family(config.family), config.param_dict, config.dtype, target("sm_90a"))
    assert any("SPLIT_K 1 and STREAM_K 0 where C is written in 16 bits" in r for r in reasons), reasons
    result = hopper.evaluate(config)  # measured anyway (as a raw run would), the compiler refuses it
    assert result.status is Status.COMPILE_ERROR and "split-K and stream-K add partial sums" in result.reason


@pytest.mark.parametrize("dtype", NEW_DTYPES)
def test_the_vendor_gemm_with_a_16_bit_c_is_the_baseline(hopper, dtype: str):
    problem = Problem(1000, 3000, 2000)
    result = hopper.baseline(problem, dtype)
    if not on_hopper():
        pytest.skip("the FP8 baselines run on compute capability 8.9 and 9.0 only; this compares on Hopper alone")
    if dtype == "float8_e5m2_out_bfloat16":  # cuBLASLt has no e5m2 × e5m2 GEMM, whatever C's type
        assert result.status is Status.INVALID and "float8_e5m2 × float8_e5m2" in result.reason, result.reason
        return
    assert result.status is Status.OK, result.reason
    assert result.error is not None and result.timing is not None
    from tuner.backends.pycuda.vendor_gemm import baseline_kernel

    assert result.error <= baseline_kernel(dtype).tolerance(dtype, problem).bound
    if dtype.startswith("float8"):
        assert "cuBLASLt" in result.reason and ("CUDA_R_16BF" in result.reason or "bfloat16 out" in result.reason)
    else:
        assert ("cublasGemmEx" in result.reason and "C CUDA_R_16" in result.reason) or "in and out" in result.reason
