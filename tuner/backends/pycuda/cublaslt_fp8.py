"""cuBLASLt's FP8 GEMM: e4m3 and e5m2 inputs with per-tensor scales, float32 accumulation and a float32 or
bfloat16 output, the vendor baseline of the FP8 kernels (Hopper; cuBLASLt has no FP8 before sm_89).

The buffers: A is M×K row-major, B is stored K-major (N×K row-major: Bᵀ), C is M×N row-major, and
C = scale_a·scale_b·(A·B). cuBLASLt's FP8 kernels take one layout, "TN": the first operand transposed, the second
not, both K-major. In its column-major terms the product is Cᵀ (N×M, ld N) = op(X)·Y with X the B buffer read as
K×N (ld K), op(X) = Xᵀ, and Y the A buffer read as K×M (ld K): m = N, n = M, k = K. The scales are device pointers
to one float32 each (CUBLASLT_MATMUL_DESC_A_SCALE_POINTER and B_SCALE_POINTER name cuBLASLt's operands: the
scale of the B buffer and that of the A buffer), alpha is 1 and beta 0. FP8 asks for CUBLAS_COMPUTE_32F and
float32 alpha and beta; C is D's type, float32 or bfloat16 (cuBLASLt wants C in another type only where D is
FP8, which is not written here). Fast accumulation (CUBLASLT_MATMUL_DESC_FAST_ACCUM) is set off, its default:
the tensor cores' partial sums are promoted to float32 periodically rather than accumulated in the tensor cores'
narrower sums throughout.

cuBLASLt's table of FP8 types pairs e4m3 with e4m3 or with e5m2, either way round; it has no e5m2 × e5m2 GEMM,
which is refused here before anything is made.
"""

from __future__ import annotations

import ctypes
import weakref
from typing import Any

from tuner.backends.pycuda.cublas import BaselineUnavailable
from tuner.backends.pycuda.cublaslt import (
    COMPUTE_32F,
    CUDA_R_8F_E4M3,
    CUDA_R_8F_E5M2,
    CUDA_R_16BF,
    CUDA_R_32F,
    DESC_A_SCALE_POINTER,
    DESC_B_SCALE_POINTER,
    DESC_FAST_ACCUM,
    OP_N,
    OP_T,
    LtAlgorithm,
    LtGemm,
    LtPlan,
)

FP8_TYPES = {"float8_e4m3": (CUDA_R_8F_E4M3, "CUDA_R_8F_E4M3"), "float8_e5m2": (CUDA_R_8F_E5M2, "CUDA_R_8F_E5M2")}
"""The inputs' dtypes and their cudaDataType (library_types.h), with its name."""
OUTPUT_TYPES = {"float32": (CUDA_R_32F, "CUDA_R_32F"), "bfloat16": (CUDA_R_16BF, "CUDA_R_16BF")}
"""The outputs (C and D) this GEMM writes."""
NO_GEMM = {("float8_e5m2", "float8_e5m2")}
"""Input pairs cuBLASLt has no FP8 GEMM of."""
ALIGNMENT = " (cuBLASLt's FP8 kernels ask for 16-byte-aligned pointers and leading dimensions)"
SCALE_SPACING = 16
"""Bytes between the two scales in their device buffer."""
FAST_ACCUMULATION = 0
"""CUBLASLT_MATMUL_DESC_FAST_ACCUM (an int8_t): 0, partial sums promoted to float32 periodically."""


def fp8_plan(M: int, N: int, K: int, a_dtype: str, b_dtype: str, out_dtype: str = "float32") -> LtPlan:
    """The cublasLtMatmul that computes C = A·B from A (M×K row-major) and B stored K-major (N×K row-major), in
    cuBLASLt's "TN" layout (see the module text); BaselineUnavailable for types it has no FP8 GEMM of."""
    for operand, dtype in (("A", a_dtype), ("B", b_dtype)):
        if dtype not in FP8_TYPES:
            raise BaselineUnavailable(f"cuBLASLt's FP8 GEMM takes {' or '.join(FP8_TYPES)} inputs, and {operand} is "
                                      f"{dtype}")
    if out_dtype not in OUTPUT_TYPES:
        raise BaselineUnavailable(f"cuBLASLt's FP8 GEMM is run here into {' or '.join(OUTPUT_TYPES)}, not "
                                  f"{out_dtype}")
    if (a_dtype, b_dtype) in NO_GEMM:
        raise BaselineUnavailable(f"cuBLASLt has no FP8 GEMM of {a_dtype} × {b_dtype} on Hopper: its FP8 types pair "
                                  f"e4m3 with e4m3 or with e5m2, either way round, never e5m2 with e5m2")
    return LtPlan(transa=OP_T, transb=OP_N, first=(FP8_TYPES[b_dtype][0], K, N), second=(FP8_TYPES[a_dtype][0], K, M),
                  output=(OUTPUT_TYPES[out_dtype][0], N, M), compute=COMPUTE_32F, scale=CUDA_R_32F,
                  compute_name="CUBLAS_COMPUTE_32F")


