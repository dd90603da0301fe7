"""The vendor GEMM each study's kernels are compared with, per dtype: cuBLAS on the plain product's buffers, or
cuBLASLt's FP8 GEMM (per-tensor scales, B stored K-major) on the FP8 product's."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from tuner.config import Problem
from tuner.kernels import fp8_matmul
from tuner.kernels.family import MATMUL, Kernel
from tuner.precision import PRECISIONS

TORCH_FP8 = {"float8_e4m3": "float8_e4m3fn", "float8_e5m2": "float8_e5m2"}
"""torch's names of the FP8 dtypes."""


def baseline_kernel(dtype: str) -> Kernel:
    """The arguments, reference and tolerance the vendor's GEMM of this dtype is measured with."""
    return fp8_matmul.TENSOR_SCALED if fp8_matmul.is_fp8(dtype) else MATMUL


def baseline_launcher(pointers: Mapping[str, int], problem: Problem, dtype: str) -> tuple[Callable[[], None], str]:
    """A callable queuing the vendor's product on the buffers at ``pointers`` (by name), and the library's
    description; BaselineUnavailable where no library runs it here."""
    a, b, c = (int(pointers.get(name, 0)) for name in ("A", "B", "C"))
    if fp8_matmul.is_fp8(dtype):
        return _fp8_launcher(a, b, c, problem, dtype)
    from tuner.backends.pycuda.cublas import gemm_launcher

    return gemm_launcher(a, b, c, problem.M, problem.N, problem.K, dtype)


def load_baseline_library(dtype: str) -> None:
    """Load the library the vendor's GEMM of this dtype runs in, launching nothing; BaselineUnavailable where none
    is found."""
    if fp8_matmul.is_fp8(dtype):
        from tuner.backends.pycuda.cublaslt import library

        library()
        return
    from tuner.backends.pycuda.cublas import gemm_launcher

    gemm_launcher(0, 0, 0, 1, 1, 1, dtype)


def _fp8_launcher(a: int, b: int, c: int, problem: Problem, dtype: str) -> tuple[Callable[[], None], str]:
    """cuBLASLt's FP8 GEMM through its C API, tried once; where cuBLASLt refuses the launch, the same library
    through torch's ``_scaled_mm`` (which picks its own algorithm and settings)."""
    import pycuda.driver as cuda

    from tuner.backends.pycuda.cublas import BaselineUnavailable
    from tuner.backends.pycuda.cublaslt_fp8 import fp8_gemm_launcher

    try:
        a_dtype, b_dtype = fp8_matmul.operand_dtypes(dtype)
        launch, description = fp8_gemm_launcher(a, b, c, problem.M, problem.N, problem.K, a_dtype, b_dtype,
                                                fp8_matmul.SCALE_A, fp8_matmul.SCALE_B, PRECISIONS[dtype].output)
        if a and b and c:
            launch()
            cuda.Context.synchronize()
        return launch, description
    except BaselineUnavailable as exc:
        refused = str(exc)
    try:
        return _torch_scaled_mm(a, b, c, problem, dtype, refused)
    except (ImportError, AttributeError, RuntimeError, ValueError, TypeError) as exc:  # torch's refusals vary
        raise BaselineUnavailable(f"{refused}; torch's _scaled_mm could not run it either ({exc})") from None


def _torch_scaled_mm(a: int, b: int, c: int, problem: Problem, dtype: str,
                     refused: str) -> tuple[Callable[[], None], str]:
    import torch

    from tuner.backends.pycuda.torch_views import torch_view

    M, N, K = problem.M, problem.N, problem.K
    a_type, b_type = (getattr(torch, TORCH_FP8[d]) for d in fp8_matmul.operand_dtypes(dtype))
    a_view, b_view = torch_view(a, (M, K), "|u1", a_type), torch_view(b, (N, K), "|u1", b_type)
    output = PRECISIONS[dtype].output
    out_type = getattr(torch, output)
    c_view = torch_view(c, (M, N), "<f4" if output == "float32" else "<i2", out_type)
    scale_a = torch.tensor(fp8_matmul.SCALE_A, device="cuda")
    scale_b = torch.tensor(fp8_matmul.SCALE_B, device="cuda")

    def launch() -> None:
        torch._scaled_mm(a_view, b_view.t(), scale_a=scale_a, scale_b=scale_b, out_dtype=out_type, out=c_view)

    launch()
    torch.cuda.synchronize()
    return launch, (f"cuBLASLt's FP8 GEMM through torch {torch.__version__} _scaled_mm (per-tensor scales, {output} "
                    f"out; its C API refused the launch here: {refused})")
