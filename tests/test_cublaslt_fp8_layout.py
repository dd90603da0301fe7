"""cuBLASLt's FP8 GEMM as this project calls it, without a GPU: the "TN" layout of A (M×K row-major) and B stored
K-major (N×K row-major) read column-major computes A·B, the types and scales go to the operands cuBLASLt names,
fast accumulation is off, and the pairs cuBLASLt has no FP8 GEMM of are refused before anything is made."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from tuner.backends.pycuda.cublas import BaselineUnavailable
from tuner.backends.pycuda.cublaslt import COMPUTE_32F, CUDA_R_16BF, CUDA_R_32F, OP_N, OP_T, LtPlan, plan
from tuner.backends.pycuda.cublaslt_fp8 import fp8_gemm_launcher, fp8_plan, scale_attributes

M, N, K = 256, 512, 384
E4M3, E5M2 = 28, 29  # CUDA_R_8F_E4M3, CUDA_R_8F_E5M2 in library_types.h


def _column_major(flat: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """A packed buffer as cuBLASLt reads it: rows×cols, column-major, leading dimension rows."""
    assert flat.size == rows * cols
    return flat.reshape(cols, rows).T


def _emulate(lt: LtPlan, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """What cublasLtMatmul writes into the output buffer, read back row-major as M×N (alpha 1, beta 0)."""
    x = _column_major(first.ravel(), *lt.first[1:])
    y = _column_major(second.ravel(), *lt.second[1:])
    d = (x.T if lt.transa == OP_T else x) @ (y.T if lt.transb == OP_T else y)
    rows, cols = lt.output[1:]
    assert d.shape == (rows, cols)
    out = np.empty(rows * cols)
    out.reshape(cols, rows).T[...] = d  # written column-major, leading dimension rows
    return out.reshape(cols, rows)


@pytest.fixture(scope="module")
def operands() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    return rng.standard_normal((M, K)), rng.standard_normal((K, N))


def test_the_fp8_plan_is_tn_with_m_n_and_k_as_cublaslt_counts_them():
    lt = fp8_plan(M, N, K, "float8_e4m3", "float8_e4m3")
    assert (lt.transa, lt.transb) == (OP_T, OP_N)
    assert lt.first == (E4M3, K, N) and lt.second == (E4M3, K, M) and lt.output == (CUDA_R_32F, N, M)
    assert (lt.compute, lt.scale, lt.compute_name) == (COMPUTE_32F, CUDA_R_32F, "CUBLAS_COMPUTE_32F")


def test_the_fp8_layout_reads_a_and_k_major_b_into_their_row_major_product(operands):
    a, b = operands
    lt = fp8_plan(M, N, K, "float8_e4m3", "float8_e5m2")
    # cuBLASLt's first operand is the B buffer (N×K row-major: Bᵀ), its second the A buffer
    assert np.allclose(_emulate(lt, np.ascontiguousarray(b.T), a), a @ b)


def test_the_other_dtypes_plan_still_reads_row_major_a_and_b_into_their_product(operands):
    a, b = operands
    lt = plan(M, N, K, "bfloat16")
    assert (lt.transa, lt.transb) == (OP_N, OP_N) and lt.output == (CUDA_R_32F, N, M)
    assert np.allclose(_emulate(lt, b, a), a @ b)
    with pytest.raises(BaselineUnavailable, match="no int32 GEMM"):
        plan(M, N, K, "int32")


def test_each_operand_takes_its_own_fp8_type_and_the_output_may_be_bfloat16():
    lt = fp8_plan(M, N, K, "float8_e5m2", "float8_e4m3", "bfloat16")
    assert lt.first[0] == E4M3 and lt.second[0] == E5M2  # first: the B buffer; second: the A buffer
    assert lt.output == (CUDA_R_16BF, N, M)


def test_b_s_scale_goes_to_cublaslt_s_a_and_fast_accumulation_is_off():
    (a_scale, first), (b_scale, second), (fast, mode) = scale_attributes(0x1000, 0x1004)
    assert (a_scale, b_scale, fast) == (17, 18, 25)  # CUBLASLT_MATMUL_DESC_{A,B}_SCALE_POINTER, _FAST_ACCUM
    assert (first.value, second.value) == (0x1004, 0x1000)
    assert mode.value == 0 and ctypes.sizeof(mode) == 1  # an int8_t


@pytest.mark.parametrize(("a_dtype", "b_dtype", "out_dtype", "words"), [
    ("float8_e5m2", "float8_e5m2", "float32", "no FP8 GEMM of float8_e5m2 × float8_e5m2 on Hopper"),
    ("bfloat16", "float8_e4m3", "float32", "A is bfloat16"),
    ("float8_e4m3", "int32", "float32", "B is int32"),
    ("float8_e4m3", "float8_e4m3", "float16", "not float16"),
])
def test_what_cublaslt_has_no_fp8_gemm_of_is_refused_before_any_gpu_work(a_dtype, b_dtype, out_dtype, words):
    with pytest.raises(BaselineUnavailable, match=words):
        fp8_gemm_launcher(0, 0, 0, M, N, K, a_dtype, b_dtype, 1.0, 1.0, out_dtype)
