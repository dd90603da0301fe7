"""The names of a device's arithmetic peaks, and which of them bounds a kernel of a dtype.

A device has a peak per dtype for its CUDA cores (``float32_gflops``: multiply-add chains) and, for the dtypes its
tensor cores multiply, one for them (``bfloat16_tensor_gflops``: ``mma.sync`` chains, on sm_90 or ``wgmma``
where it is faster: :mod:`tuner.backends.pycuda.tensor_ceilings`; the 8-bit dtypes' ``float8_e4m3_tensor_gflops``
and ``float8_e5m2_tensor_gflops`` on sm_90 from wgmma alone, unknown elsewhere). A kernel of a dtype is
bounded by the higher of the two: a float64 kernel on the CUDA cores reaches at most half of what the FP64
tensor cores do, and says so as a share of the device's float64 peak.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tuner.precision import input_dtype

TENSOR_DTYPES = ("float64", "tf32", "bfloat16", "float16")
"""The dtypes an sm_80 or later GPU's tensor cores multiply (mma.sync)."""
FP8_DTYPES = ("float8_e4m3", "float8_e5m2")
"""The 8-bit dtypes, whose tensor-core ceiling is measured with wgmma alone (where the GPU has it): they have no
mma.sync ceiling."""
ALL_TENSOR_DTYPES = (*TENSOR_DTYPES, *FP8_DTYPES)
"""Every dtype a GPU may have a tensor-core ceiling of, in the order tables list them."""
UNITS = {"cuda": "CUDA-core multiply-add", "tensor": "tensor-core (mma.sync or wgmma)"}
MMA_SYNC = "mma.sync"
"""The instruction every sm_80 or later GPU's tensor ceilings are measured with (a ceiling of a 16-, 32- or 64-bit
dtype that names none: this one)."""
WGMMA = "wgmma"
"""The instruction sm_90's tensor cores reach their full rate with, and the only one its 8-bit dtypes are measured
with."""
WGMMA_DTYPES = {"9.0": ("tf32", "bfloat16", "float16", *FP8_DTYPES)}
"""Per compute capability whose tensor cores reach their full rate only through wgmma, the dtypes wgmma multiplies
(:mod:`tuner.backends.pycuda.tensor_ceilings` measures them)."""
LEVEL_KEYS = {"l2": "l2_bandwidth_gbs", "l1": "l1_bandwidth_gbs", "shared": "shared_bandwidth_gbs"}
"""The bandwidth peaks of the memory levels above DRAM (whose peak is ``bandwidth_gbs``), by level."""
LEVEL_LABELS = {"l2_bandwidth_gbs": "L2 bandwidth", "l1_bandwidth_gbs": "L1 bandwidth (global loads, hits)",
                "shared_bandwidth_gbs": "shared-memory bandwidth"}


RATE_OF = {"float8_e4m3_e5m2": "float8_e4m3"}
"""Dtypes whose peak is another's: a mixed e4m3 × e5m2 product runs at Hopper's one FP8 rate."""


def rate_dtype(dtype: str) -> str:
    """The dtype whose peak bounds this one's: its own, its inputs' where it writes a narrower output (the output's
    type does not change the multiplication's rate), or RATE_OF's."""
    inputs = input_dtype(dtype)
    return RATE_OF.get(inputs, inputs)


def key(dtype: str, unit: str = "cuda") -> str:
    """The peak's name: ``float32_gflops`` (CUDA cores), ``float64_tensor_gflops`` (tensor cores)."""
    dtype = rate_dtype(dtype)
    return f"{dtype}_gflops" if unit == "cuda" else f"{dtype}_tensor_gflops"


def tensor_dtypes(compute_capability: str) -> tuple[str, ...]:
    """The dtypes whose tensor-core ceiling a GPU of this compute capability measures: the mma.sync ones, and the
    8-bit ones where it has wgmma."""
    return (*TENSOR_DTYPES, *(d for d in WGMMA_DTYPES.get(compute_capability, ()) if d not in TENSOR_DTYPES))


def tensor_instruction_default(dtype: str) -> str:
    """The instruction a dtype's tensor ceiling was measured with where the ceilings name none: mma.sync (ceilings
    recorded before the instruction was kept were all mma.sync's), wgmma for the 8-bit dtypes, which have no other."""
    return WGMMA if rate_dtype(dtype) in FP8_DTYPES else MMA_SYNC


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