def scale_attributes(scale_a_pointer: int, scale_b_pointer: int) -> tuple[tuple[int, Any], ...]:
    """The matmul descriptor's scale pointers and accumulation mode: cuBLASLt's A is the B buffer and its B the A
    buffer, so B's scale goes to A_SCALE_POINTER and A's to B_SCALE_POINTER; fast accumulation off."""
    return ((DESC_A_SCALE_POINTER, ctypes.c_void_p(scale_b_pointer)),
            (DESC_B_SCALE_POINTER, ctypes.c_void_p(scale_a_pointer)),
            (DESC_FAST_ACCUM, ctypes.c_int8(FAST_ACCUMULATION)))


class LtFp8Gemm(LtGemm):
    """C = scale_a·scale_b·(A·B) on device buffers through cuBLASLt's FP8 GEMM: the heuristic's first ``count``
    algorithms, each a launch (as :class:`LtGemm`). The scales live in a device buffer of this object's; call
    :meth:`close` when done."""

    def __init__(self, a: int, b: int, c: int, M: int, N: int, K: int, a_dtype: str, b_dtype: str, scale_a: float,
                 scale_b: float, out_dtype: str = "float32", count: int = 1):
        lt = fp8_plan(M, N, K, a_dtype, b_dtype, out_dtype)
        import numpy as np
        import pycuda.driver as cuda

        # Each scale on a 16-byte boundary of its own, as cuBLASLt asks of the pointers it reads.
        self.scales: Any = cuda.to_device(np.array([scale_a, 0, 0, 0, scale_b, 0, 0, 0], np.float32))
        base = int(self.scales)
        try:
            self._build(lt, (b, a, c), count, scale_attributes(base, base + SCALE_SPACING))
        except BaselineUnavailable as exc:
            self._free_scales()
            shape = ALIGNMENT if "Heuristic" in str(exc) else ""  # the heuristic, not the library, refused the shape
            raise BaselineUnavailable(f"{exc} for the FP8 GEMM {a_dtype} × {b_dtype} → {out_dtype} of {M}×{N}×{K}"
                                      f"{shape}") from None
        self.types = (f"A {a_dtype} ({FP8_TYPES[a_dtype][1]}) M×K row-major, B {b_dtype} ({FP8_TYPES[b_dtype][1]}) "
                      f"stored K-major (N×K), per-tensor scales {scale_a:g} and {scale_b:g}; C and D "
                      f"{OUTPUT_TYPES[out_dtype][1]}")

    def describe(self, algorithm: LtAlgorithm) -> str:
        return (f"cuBLASLt cublasLtMatmul FP8, TN ({self.types}; {self.compute_name}, fast accumulation off), "
                f"{algorithm.describe()} of the {len(self.algorithms)} algorithms its heuristic returned for "
                f"{self.asked} asked")

    def _free_scales(self) -> None:
        if self.scales is not None:
            self.scales.free()
            self.scales = None

    def close(self) -> None:
        super().close()
        self._free_scales()


class Fp8Launch:
    """The heuristic's first algorithm as a callable queuing the product on the default stream. It owns the
    cuBLASLt descriptors, the workspace and the scales, freed by :meth:`close` or when it is collected."""

    def __init__(self, gemm: LtFp8Gemm):
        if not gemm.algorithms:
            gemm.close()
            raise BaselineUnavailable(f"cuBLASLt's heuristic returned no FP8 algorithm ({gemm.types})")
        self._launch = gemm.launcher(gemm.algorithms[0])
        self.description = gemm.describe(gemm.algorithms[0])
        self._release = weakref.finalize(self, gemm.close)
        self._release.atexit = False  # at exit the context may be gone before the collector runs

    def __call__(self) -> None:
        if not self._release.alive:
            raise BaselineUnavailable("this cuBLASLt FP8 GEMM was closed")
        self._launch()

    def close(self) -> None:
        self._release()


def fp8_gemm_launcher(a: int, b: int, c: int, M: int, N: int, K: int, a_dtype: str, b_dtype: str, scale_a: float,
                      scale_b: float, out_dtype: str = "float32") -> tuple[Fp8Launch, str]:
    """A callable queuing C = scale_a·scale_b·(A·B) through cuBLASLt's FP8 GEMM on the default stream (the first
    algorithm of its heuristic: cuBLASLt as a user gets it), and a description naming the routine, the types and the
    compute type. A is M×K row-major, B is stored K-major (N×K row-major), C is M×N row-major in ``out_dtype``
    (float32 or bfloat16). BaselineUnavailable where cuBLASLt cannot run it (e5m2 × e5m2, an unaligned shape, no
    library)."""
    launch = Fp8Launch(LtFp8Gemm(a, b, c, M, N, K, a_dtype, b_dtype, scale_a, scale_b, out_dtype))
    return launch, launch.description
