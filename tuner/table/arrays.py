"""The caller's GPU arrays as the table's matmul sees them: address, shape, strides in elements, element type and
device, read from a PyTorch tensor's own attributes, a ``__cuda_array_interface__`` (CuPy, Numba) or a DLPack
capsule (anything else). Nothing is copied; the caller's library allocates results and runs the vendor fallback."""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

TORCH_STORAGE = {"torch.bfloat16": "bfloat16", "torch.float16": "float16", "torch.float32": "float32",
                 "torch.float64": "float64", "torch.float8_e4m3fn": "float8_e4m3fn",
                 "torch.float8_e5m2": "float8_e5m2"}
TYPESTR_STORAGE = {"<f2": "float16", "<f4": "float32", "<f8": "float64"}
DLPACK_STORAGE = {(2, 16): "float16", (2, 32): "float32", (2, 64): "float64", (4, 16): "bfloat16",
                  (10, 8): "float8_e4m3fn", (12, 8): "float8_e5m2"}
"""(DLDataTypeCode, bits) → storage: kDLFloat 2, kDLBfloat 4, kDLFloat8_e4m3fn 10, kDLFloat8_e5m2 12."""
STORAGE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "float8_e4m3fn": 1, "float8_e5m2": 1}
DLPACK_CUDA = 2


class ArrayRefused(TypeError):
    """An argument the table's matmul cannot take (the message says which and why)."""


@dataclass(frozen=True)
class DeviceArray:
    pointer: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    """Elements between neighbours along each dimension."""
    storage: str
    device: int
    library: str
    """``torch``, ``cupy`` or ``other``: who allocates the result and runs the fallback."""

    def row_major(self) -> bool:
        return len(self.shape) == 2 and (self.shape[0] <= 1 or self.strides[0] == self.shape[1]) and (
            self.shape[1] <= 1 or self.strides[1] == 1)

    def column_major(self) -> bool:
        """Stored as its transpose, row-major (a K×N view of an N×K matrix)."""
        return len(self.shape) == 2 and (self.shape[1] <= 1 or self.strides[1] == self.shape[0]) and (
            self.shape[0] <= 1 or self.strides[0] == 1)


def view(array: Any, name: str) -> DeviceArray:
    """``array`` as a DeviceArray; ArrayRefused naming ``name`` where it is not a GPU array of a known type."""
    if type(array).__module__.startswith("torch") and hasattr(array, "data_ptr"):
        return _torch_view(array, name)
    interface = getattr(array, "__cuda_array_interface__", None)
    if isinstance(interface, dict):
        library = "cupy" if type(array).__module__.startswith("cupy") else "other"
        return _interface_view(interface, name, library, getattr(getattr(array, "device", None), "id", None))
    if hasattr(array, "__dlpack__"):
        return _dlpack_view(array, name)
    raise ArrayRefused(f"{name}: a {type(array).__name__} is not a GPU array (expected a PyTorch tensor, a CuPy "
                       f"array, or an object with __cuda_array_interface__ or __dlpack__)")


def _torch_view(tensor: Any, name: str) -> DeviceArray:
    if not tensor.is_cuda:
        raise ArrayRefused(f"{name}: the tensor lives on {tensor.device}, not on a CUDA device")
    storage = TORCH_STORAGE.get(str(tensor.dtype))
    if storage is None:
        raise ArrayRefused(f"{name}: the element type {tensor.dtype} has no kernel in a table")
    return DeviceArray(tensor.data_ptr(), tuple(tensor.shape), tuple(tensor.stride()), storage,
                       tensor.device.index or 0, "torch")


