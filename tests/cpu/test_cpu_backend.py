"""The CPU backend with the real C compiler: compile errors, verification of every family on odd sizes, faults
and hangs as outcomes, the BLAS baseline and the environment."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.cpu.conftest import QUICK
from tests.patience import patient
from tuner.backends.cpu.backend import CpuBackend
from tuner.config import Config, Problem
from tuner.measure.measurement import Status

ODD = Problem(37, 29, 53)
FAMILY_PARAMS = {
    "cpu_naive": [{"PARALLEL": 0}, {"PARALLEL": 1}],
    "cpu_reorder": [{"PARALLEL": 0}, {"PARALLEL": 1}],
    "cpu_blocked": [{"MC": 8, "NC": 16, "KC": 7, "PARALLEL": 1}, {"MC": 64, "NC": 64, "KC": 64, "PARALLEL": 0}],
    "cpu_packed": [
        {"MC": 12, "NC": 24, "KC": 7, "MR": 6, "NR": 8, "KU": 4, "PARALLEL": 0},
        {"MC": 8, "NC": 12, "KC": 16, "MR": 4, "NR": 12, "KU": 1, "PARALLEL": 1},
        {"MC": 16, "NC": 16, "KC": 5, "MR": 8, "NR": 4, "KU": 2, "PARALLEL": 2},
    ],
}
SEGFAULT_SOURCE = """
void matmul(const double* A, const double* B, double* C, int M, int N, int K)
{
    *(volatile double*)16 = A[0];  /* a store to an address no process maps */
}
"""
HANG_SOURCE = """
void matmul(const double* A, const double* B, double* C, int M, int N, int K)
{
    for (;;)
        __asm__ volatile("");  /* a loop the compiler may not remove */
}
"""
WRITES_NOTHING_SOURCE = """
void matmul(const double* A, const double* B, double* C, int M, int N, int K)
{
}
"""
FIRST_CALL_ONLY_SOURCE = """
#include <stddef.h>

void matmul(const double* A, const double* B, double* C, int M, int N, int K)
{
    static int calls = 0;
    if (calls++ > 0)
        return;  /* every later call writes nothing: only the first call's results are ever in C */
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double acc = 0;
            for (int k = 0; k < K; ++k)
                acc += A[(size_t)i * K + k] * B[(size_t)k * N + j];
            C[(size_t)i * N + j] = acc;
        }
}
"""
SYNTAX_ERROR_SOURCE = "void matmul(const double* A, const double* B, double* C, int M, int N, int K) { C[0] = x; }"


def configs(dtype: str) -> list[Config]:
    return [Config.make(ODD, family, dtype, params) for family, sets in FAMILY_PARAMS.items() for params in sets]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.slow
def test_every_family_is_right_on_odd_sizes(backend, dtype):
    wanted = configs(dtype)
    backend.prefetch(wanted)
    for config in wanted:
        result = backend.evaluate(config)
        assert result.status is Status.OK, f"{config.key}: {result.status.value} {result.reason}"
        assert result.error is not None and result.timing is not None and result.timing.count >= 3
        assert result.resources.code_bytes and result.resources.code_bytes > 0
        assert result.compile_time_s is not None


def test_a_compile_error_is_an_outcome(backend):
    config = Config.make(ODD, "cpu_naive", "float64", {"PARALLEL": 0})
    result = backend.evaluate(config, source=SYNTAX_ERROR_SOURCE)
    assert result.status is Status.COMPILE_ERROR
    assert "undeclared" in result.reason and "kernel.c" in result.reason


def test_a_kernel_that_writes_nothing_is_wrong(backend):
    config = Config.make(ODD, "cpu_naive", "float64", {"PARALLEL": 0})
    result = backend.evaluate(config, source=WRITES_NOTHING_SOURCE)
    assert result.status is Status.WRONG and result.timing is None


def test_timed_calls_that_write_nothing_cannot_pass_on_the_first_calls_results(backend):
    """The outputs are poisoned before every timed call, so the last one's outputs are its own."""
    config = Config.make(ODD, "cpu_naive", "float64", {"PARALLEL": 0})
    result = backend.evaluate(config, source=FIRST_CALL_ONLY_SOURCE)
    assert result.status is Status.WRONG
    assert "right on its first call, wrong after" in result.reason and "timed calls" in result.reason


def test_a_segfault_is_crashed_and_the_next_evaluation_works(backend):
    config = Config.make(ODD, "cpu_naive", "float64", {"PARALLEL": 0})
    crashed = backend.evaluate(config, source=SEGFAULT_SOURCE)
    assert crashed.status is Status.CRASHED
    assert "SIGSEGV" in crashed.reason
    assert backend.evaluate(config).status is Status.OK


@pytest.mark.slow
def test_a_hang_is_killed_at_the_timeout(quick_ceilings):
    """The timeout also bounds the next kernel's run in the fresh measuring process (its first call, verification
    and timed calls), so it leaves room for a loaded machine."""
    config = Config.make(ODD, "cpu_naive", "float64", {"PARALLEL": 0})
    timeout_s = round(patient(2.0))
    with CpuBackend(replace(QUICK, timeout_s=timeout_s, cold_caches=False)) as backend:
        hung = backend.evaluate(config, source=HANG_SOURCE)
        assert hung.status is Status.CRASHED
        assert f"timed out after {timeout_s:g} s running the kernel" in hung.reason
        result = backend.evaluate(config)
        assert result.status is Status.OK, result.reason


def test_a_cuda_family_or_a_broken_constraint_is_invalid(backend):
    config = Config.make(ODD, "tiled", "float32", {"TILE_WIDTH": 16})
    result = backend.evaluate(config)
    assert result.status is Status.INVALID and "cuda family" in result.reason
    params = {**FAMILY_PARAMS["cpu_packed"][0], "MC": 13}
    result = backend.evaluate(Config.make(ODD, "cpu_packed", "float64", params))
    assert result.status is Status.INVALID and "MC is a multiple of MR" in result.reason


def test_the_blas_baseline_is_verified_and_timed_on_the_backends_threads(backend):
    result = backend.baseline(ODD, "float64")
    assert result.status is Status.OK and result.timing is not None
    assert result.error is not None and result.error < 1e-12
    threads = backend.threads
    assert f"{threads} thread" in result.reason and "numpy" in result.reason
    assert backend.baseline(ODD, "int32").status is Status.INVALID


def test_the_environment_names_the_cpu_compiler_and_ceilings(backend, quick_ceilings):
    env = backend.metadata()
    assert env["backend"] == "cpu" and env["device"]["threads"] == backend.threads
    assert env["device"]["name"] == quick_ceilings["device"]["name"]
    measured = env["peaks"]["measured"]
    assert set(measured) == {"float32_gflops", "float64_gflops", "bandwidth_gbs"}
    assert all(value > 0 for value in measured.values())
    assert "-march=native" in env["compile"]["flags"] and env["versions"]["cc"]
    assert "evicted" in env["measure"]["method"]
    assert "outputs poisoned again before each sample" in env["measure"]["method"]
    assert {"cpu_naive", "cpu_reorder", "cpu_blocked", "cpu_packed"} <= set(env["templates"])
