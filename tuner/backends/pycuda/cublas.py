"""cuBLAS GEMM on the worker's own buffers, as the baseline each tuned kernel is compared with.

The buffers hold row-major matrices; cuBLAS reads column-major. A row-major X (r×c) is, read column-major,
Xᵀ (c×r) with leading dimension c. So C = A·B row-major is computed as Cᵀ = Bᵀ·Aᵀ column-major:
gemm(m=N, n=M, k=K, first operand B with ld N, second operand A with ld K, result C with ld N), no
transposes. Through CuPy's cuBLAS bindings when CuPy is importable, else through torch (on the same memory,
via ``__cuda_array_interface__``); TF32 is off in both: float32 stays float32 math.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tuner.verify import NUMPY_DTYPES


class BaselineUnavailable(Exception):
    """No library can run this GEMM here; the message says why."""


class _DeviceArray:
    """Just enough of an array for torch.as_tensor to view device memory it does not own."""

    def __init__(self, pointer: int, shape: tuple[int, int], dtype: str):
        self.__cuda_array_interface__ = {
            "shape": shape, "typestr": np.dtype(NUMPY_DTYPES[dtype]).str, "data": (pointer, False), "version": 3,
        }


def _cupy_gemm(a: int, b: int, c: int, M: int, N: int, K: int, dtype: str) -> tuple[Callable[[], None], str]:
    import cupy
    from cupy_backends.cuda.libs import cublas

    handle = cupy.cuda.device.get_cublas_handle()
    cublas.setMathMode(handle, getattr(cublas, "CUBLAS_DEFAULT_MATH", 0))
    gemm = cublas.sgemm if dtype == "float32" else cublas.dgemm
    alpha, beta = np.ones(1, NUMPY_DTYPES[dtype]), np.zeros(1, NUMPY_DTYPES[dtype])
    op_n = cublas.CUBLAS_OP_N

    def launch() -> None:
        # Cᵀ (N×M) = Bᵀ (N×K) · Aᵀ (K×M), all column-major: see the module text.
        gemm(handle, op_n, op_n, N, M, K, alpha.ctypes.data, b, N, a, K, beta.ctypes.data, c, N)

    name = "cublasSgemm" if dtype == "float32" else "cublasDgemm"
    return launch, f"cuBLAS {name} through CuPy {cupy.__version__} (default math, no TF32)"


def _torch_gemm(a: int, b: int, c: int, M: int, N: int, K: int, dtype: str) -> tuple[Callable[[], None], str]:
    import torch

    if not torch.cuda.is_available():
        raise ImportError(f"torch {torch.__version__} was built without CUDA")
    torch.backends.cuda.matmul.allow_tf32 = False
    view: dict[str, Any] = {
        name: torch.as_tensor(_DeviceArray(pointer, shape, dtype), device="cuda")
        for name, pointer, shape in (("a", a, (M, K)), ("b", b, (K, N)), ("c", c, (M, N)))
    }

    def launch() -> None:
        torch.matmul(view["a"], view["b"], out=view["c"])

    return launch, f"cuBLAS through torch {torch.__version__} matmul (TF32 off)"


def gemm_launcher(a: int, b: int, c: int, M: int, N: int, K: int, dtype: str) -> tuple[Callable[[], None], str]:
    """A callable queuing C = A·B through cuBLAS on the default stream, and a description of the library."""
    if dtype not in ("float32", "float64"):
        raise BaselineUnavailable(f"cuBLAS has no {dtype} GEMM (its integer GEMM takes int8 inputs only)")
    failures = []
    for make in (_cupy_gemm, _torch_gemm):
        try:
            return make(a, b, c, M, N, K, dtype)
        except (ImportError, AttributeError) as exc:  # missing, or a version without these bindings
            failures.append(str(exc))
    raise BaselineUnavailable(f"neither CuPy nor torch can run cuBLAS here ({'; '.join(failures)})")
