"""cuBLAS GEMM on the measuring process's own buffers, as the baseline each tuned kernel is compared with.

The buffers hold row-major matrices; cuBLAS reads column-major. A row-major X (r×c) is, read column-major,
Xᵀ (c×r) with leading dimension c. So C = A·B row-major is computed as Cᵀ = Bᵀ·Aᵀ column-major:
gemm(m=N, n=M, k=K, first operand B with ld N, second operand A with ld K, result C with ld N), no
transposes. Through CuPy's cuBLAS bindings when CuPy is importable, else through torch (on the same memory,
via ``__cuda_array_interface__``). The math matches the dtype: float32 stays float32 math (TF32 off), tf32 asks
for TF32 (CUBLAS_COMPUTE_32F_FAST_TF32), bfloat16 and float16 multiply 16-bit inputs into a float32 output
(cublasGemmEx, CUBLAS_COMPUTE_32F), and bfloat16_out_bfloat16 and float16_out_float16 into a 16-bit one (C in the
inputs' type, as torch.matmul on 16-bit tensors writes it); the description names the routine and the compute
type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tuner.backends.pycuda.torch_views import torch_view
from tuner.kernels.verify import NUMPY_DTYPES


class BaselineUnavailable(Exception):
    """No library can run this GEMM here; the message says why."""


GEMM_EX_TYPES: dict[str, tuple[str, str, str]] = {
    "tf32": ("CUDA_R_32F", "CUDA_R_32F", "CUBLAS_COMPUTE_32F_FAST_TF32"),
    "bfloat16": ("CUDA_R_16BF", "CUDA_R_32F", "CUBLAS_COMPUTE_32F"),
    "float16": ("CUDA_R_16F", "CUDA_R_32F", "CUBLAS_COMPUTE_32F"),
    "bfloat16_out_bfloat16": ("CUDA_R_16BF", "CUDA_R_16BF", "CUBLAS_COMPUTE_32F"),
    "float16_out_float16": ("CUDA_R_16F", "CUDA_R_16F", "CUBLAS_COMPUTE_32F"),
}
"""The tensor-core dtypes through cublasGemmEx: the inputs' type, the output's, and the compute type (TF32 math
only for tf32)."""
TORCH_16_BIT = {"bfloat16_out_bfloat16": "bfloat16", "float16_out_float16": "float16"}
"""The dtypes whose product torch.matmul computes as this tool does (16-bit inputs and output), with torch's name of
the 16-bit type (the array interface has no type string for bfloat16: 2-byte words viewed as it)."""
CUDA_CONSTANTS = {"CUDA_R_32F": 0, "CUDA_R_64F": 1, "CUDA_R_16F": 2, "CUDA_R_16BF": 14, "CUBLAS_COMPUTE_32F": 68,
                  "CUBLAS_COMPUTE_32F_FAST_TF32": 77, "CUBLAS_COMPUTE_64F": 70, "CUBLAS_GEMM_DEFAULT": -1}
"""Their values in CUDA's headers (library_types.h, cublas_api.h), where CuPy does not export a name."""


def _constant(name: str) -> int:
    from cupy.cuda import runtime
    from cupy_backends.cuda.libs import cublas

    return int(getattr(cublas, name, getattr(runtime, name, CUDA_CONSTANTS[name])))


def _cupy_gemm(a: int, b: int, c: int, M: int, N: int, K: int, dtype: str) -> tuple[Callable[[], None], str]:
    import cupy
    from cupy_backends.cuda.libs import cublas

    handle = cupy.cuda.device.get_cublas_handle()
    cublas.setMathMode(handle, getattr(cublas, "CUBLAS_DEFAULT_MATH", 0))
    op_n = cublas.CUBLAS_OP_N
    through = f"through CuPy {cupy.__version__}"
    if dtype in GEMM_EX_TYPES:
        inputs, output, compute = GEMM_EX_TYPES[dtype]
        types = _constant(inputs), _constant(output), _constant(compute)
        alpha, beta = np.ones(1, np.float32), np.zeros(1, np.float32)
        algorithm = _constant("CUBLAS_GEMM_DEFAULT")

        def launch_ex() -> None:
            # Cᵀ (N×M) = Bᵀ (N×K) · Aᵀ (K×M), all column-major: see the module text.
            cublas.gemmEx(handle, op_n, op_n, N, M, K, alpha.ctypes.data, b, types[0], N, a, types[0], K,
                          beta.ctypes.data, c, types[1], N, types[2], algorithm)

        return launch_ex, f"cuBLAS cublasGemmEx (A, B {inputs}; C {output}; {compute}) {through}"
    if dtype not in ("float32", "float64"):
        raise BaselineUnavailable(f"cuBLAS has no {dtype} GEMM (its integer GEMM takes int8 inputs only)")
    gemm = cublas.sgemm if dtype == "float32" else cublas.dgemm
    alpha, beta = np.ones(1, NUMPY_DTYPES[dtype]), np.zeros(1, NUMPY_DTYPES[dtype])

    def launch() -> None:
        # Cᵀ (N×M) = Bᵀ (N×K) · Aᵀ (K×M), all column-major: see the module text.
        gemm(handle, op_n, op_n, N, M, K, alpha.ctypes.data, b, N, a, K, beta.ctypes.data, c, N)

    if dtype == "float32":
        return launch, f"cuBLAS cublasSgemm (default math: no TF32; CUBLAS_COMPUTE_32F) {through}"
    return launch, f"cuBLAS cublasDgemm (CUBLAS_COMPUTE_64F) {through}"


def _torch_gemm(a: int, b: int, c: int, M: int, N: int, K: int, dtype: str) -> tuple[Callable[[], None], str]:
    import torch

    if not torch.cuda.is_available():
        raise ImportError(f"torch {torch.__version__} was built without CUDA")
    if dtype not in ("float32", "float64", "tf32", *TORCH_16_BIT):
        raise ImportError(f"torch's matmul writes a {dtype} product in {dtype}, not in the float32 this tool's "
                          f"{dtype} GEMMs write")
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    typestr, element = ("<i2", getattr(torch, TORCH_16_BIT[dtype])) if dtype in TORCH_16_BIT else (
        np.dtype(NUMPY_DTYPES[dtype]).str, None)
    view: dict[str, Any] = {
        name: torch_view(pointer, shape, typestr, element)
        for name, pointer, shape in (("a", a, (M, K)), ("b", b, (K, N)), ("c", c, (M, N)))
    }

    def launch() -> None:
        torch.matmul(view["a"], view["b"], out=view["c"])

    math = "TF32 on" if dtype == "tf32" else "TF32 off" if element is None else f"{TORCH_16_BIT[dtype]} in and out"
    return launch, f"cuBLAS through torch {torch.__version__} matmul ({math})"


def gemm_launcher(a: int, b: int, c: int, M: int, N: int, K: int, dtype: str) -> tuple[Callable[[], None], str]:
    """A callable queuing C = A·B through cuBLAS on the default stream, and a description of the library."""
    if dtype not in ("float32", "float64", *GEMM_EX_TYPES):
        raise BaselineUnavailable(f"cuBLAS has no {dtype} GEMM (its integer GEMM takes int8 inputs only)")
    failures = []
    for make in (_cupy_gemm, _torch_gemm):
        try:
            return make(a, b, c, M, N, K, dtype)
        except (ImportError, AttributeError) as exc:  # missing, or a version without these bindings
            failures.append(str(exc))
    raise BaselineUnavailable(f"neither CuPy nor torch can run cuBLAS here ({'; '.join(failures)})")