def _interface_view(interface: dict[str, Any], name: str, library: str, device: int | None) -> DeviceArray:
    storage = TYPESTR_STORAGE.get(str(interface.get("typestr")))
    if storage is None:
        raise ArrayRefused(f"{name}: the element type {interface.get('typestr')!r} has no kernel in a table")
    shape = tuple(int(s) for s in interface["shape"])
    size = STORAGE_BYTES[storage]
    strides = interface.get("strides")
    if strides is None:
        in_elements = contiguous_strides(shape)
    else:
        if any(int(s) % size for s in strides):
            raise ArrayRefused(f"{name}: strides {tuple(strides)} are not whole elements")
        in_elements = tuple(int(s) // size for s in strides)
    pointer = int(interface["data"][0])
    return DeviceArray(pointer, shape, in_elements, storage,
                       device if device is not None else pointer_device(pointer), library)


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


def _dlpack_view(array: Any, name: str) -> DeviceArray:
    """The DLTensor a capsule holds; the capsule stays unconsumed, so that its destructor frees what it owns."""
    capsule = array.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    tensor = _DLTensor.from_address(get(capsule, b"dltensor"))
    if tensor.device_type != DLPACK_CUDA:
        raise ArrayRefused(f"{name}: DLPack device type {tensor.device_type} is not CUDA ({DLPACK_CUDA})")
    storage = DLPACK_STORAGE.get((tensor.code, tensor.bits))
    if storage is None or tensor.lanes != 1:
        raise ArrayRefused(f"{name}: DLPack type code {tensor.code}, {tensor.bits} bits has no kernel in a table")
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    strides = (tuple(tensor.strides[i] for i in range(tensor.ndim)) if tensor.strides
               else contiguous_strides(shape))
    return DeviceArray(int(tensor.data or 0) + int(tensor.byte_offset), shape, strides, storage, tensor.device_id,
                       "other")


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides, in elements, of an array of ``shape``."""
    return tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))


def pointer_device(pointer: int) -> int:
    """The ordinal of the device a CUDA pointer belongs to (the driver's CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)."""
    from tuner.backends.cuda_driver import pointer_device_ordinal

    return pointer_device_ordinal(pointer)


def is_torch(array: Any) -> bool:
    return type(array).__module__.startswith("torch") and hasattr(array, "data_ptr")


def torch_key(a: Any, b: Any, out: Any) -> tuple[Any, ...]:
    """What a call's plan depends on, read from PyTorch tensors without making views (the cheapest way)."""
    result = None if out is None else (out.shape, out.stride(), out.dtype, out.device)
    return (a.shape, a.stride(), a.dtype, a.device, b.shape, b.stride(), b.dtype, b.device, result)


def view_key(views: tuple[DeviceArray, DeviceArray, DeviceArray | None]) -> tuple[Any, ...]:
    """What a call's plan depends on, from the arrays' views (a, b and out; their addresses left out)."""
    return tuple(None if v is None else (v.shape, v.strides, v.storage, v.device, v.library) for v in views)


def stream_of(library: str, device: int) -> Callable[[], int]:
    """How a call finds the caller's current stream on ``device`` (a CUstream handle): PyTorch's or CuPy's, else
    the default stream."""
    if library == "torch":
        import torch

        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # no Stream object made: a call's cheapest way
        if raw is not None:
            return lambda: int(raw(device))
        return lambda: int(torch.cuda.current_stream(device).cuda_stream)
    if library == "cupy":
        import cupy

        return lambda: int(cupy.cuda.get_current_stream().ptr)
    return lambda: 0


def empty_like_result(a: Any, library: str, rows: int, columns: int, storage: str) -> Any:
    """A new (rows × columns) array of ``storage`` elements on ``a``'s device, made by ``a``'s library."""
    if library == "torch":
        import torch

        return torch.empty((rows, columns), dtype=getattr(torch, storage), device=a.device)
    if library == "cupy":
        import cupy

        with cupy.cuda.Device(a.device.id):
            return cupy.empty((rows, columns), dtype=storage)
    raise ArrayRefused("out: the table allocates results only for PyTorch tensors and CuPy arrays; pass out=")


def vendor_matmul(a: Any, b: Any, out: Any, library: str) -> Any:
    """The caller's own library's GEMM (cuBLAS underneath), for a shape no table kernel takes."""
    if library == "torch":
        import torch

        return torch.matmul(a, b, out=out)
    if library == "cupy":
        import cupy

        return cupy.matmul(a, b, out=out)
    raise ArrayRefused("the table holds no kernel for this call, and only PyTorch and CuPy arrays have a fallback")
