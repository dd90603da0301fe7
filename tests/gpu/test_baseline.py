"""cuBLAS, timed by the same method as the kernels and verified the same way."""

from __future__ import annotations

import pytest

from tuner.config import Problem
from tuner.kernels.matmul import tolerance
from tuner.measure.measurement import Status

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("problem", [Problem(1000, 1000, 1000), Problem(77, 1000, 333)], ids=lambda p: p.label)
def test_cublas_is_correct_and_timed(backend, problem, dtype):
    result = backend.baseline(problem, dtype)
    assert result.status is Status.OK, result.reason
    assert "cuBLAS" in result.reason
    assert result.error is not None and result.error <= tolerance(dtype, problem).bound
    assert result.timing is not None and result.timing.count >= 3


@pytest.mark.parametrize("dtype", ["tf32", "bfloat16", "float16"])
@pytest.mark.parametrize("problem", [Problem(1000, 1000, 1000), Problem(77, 1000, 333), Problem(256, 256, 8192)],
                         ids=lambda p: p.label)
def test_cublas_multiplies_each_tensor_core_dtype_within_its_bound(backend, problem, dtype):
    result = backend.baseline(problem, dtype)
    assert result.status is Status.OK, result.reason
    assert "cublasGemmEx" in result.reason or "torch" in result.reason
    assert ("FAST_TF32" in result.reason or "TF32 on" in result.reason) == (dtype == "tf32")
    assert result.error is not None and 0 < result.error <= tolerance(dtype, problem).bound


def test_cublas_float32_is_not_tf32(backend):
    """The float32 baseline must not round its inputs to TF32: its error stays within float32's √K bound, which a
    TF32 product (about 3e-4) exceeds."""
    problem = Problem(512, 512, 4096)
    result = backend.baseline(problem, "float32")
    assert result.status is Status.OK and result.error < tolerance("float32", problem).bound


def test_cublas_has_no_int32_gemm(backend):
    result = backend.baseline(Problem(64, 64, 64), "int32")
    assert result.status is Status.INVALID and "int32" in result.reason


RIVAL_PROBLEMS = [Problem(1000, 1000, 1000), Problem(77, 1000, 333), Problem(16, 4096, 4096)]


@pytest.mark.parametrize("dtype", ["float32", "tf32", "float64", "bfloat16", "float16"])
@pytest.mark.parametrize("problem", RIVAL_PROBLEMS, ids=lambda p: p.label)
def test_cublaslt_fastest_algorithm_is_correct_and_named(backend, problem, dtype):
    result = backend.rival(problem, dtype, "cublaslt", 4)
    assert result.status is Status.OK, result.reason
    assert "cublasLtMatmul" in result.reason and "heuristic rank" in result.reason
    assert ("FAST_TF32" in result.reason) == (dtype == "tf32")
    assert result.error is not None and result.error <= tolerance(dtype, problem).bound
    assert result.timing is not None and result.timing.count >= 3


@pytest.mark.parametrize("dtype", ["tf32", "bfloat16", "float16"])
@pytest.mark.parametrize("problem", RIVAL_PROBLEMS, ids=lambda p: p.label)
def test_triton_autotuned_gemm_is_correct_and_names_its_pick(backend, problem, dtype):
    pytest.importorskip("triton")
    result = backend.rival(problem, dtype, "triton")
    assert result.status is Status.OK, result.reason
    assert "Triton" in result.reason and "BM" in result.reason
    assert result.error is not None and 0 < result.error <= tolerance(dtype, problem).bound


def test_triton_is_not_asked_for_float64(backend):
    pytest.importorskip("triton")
    result = backend.rival(Problem(64, 64, 64), "float64", "triton")
    assert result.status is Status.INVALID and "float64" in result.reason
