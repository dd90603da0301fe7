"""Runs cuBLASLt's FP8 GEMM (:mod:`tuner.backends.pycuda.cublaslt_fp8`) on small problems in a process of its own,
so that no CUDA context stays in the test process (another process on the GPU reads as load to the measurements
of the tests that follow), and prints one JSON object per case: its error against the float64 product of the
inputs as stored, its description, or why cuBLASLt refused it.

Usage: python -m tests.gpu.cublaslt_fp8_probe M N K A_DTYPE B_DTYPE SCALE_A SCALE_B OUT_DTYPE [...]
(eight arguments per case)."""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np

from tuner.backends.pycuda.cublas import BaselineUnavailable
from tuner.precision import numpy_dtype, raw_bytes, round_to


def run_case(M: int, N: int, K: int, a_dtype: str, b_dtype: str, scale_a: float, scale_b: float,
             out_dtype: str) -> dict[str, Any]:
    """C = scale_a·scale_b·(A·B) through cuBLASLt from inputs exact in their dtypes, A (M×K) and B stored K-major
    (N×K), against the float64 product: the largest error relative to the largest entry."""
    import pycuda.driver as cuda

    from tuner.backends.pycuda.cublaslt_fp8 import fp8_gemm_launcher

    rng = np.random.default_rng(7)
    a = round_to(rng.uniform(-2.0, 2.0, (M, K)), a_dtype)
    b_stored = round_to(rng.uniform(-2.0, 2.0, (N, K)), b_dtype)  # Bᵀ: row n holds column n of B
    out_type = numpy_dtype(out_dtype)
    got = np.empty(M * N * out_type.itemsize, np.uint8)
    buffers = cuda.to_device(raw_bytes(a)), cuda.to_device(raw_bytes(b_stored)), cuda.mem_alloc(got.size)
    try:
        device_a, device_b, device_c = (int(buffer) for buffer in buffers)
        try:
            launch, description = fp8_gemm_launcher(device_a, device_b, device_c, M, N, K, a_dtype, b_dtype, scale_a,
                                                    scale_b, out_dtype)
        except BaselineUnavailable as exc:
            return {"refused": str(exc)}
        cuda.memset_d8(device_c, 0, got.size)
        launch()
        launch()  # a second launch writes the same product over the first (beta 0)
        cuda.Context.synchronize()
        launch.close()
        try:
            launch()
            closed = "launched after close"
        except BaselineUnavailable as exc:
            closed = str(exc)
        cuda.memcpy_dtoh(got, device_c)
    finally:
        for buffer in buffers:
            buffer.free()
    product = got.view(out_type).reshape(M, N).astype(np.float64)
    reference = scale_a * scale_b * (a.astype(np.float64) @ b_stored.astype(np.float64).T)
    error = float(np.max(np.abs(product - reference)) / np.max(np.abs(reference)))
    return {"error": error, "description": description, "finite": bool(np.isfinite(product).all()),
            "after_close": closed}


def main(arguments: list[str]) -> None:
    from tuner.backends.pycuda.device import require_gpu

    require_gpu()
    for start in range(0, len(arguments), 8):
        m, n, k, a_dtype, b_dtype, scale_a, scale_b, out_dtype = arguments[start:start + 8]
        print(json.dumps(run_case(int(m), int(n), int(k), a_dtype, b_dtype, float(scale_a), float(scale_b),
                                  out_dtype)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
