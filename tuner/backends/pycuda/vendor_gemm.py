"""The vendor GEMM each study's kernels are compared with, per dtype: cuBLAS on the plain product's buffers, or
cuBLASLt's FP8 GEMM (per-tensor scales, B stored K-major) on the FP8 product's."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from tuner.config import Problem
from tuner.kernels import fp8_matmul
from tuner.kernels.family import MATMUL, Kernel


def baseline_kernel(dtype: str) -> Kernel:
    """The arguments, reference and tolerance the vendor's GEMM of this dtype is measured with."""
    return fp8_matmul.TENSOR_SCALED if fp8_matmul.is_fp8(dtype) else MATMUL


def baseline_launcher(pointers: Mapping[str, int], problem: Problem, dtype: str) -> tuple[Callable[[], None], str]:
    """A callable queuing the vendor's product on the buffers at ``pointers`` (by name), and the library's
    description; BaselineUnavailable where no library runs it here."""
    a, b, c = (int(pointers.get(name, 0)) for name in ("A", "B", "C"))
    if fp8_matmul.is_fp8(dtype):
        from tuner.backends.pycuda.cublaslt_fp8 import fp8_gemm_launcher

        return fp8_gemm_launcher(a, b, c, problem.M, problem.N, problem.K, dtype, dtype, fp8_matmul.SCALE_A,
                                 fp8_matmul.SCALE_B)
    from tuner.backends.pycuda.cublas import gemm_launcher

    return gemm_launcher(a, b, c, problem.M, problem.N, problem.K, dtype)
