"""The names of a device's arithmetic peaks, and which of them bounds a kernel of a dtype.

A device has a peak per dtype for its CUDA cores (``float32_gflops``: multiply-add chains) and, for the dtypes its
tensor cores multiply, one for them (``bfloat16_tensor_gflops``: ``mma.sync`` chains, on sm_90 or ``wgmma``
where it is faster: :mod:`tuner.backends.pycuda.tensor_ceilings`). A kernel of a dtype is
bounded by the higher of the two: a float64 kernel on the CUDA cores reaches at most half of what the FP64
tensor cores do, and says so as a share of the device's float64 peak.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TENSOR_DTYPES = ("float64", "tf32", "bfloat16", "float16")
"""The dtypes an sm_80 or later GPU's tensor cores multiply (mma.sync)."""
UNITS = {"cuda": "CUDA-core multiply-add", "tensor": "tensor-core (mma.sync or wgmma)"}
MMA_SYNC = "mma.sync"
"""The instruction every sm_80 or later GPU's tensor ceilings are measured with (a ceiling names none: this one)."""
WGMMA_DTYPES = {"9.0": ("tf32", "bfloat16", "float16")}
"""Per compute capability whose tensor cores reach their full rate only through wgmma, the dtypes wgmma multiplies
(:mod:`tuner.backends.pycuda.tensor_ceilings` measures them)."""
LEVEL_KEYS = {"l2": "l2_bandwidth_gbs", "l1": "l1_bandwidth_gbs", "shared": "shared_bandwidth_gbs"}
"""The bandwidth peaks of the memory levels above DRAM (whose peak is ``bandwidth_gbs``), by level."""
LEVEL_LABELS = {"l2_bandwidth_gbs": "L2 bandwidth", "l1_bandwidth_gbs": "L1 bandwidth (global loads, hits)",
                "shared_bandwidth_gbs": "shared-memory bandwidth"}


def key(dtype: str, unit: str = "cuda") -> str:
    """The peak's name: ``float32_gflops`` (CUDA cores), ``float64_tensor_gflops`` (tensor cores)."""
    return f"{dtype}_gflops" if unit == "cuda" else f"{dtype}_tensor_gflops"


def _positive(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def unit_peaks(peaks: Mapping[str, Any], dtype: str) -> dict[str, float]:
    """The dtype's known peaks by unit (``cuda``, ``tensor``), GFLOP/s."""
    found = {unit: _positive(peaks.get(key(dtype, unit))) for unit in UNITS}
    return {unit: value for unit, value in found.items() if value is not None}


def compute_peak(peaks: Mapping[str, Any], dtype: str) -> float | None:
    """The highest arithmetic rate the device reaches in the dtype (None where none is known)."""
    known = unit_peaks(peaks, dtype)
    return max(known.values()) if known else None
