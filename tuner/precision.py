"""The precisions a kernel multiplies in: how each dtype is stored, what it accumulates in, and its rounding.

A dtype names the inputs' storage and the arithmetic together. ``tf32`` is float32 storage multiplied with TF32's
10 explicit significand bits on tensor cores; ``bfloat16`` and ``float16`` are 16-bit storage multiplied on tensor
cores; ``float8_e4m3`` and ``float8_e5m2`` are Hopper's 8-bit formats (ml_dtypes' ``float8_e4m3fn``, finite with
no infinities, and ``float8_e5m2``); ``float8_e4m3_e5m2`` multiplies e4m3 A by e5m2 B (as FP8 training's
backward pass multiplies activations by gradients). The tensor-core dtypes accumulate in float32 (the family's
accumulator) and write their output in it, except ``X_out_Y``, which multiplies as X does and rounds the output
once to Y (``bfloat16_out_bfloat16``, as torch.matmul on bfloat16 writes; ``float8_e4m3_out_bfloat16``, as FP8
training's GEMMs write). The other dtypes accumulate and write in their own type. Inputs are drawn so that they
are exact in the dtype (rounded to it once, on the host), so the float64 product of the stored values is the exact
answer the kernel approximates.

This module imports nothing of the project.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np


@dataclass(frozen=True)
class Precision:
    dtype: str
    storage: str
    """The element type in memory, as numpy (with ml_dtypes for bfloat16) names it."""
    ctype: str
    """The element type in a kernel's source."""
    accumulator: str
    """The dtype products are summed in."""
    significand_bits: int | None
    """Bits of the multiplication's significand, the implicit one included; None for integers."""
    tensor_cores: bool
    """Multiplied on tensor cores only (there is no CUDA-core arithmetic of this precision to tune)."""
    bytes: int
    second_operand: str | None = None
    """The dtype of the second operand (B) where it is not this one (a mixed product: A in this storage)."""
    output: str = ""
    """The dtype the output is written in (rounded to nearest even from the accumulator); empty: the accumulator."""

    def __post_init__(self) -> None:
        if not self.output:
            object.__setattr__(self, "output", self.accumulator)

    @property
    def unit_roundoff(self) -> float:
        """u = 2^-p: half the gap between 1 and the next number of the precision (0 for integers)."""
        return 0.0 if self.significand_bits is None else 2.0 ** -self.significand_bits


PRECISIONS: dict[str, Precision] = {p.dtype: p for p in (
    Precision("float32", "float32", "float", "float32", 24, False, 4),
    Precision("float64", "float64", "double", "float64", 53, False, 8),
    Precision("int32", "int32", "int", "int32", None, False, 4),
    Precision("tf32", "float32", "float", "float32", 11, True, 4),
    Precision("bfloat16", "bfloat16", "__nv_bfloat16", "float32", 8, True, 2),
    Precision("float16", "float16", "__half", "float32", 11, True, 2),
    Precision("float8_e4m3", "float8_e4m3fn", "__nv_fp8_e4m3", "float32", 4, True, 1),
    Precision("float8_e5m2", "float8_e5m2", "__nv_fp8_e5m2", "float32", 3, True, 1),
    Precision("float8_e4m3_e5m2", "float8_e4m3fn", "__nv_fp8_e4m3", "float32", 3, True, 1, "float8_e5m2"),
    Precision("bfloat16_out_bfloat16", "bfloat16", "__nv_bfloat16", "float32", 8, True, 2, output="bfloat16"),
    Precision("float16_out_float16", "float16", "__half", "float32", 11, True, 2, output="float16"),
    Precision("float8_e4m3_out_bfloat16", "float8_e4m3fn", "__nv_fp8_e4m3", "float32", 4, True, 1,
              output="bfloat16"),
    Precision("float8_e5m2_out_bfloat16", "float8_e5m2", "__nv_fp8_e5m2", "float32", 3, True, 1, output="bfloat16"),
    Precision("float8_e4m3_e5m2_out_bfloat16", "float8_e4m3fn", "__nv_fp8_e4m3", "float32", 3, True, 1,
              "float8_e5m2", output="bfloat16"),
)}
"""Every dtype, in the order that seeds each dtype's inputs (new dtypes go last, so earlier inputs stay the same)."""


OUTPUT_SEPARATOR = "_out_"


def input_dtype(dtype: str) -> str:
    """The dtype of the inputs and their arithmetic: ``X`` of ``X_out_Y``, the dtype itself otherwise."""
    return dtype.split(OUTPUT_SEPARATOR)[0]


def rounds_output(dtype: str) -> bool:
    """Whether the output is written in a narrower dtype than the accumulator (rounded once, after the sums)."""
    precision = PRECISIONS[dtype]
    return precision.output != precision.accumulator


ML_DTYPES_STORAGE = ("bfloat16", "float8_e4m3fn", "float8_e5m2")
"""Storage types numpy lacks, taken from ml_dtypes."""


@cache
def numpy_dtype(dtype: str) -> np.dtype:
    """The numpy type of a dtype's elements in memory (bfloat16 and the FP8 types from ml_dtypes)."""
    storage = PRECISIONS[dtype].storage
    if storage in ML_DTYPES_STORAGE:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, storage))
    return np.dtype(storage)


def round_to(values: np.ndarray, dtype: str) -> np.ndarray:
    """``values`` (float64) rounded to the nearest number of the dtype, in its storage type (ties to even)."""
    stored = values.astype(numpy_dtype(dtype))
    if dtype != "tf32":
        return stored
    bits = stored.view(np.uint32)
    dropped = 13  # float32 keeps 23 explicit significand bits, TF32 10
    half, odd = np.uint32(1 << (dropped - 1)), (bits >> np.uint32(dropped)) & np.uint32(1)
    rounded = (bits + (half - np.uint32(1)) + odd) & ~np.uint32((1 << dropped) - 1)
    return rounded.view(np.float32)


def raw_bytes(values: np.ndarray) -> np.ndarray:
    """The array's memory as plain bytes, for copies to a device (ml_dtypes' types are not buffer-exportable)."""
    return np.ascontiguousarray(values).view(np.uint8)
