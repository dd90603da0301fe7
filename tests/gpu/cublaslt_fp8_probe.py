"""Runs cuBLASLt's FP8 GEMM (:mod:`tuner.backends.pycuda.cublaslt_fp8`) on small problems in a process of its own,
so that no CUDA context stays in the test process (another process on the GPU reads as load to the measurements
of the tests that follow), and prints one JSON object per case: its error against the float64 product of the
inputs as stored, its description, or why cuBLASLt refused it; for the first case also the error of each of the
heuristic's first RANKED algorithms.

Usage: python -m tests.gpu.cublaslt_fp8_probe M N K A_DTYPE B_DTYPE SCALE_A SCALE_B OUT_DTYPE [...]
(eight arguments per case)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from tuner.backends.pycuda.cublas import BaselineUnavailable
from tuner.precision import numpy_dtype, raw_bytes, round_to

RANKED = 4
"""Algorithms of the heuristic each run on the first case (cuBLASLt's own autotuning, as the rivals time it)."""


def _inputs(M: int, N: int, K: int, a_dtype: str, b_dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """A (M×K) and B stored K-major (N×K: row n holds column n of B), exact in their dtypes."""
    rng = np.random.default_rng(7)
    return round_to(rng.uniform(-2.0, 2.0, (M, K)), a_dtype), round_to(rng.uniform(-2.0, 2.0, (N, K)), b_dtype)


def _error(got: np.ndarray, out_dtype: str, a: np.ndarray, b_stored: np.ndarray, scale: float) -> float:
    """The largest error of the product read back against the float64 one, relative to its largest entry (1 for an
    output that is not finite)."""
    product = got.view(numpy_dtype(out_dtype)).reshape(a.shape[0], b_stored.shape[0]).astype(np.float64)
    if not np.isfinite(product).all():
        return 1.0
    reference = scale * (a.astype(np.float64) @ b_stored.astype(np.float64).T)
    return float(np.max(np.abs(product - reference)) / np.max(np.abs(reference)))


def run_case(M: int, N: int, K: int, a_dtype: str, b_dtype: str, scale_a: float, scale_b: float,
             out_dtype: str, ranked: int = 0) -> dict[str, Any]:
    """C = scale_a·scale_b·(A·B) through cuBLASLt's FP8 GEMM as a user gets it (and, where ``ranked``, through each
    of the heuristic's first ``ranked`` algorithms), with the errors against the float64 product."""
    import pycuda.driver as cuda

    from tuner.backends.pycuda.cublaslt_fp8 import LtFp8Gemm, fp8_gemm_launcher

    a, b_stored = _inputs(M, N, K, a_dtype, b_dtype)
    got = np.empty(M * N * numpy_dtype(out_dtype).itemsize, np.uint8)
    buffers = cuda.to_device(raw_bytes(a)), cuda.to_device(raw_bytes(b_stored)), cuda.mem_alloc(got.size)
    pointers = int(buffers[0]), int(buffers[1]), int(buffers[2])

    def error_of(launch: Callable[[], None]) -> float:
        cuda.memset_d8(pointers[2], 0, got.size)
        launch()
        launch()  # a second launch writes the same product over the first (beta 0)
        cuda.Context.synchronize()
        cuda.memcpy_dtoh(got, pointers[2])
        return _error(got, out_dtype, a, b_stored, scale_a * scale_b)

    try:
        try:
            launch, description = fp8_gemm_launcher(*pointers, M, N, K, a_dtype, b_dtype, scale_a, scale_b,
                                                    out_dtype)
        except BaselineUnavailable as exc:
            return {"refused": str(exc)}
        found: dict[str, Any] = {"description": description, "error": error_of(launch)}
        launch.close()
        try:
            launch()
            found["after_close"] = "launched after close"
        except BaselineUnavailable as exc:
            found["after_close"] = str(exc)
        if ranked:
            gemm = LtFp8Gemm(*pointers, M, N, K, a_dtype, b_dtype, scale_a, scale_b, out_dtype, count=ranked)
            try:
                found["ranked"] = [error_of(gemm.launcher(algorithm)) for algorithm in gemm.algorithms]
            finally:
                gemm.close()
    finally:
        for buffer in buffers:
            buffer.free()
    return found


def main(arguments: list[str]) -> None:
    from tuner.backends.pycuda.device import require_gpu

    require_gpu()
    for start in range(0, len(arguments), 8):
        m, n, k, a_dtype, b_dtype, scale_a, scale_b, out_dtype = arguments[start:start + 8]
        print(json.dumps(run_case(int(m), int(n), int(k), a_dtype, b_dtype, float(scale_a), float(scale_b),
                                  out_dtype, RANKED if start == 0 else 0)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
