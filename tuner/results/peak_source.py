"""What a run's measured arithmetic peak of a dtype is the rate of, in words: the CPU's cores, the GPU's CUDA cores,
or its tensor cores through ``mma.sync`` or ``wgmma`` (measured by :mod:`tuner.backends.pycuda.tensor_ceilings`).

Ceilings recorded before the instruction was kept name none; they were all measured with ``mma.sync`` (and had
no 8-bit dtype: a float8 run whose environment holds no float8 tensor ceiling has no known peak). On sm_90
that rate is below what the tensor cores reach through ``wgmma``, so a wgmma kernel's share of it can pass 100%
without the ceiling having been measured too low: :func:`short_of_tensor_rate` says where.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from tuner.peaks import MMA_SYNC, WGMMA_DTYPES, rate_dtype, tensor_instruction_default, unit_peaks
from tuner.results.environment import Environment, environments_of


def peak_unit(environment: Environment, dtype: str) -> str | None:
    """Which units (tuner.peaks.UNITS) give the dtype's measured peak: the faster; None where none is known."""
    known = unit_peaks(environment.measured_peaks, dtype)
    return max(known, key=known.__getitem__) if known else None


def tensor_instruction(environment: Environment, dtype: str) -> str:
    """The instruction the dtype's tensor-core ceiling was measured with (where none is recorded: mma.sync, and
    wgmma for the 8-bit dtypes, which have no other)."""
    recorded = environment.ceilings.get("tensor_instructions")
    found = recorded.get(rate_dtype(dtype)) if isinstance(recorded, Mapping) else None
    return str(found) if found else tensor_instruction_default(dtype)


def unit_words(environment: Environment, dtype: str, unit: str, measured: bool = True) -> str:
    """The units of a compute roof, as a label says them: cores (a CPU's), CUDA cores, tensor cores, and for a
    measured tensor roof the instruction that measured it (tensor cores (wgmma))."""
    if environment.on_cpu:
        return "cores"
    if unit == "cuda":
        return "CUDA cores"
    return f"tensor cores ({tensor_instruction(environment, dtype)})" if measured else "tensor cores"


def peak_words(environment: Environment, dtype: str) -> str | None:
    """What the dtype's measured peak is the rate of, as a legend says it (None where no peak is known)."""
    unit = peak_unit(environment, dtype)
    if unit is None:
        return None
    if environment.on_cpu:
        return "its cores' multiply-add rate"
    if unit == "cuda":
        return "its CUDA cores' multiply-add rate"
    return f"its tensor cores' {tensor_instruction(environment, dtype)} rate"


def short_of_tensor_rate(environment: Environment, dtype: str) -> bool:
    """Whether the dtype's peak is the tensor cores' mma.sync rate on a GPU whose tensor cores reach more through
    wgmma, which its ceilings did not measure."""
    capability = str(environment.device.get("compute_capability") or "")
    return (not environment.on_cpu and rate_dtype(dtype) in WGMMA_DTYPES.get(capability, ())
            and peak_unit(environment, dtype) == "tensor" and tensor_instruction(environment, dtype) == MMA_SYNC)


def environment_of(metadata: Mapping[str, Any] | None, metadata_id: Any) -> Environment:
    """The environment ``metadata_id`` names in a run's metadata (an empty one where it names none)."""
    return environments_of(metadata).get(str(metadata_id)) or Environment.from_dict(None)


def peak_columns(environment: Environment, dtype: str) -> dict[str, Any]:
    """A run summary row's ``peak_of`` (what its dtype's peak is the rate of) and ``peak_short`` (the tensor cores'
    mma.sync rate where wgmma reaches more)."""
    return {"peak_of": peak_words(environment, dtype), "peak_short": short_of_tensor_rate(environment, dtype)}


def peaks_text(table: pd.DataFrame) -> str:
    """What each dtype's peak is the rate of: "bfloat16: its tensor cores' wgmma rate; float32: ..."."""
    known = {} if "peak_of" not in table else {
        dtype: words for dtype, words in zip(table["dtype"], table["peak_of"], strict=True) if words}
    if not known:
        return "the higher of its multiply-add rate and, on a GPU, its tensor cores' rate"
    if len(set(known.values())) == 1:
        return next(iter(known.values()))
    return "; ".join(f"{dtype}: {words}" for dtype, words in known.items())
