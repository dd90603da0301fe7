"""TMA descriptors (tensor maps) a family's kernel takes, as the host must encode them before the launch.

A family that copies tiles with the Tensor Memory Accelerator (``cp.async.bulk.tensor``) declares, per buffer, the
box one copy moves and its shared-memory swizzle (:class:`TensorMap`). The measuring process encodes each map on the
device's own buffer with the driver's ``cuTensorMapEncodeTiled`` and passes it by value, as a ``__grid_constant__``
parameter, before the family's arguments (in the order declared). What the driver requires of a map is checked
here first (:func:`tensor_map_fields`), so that a problem the maps cannot describe is refused with a reason that
names the buffer and its row length, instead of the driver's bare ``CUDA_ERROR_INVALID_VALUE``:

- each row's length in bytes (the global stride) a multiple of 16 and below 2^40;
- every size at most 2^32 elements;
- each box size 1 to 256 elements, the innermost one a multiple of 16 bytes and, with a swizzle, at most the
  swizzle's span (16-byte chunks are permuted within it).

This module imports nothing of CUDA; it describes matrices stored row-major, as the project's buffers are.
"""

from __future__ import annotations

from dataclasses import dataclass

from tuner.precision import PRECISIONS

STRIDE_ALIGNMENT = 16
"""Bytes a global stride (a row's length) must be a multiple of."""
STRIDE_LIMIT = 2**40
DIM_LIMIT = 2**32
BOX_LIMIT = 256
SWIZZLES = {0: 0, 32: 1, 64: 2, 128: 3}
"""Swizzle span in bytes → CUtensorMapSwizzle (CU_TENSOR_MAP_SWIZZLE_NONE, _32B, _64B, _128B)."""
DATA_TYPES = {"float16": 6, "float32": 7, "float64": 8, "bfloat16": 9, "float8_e4m3fn": 0, "float8_e5m2": 0}
"""Storage type → CUtensorMapDataType (cuda.h). tf32 is stored as float32 and copied bit for bit; the FP8 types as
bytes (CU_TENSOR_MAP_DATA_TYPE_UINT8)."""


class TensorMapRefused(ValueError):
    """The buffer cannot be described by a tensor map for this problem (the message says why)."""


@dataclass(frozen=True)
class TensorMap:
    """A tensor map of one buffer of a family's kernel: the box a copy moves and its shared-memory swizzle."""

    buffer: str
    """The name of the family's Buffer (a row-major matrix)."""
    box: tuple[int, int]
    """Elements of one copy: along a row (contiguous), then rows."""
    swizzle: int = 128
    """Bytes over which the copy permutes 16-byte chunks in shared memory (0, 32, 64 or 128)."""


@dataclass(frozen=True)
class TensorMapFields:
    """The arguments of ``cuTensorMapEncodeTiled`` besides the map and the address, innermost dimension first."""

    data_type: int
    dims: tuple[int, int]
    strides: tuple[int]
    """Bytes between rows (the driver takes rank - 1 strides)."""
    box: tuple[int, int]
    element_strides: tuple[int, int]
    swizzle: int


def tensor_map_fields(spec: TensorMap, shape: tuple[int, ...], dtype: str) -> TensorMapFields:
    """The encoding of ``spec`` over a row-major ``shape`` (rows, columns) of ``dtype`` elements (the buffer's own
    dtype: float32 for an accumulator); TensorMapRefused where the driver would refuse it."""
    if len(shape) != 2:
        raise TensorMapRefused(f"buffer {spec.buffer} has {len(shape)} dimensions; its tensor map describes a matrix")
    storage = PRECISIONS[dtype].storage
    if storage not in DATA_TYPES:
        raise TensorMapRefused(f"buffer {spec.buffer}: tensor maps describe no {dtype} elements")
    if spec.swizzle not in SWIZZLES:
        raise TensorMapRefused(f"buffer {spec.buffer}: a swizzle of {spec.swizzle} bytes is not one of "
                               f"{', '.join(map(str, SWIZZLES))}")
    size = PRECISIONS[dtype].bytes
    rows, columns = shape
    row_bytes = columns * size
    described = f"buffer {spec.buffer} ({rows}×{columns} {dtype})"
    if row_bytes % STRIDE_ALIGNMENT:
        whole = STRIDE_ALIGNMENT // size
        raise TensorMapRefused(
            f"{described} has rows of {row_bytes} bytes, not a multiple of the {STRIDE_ALIGNMENT} bytes a TMA "
            f"tensor map needs between rows (its row length must be a multiple of {whole} {dtype} elements)")
    if row_bytes >= STRIDE_LIMIT or max(rows, columns) > DIM_LIMIT:
        raise TensorMapRefused(f"{described} is beyond what a tensor map describes (sizes up to 2^32 elements, "
                               f"rows under 2^40 bytes)")
    inner, outer = spec.box
    if not (1 <= inner <= BOX_LIMIT and 1 <= outer <= BOX_LIMIT):
        raise TensorMapRefused(f"buffer {spec.buffer}: a box of {inner}×{outer} elements; each side must be 1 to "
                               f"{BOX_LIMIT}")
    if (inner * size) % STRIDE_ALIGNMENT or (spec.swizzle and inner * size > spec.swizzle):
        raise TensorMapRefused(
            f"buffer {spec.buffer}: a box row of {inner * size} bytes must be a multiple of {STRIDE_ALIGNMENT} bytes "
            f"and, with a {spec.swizzle}-byte swizzle, at most {spec.swizzle}")
    return TensorMapFields(DATA_TYPES[storage], (columns, rows), (row_bytes,), (inner, outer), (1, 1),
                           SWIZZLES[spec.swizzle])
