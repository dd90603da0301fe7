"""Every CUDA family and dtype computes the right product, at a square size, an awkward one and 1×1×1."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tests.gpu.support import RAW_PROBLEM, float32_config
from tests.test_regblock_model import BEST as REGBLOCK_BEST
from tuner.backends.measuring_process import THREAD_VARIABLES
from tuner.config import Config, Problem
from tuner.kernels.discovery import families
from tuner.kernels.matmul import tolerance
from tuner.measure.measurement import Status
from tuner.space.entry_space import violations

pytestmark = pytest.mark.gpu

PROBLEMS = (Problem(1000, 1000, 1000), Problem(77, 1000, 333), Problem(1, 1, 1))
DTYPES = ("float32", "float64", "int32")


def small_parameter_sets(family_name: str, dtype: str) -> list[dict]:
    """The first and the last valid combination of the family's default values."""
    family = families()[family_name]
    names = family.parameter_names
    combos = [dict(zip(names, values, strict=True))
              for values in itertools.product(*(p.default for p in family.parameters))]
    valid = [c for c in combos if not violations(family, c, dtype)]
    return [valid[0], valid[-1]] if len(valid) > 1 else valid


CONFIGS = [
    Config.make(problem, name, dtype, params)
    for name in families() if families()[name].target == "cuda"
    for dtype in DTYPES if dtype in families()[name].dtypes
    for params in small_parameter_sets(name, dtype)
    for problem in PROBLEMS
]
# The register-blocked family's fastest configurations on both schedules, also where no tile divides the edges,
# where K or N rule out 128-bit accesses and past 4096 in every dimension; on persistent blocks (SCHEDULE=1) besides:
# one wave of 128×128 tiles on 132 SMs exactly, a wave and 12 tiles (all split by slices), two waves and 8 tiles (a
# whole wave, then the split), and a single slice of K. The shapes above have fewer tiles than blocks.
REGBLOCK_PROBLEMS = (*PROBLEMS, Problem(1000, 777, 333), Problem(129, 131, 17), Problem(4097, 4095, 4093))
PERSISTENT_PROBLEMS = (Problem(1536, 1408, 1000), Problem(1536, 1536, 999), Problem(2176, 2048, 515),
                       Problem(2048, 2048, 7))
CONFIGS += [Config.make(problem, "regblock", dtype, {**params, "SCHEDULE": schedule})
            for dtype, params in REGBLOCK_BEST for schedule in (0, 1)
            for problem in REGBLOCK_PROBLEMS + (PERSISTENT_PROBLEMS if schedule else ())]


@pytest.fixture(scope="module")
def prefetched(backend):
    backend.prefetch(CONFIGS)
    return backend


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.key)
def test_family_is_correct(prefetched, config: Config):
    result = prefetched.evaluate(config)
    assert result.status is Status.OK, result.reason
    assert result.error is not None and result.error <= tolerance(config.dtype, config.problem).bound
    assert result.timing is not None and result.timing.count >= 3
    assert result.resources.local_bytes == 0, "no register array may spill to local memory"
    assert (result.resources.spill_store_bytes, result.resources.spill_load_bytes) == (0, 0), "ptxas's report"
    assert result.compile_time_s is not None and result.resources.registers


WRONG_SOURCE = r"""
extern "C" __global__ void matmul(const float* A, const float* B, float* C, int M, int N, int K)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc + (row == 3 && col == 5 ? 0.01f : 0.0f);  // one element off by 1e-2
}
"""

UNWRITTEN_SOURCE = r"""
extern "C" __global__ void matmul(const float* A, const float* B, float* C, int M, int N, int K)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M - 1 || col >= N) return;  // forgets the last row
    float acc = 0;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}
"""


def test_a_wrong_result_is_caught_and_not_timed(backend):
    result = backend.evaluate(float32_config(), source=WRONG_SOURCE)
    assert result.status is Status.WRONG and result.timing is None
    assert result.error > tolerance("float32", Problem(1, 1, 160)).bound, result.reason


def test_an_unwritten_row_is_caught(backend):
    result = backend.evaluate(float32_config(), source=UNWRITTEN_SOURCE)
    assert result.status is Status.WRONG and result.timing is None
    assert "192 of 49152 elements of C were never written" in result.reason


def test_busy_time_accumulates(backend):
    before = backend.busy_seconds
    assert backend.evaluate(float32_config(Problem(64, 64, 64))).status is Status.OK
    assert backend.busy_seconds > before


def test_problems_measured_in_turns_keep_their_inputs(backend):
    """The search measures the next study's configurations between the last ones of a study, so the measuring process
    goes back and forth between problems (and on to a third): each problem's buffers, inputs and reference stay
    right."""
    small, other, third = Problem(96, 80, 72), Problem(130, 70, 50), RAW_PROBLEM
    for problem in (RAW_PROBLEM, small, RAW_PROBLEM, other, small, third):
        result = backend.evaluate(Config.make(problem, "tiled", "float32", {"TILE_WIDTH": 16}))
        assert result.status is Status.OK, result.reason


def test_the_measuring_process_runs_blas_on_one_thread(backend):
    """Its comparisons with the reference would otherwise wake a BLAS thread per core, which spin and take the
    cores from the compilers."""
    pid = backend.channel.live().process.pid
    variables = dict(item.split("=", 1) for item in Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0")
                     if "=" in item)
    assert {name: variables.get(name) for name in THREAD_VARIABLES} == dict.fromkeys(THREAD_VARIABLES, "1")
