"""Failures are outcomes: a fault or a hang ends only the measuring process, resource limits are invalid, and the next
evaluation in the same backend still succeeds."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from tests.gpu.support import QUICK, float32_config
from tuner.backends.pycuda.backend import PycudaBackend
from tuner.kernels.render import launch
from tuner.measure.measurement import Status

pytestmark = pytest.mark.gpu

OUT_OF_BOUNDS_SOURCE = r"""
extern "C" __global__ void matmul(const float* A, const float* B, float* C, int M, int N, int K)
{
    const size_t i = (size_t)(blockIdx.y * blockDim.y + threadIdx.y) * N + blockIdx.x * blockDim.x + threadIdx.x;
    C[i + (1ull << 38)] = 1.0f;  // a terabyte past the end of C
}
"""

NEVER_ENDING_SOURCE = r"""
extern "C" __global__ void matmul(const float* A, const float* B, float* C, int M, int N, int K)
{
    long long now;
    do { now = clock64(); } while (now >= 0);  // the cycle counter never turns negative
    C[0] = (float)now;
}
"""

REGISTER_HUNGRY_SOURCE = r"""
extern "C" __global__ void matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                  int M, int N, int K)
{
    // 128 values live at once (about 168 registers a thread): a block of 1024 threads cannot launch.
    float v[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) v[i] = A[(threadIdx.x * 131 + i * 7) % (M * K)];
    for (int k = 0; k < K; ++k) {
        const float b = B[k % (K * N)];
#pragma unroll
        for (int i = 0; i < 128; ++i) v[i] = v[i] * b + v[(i + 1) % 128];
    }
    float sum = 0;
#pragma unroll
    for (int i = 0; i < 128; ++i) sum += v[i];
    if (threadIdx.x < M * N) C[threadIdx.x] = sum;
}
"""

STATIC_SHARED_SOURCE = r"""
extern "C" __global__ void matmul(const float* A, const float* B, float* C, int M, int N, int K)
{
    __shared__ float tile[17408];  // 68 KB of static shared memory: over the 48 KB static limit
    tile[threadIdx.x] = A[threadIdx.x % (M * K)];
    __syncthreads();
    if (threadIdx.x < M * N) C[threadIdx.x] = tile[(threadIdx.x + 1) % blockDim.x];
}
"""

SYNTAX_ERROR_SOURCE = r"""
extern "C" __global__ void matmul(const float* A, const float* B, float* C, int M, int N, int K)
{
    C[0] = undeclared_name;
}
"""

# A correct naive product that also fills and reads back DYNAMIC_BYTES of dynamic shared memory, so it runs
# only when the launch may use more than the 48 KB a block gets without opting in.
DYNAMIC_SHARED_SOURCE = r"""
#define WORDS (DYNAMIC_BYTES / 4)
extern "C" __global__ void matmul(const float* A, const float* B, float* C, int M, int N, int K)
{
    extern __shared__ float pad[];
    const int tid = threadIdx.y * blockDim.x + threadIdx.x, threads = blockDim.x * blockDim.y;
    for (int i = tid; i < WORDS; i += threads) pad[i] = 0.0f;
    __syncthreads();
    const int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = pad[WORDS - 1 - tid];
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}
"""


@pytest.fixture(scope="module")
def backend() -> Iterator[PycudaBackend]:
    with PycudaBackend(replace(QUICK, timeout_s=5.0)) as b:
        yield b


def test_out_of_bounds_is_crashed_and_the_next_evaluation_succeeds(backend):
    crashed = backend.evaluate(float32_config(), source=OUT_OF_BOUNDS_SOURCE)
    assert crashed.status is Status.CRASHED
    assert "illegal" in crashed.reason.lower() or "launch failed" in crashed.reason.lower(), crashed.reason
    after = backend.evaluate(float32_config())
    assert after.status is Status.OK, after.reason


def test_a_never_ending_kernel_is_killed_at_its_timeout(backend):
    hung = backend.evaluate(float32_config(), source=NEVER_ENDING_SOURCE)
    assert hung.status is Status.CRASHED and "timed out after 5 s" in hung.reason, hung.reason
    after = backend.evaluate(float32_config())
    assert after.status is Status.OK, after.reason


def test_too_many_registers_for_the_block_is_invalid(backend):
    result = backend.evaluate(float32_config(block=(32, 32)), source=REGISTER_HUNGRY_SOURCE)
    assert result.status is Status.INVALID and "too many resources" in result.reason, result.reason
    assert result.resources.registers > 64


def test_too_much_static_shared_memory_is_invalid(backend):
    result = backend.evaluate(float32_config(), source=STATIC_SHARED_SOURCE)
    assert result.status is Status.INVALID and "too much shared data" in result.reason, result.reason


def test_a_compile_error_carries_the_compilers_message(backend):
    result = backend.evaluate(float32_config(), source=SYNTAX_ERROR_SOURCE)
    assert result.status is Status.COMPILE_ERROR and "undeclared_name" in result.reason, result.reason
    assert result.compile_time_s is not None


@pytest.mark.parametrize("kilobytes", [100, 200])
def test_dynamic_shared_memory_past_48_kb_is_opted_in(backend, kilobytes):
    config = float32_config()
    source = f"#define DYNAMIC_BYTES {kilobytes * 1024}\n" + DYNAMIC_SHARED_SOURCE
    geometry = replace(launch(config), dynamic_shared_bytes=kilobytes * 1024)
    result = backend.evaluate(config, source=source, launch=geometry)
    assert result.status is Status.OK, result.reason
    assert result.resources.shared_bytes == kilobytes * 1024


def test_more_dynamic_shared_memory_than_the_device_has_is_invalid(backend):
    config = float32_config()
    source = f"#define DYNAMIC_BYTES {300 * 1024}\n" + DYNAMIC_SHARED_SOURCE
    geometry = replace(launch(config), dynamic_shared_bytes=300 * 1024)
    result = backend.evaluate(config, source=source, launch=geometry)
    assert result.status is Status.INVALID and "shared memory" in result.reason, result.reason
