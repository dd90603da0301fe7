"""torch tensors that view device memory the measuring process owns (through ``__cuda_array_interface__``), for
the vendor and rival GEMMs that run through torch."""

from __future__ import annotations

from typing import Any


class DeviceArray:
    """Just enough of an array for torch.as_tensor to view device memory it does not own."""

    def __init__(self, pointer: int, shape: tuple[int, ...], typestr: str):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (pointer, False), "version": 3}


def torch_view(pointer: int, shape: tuple[int, ...], typestr: str, dtype: Any = None) -> Any:
    """A tensor over ``shape`` elements of ``typestr`` at ``pointer``, reinterpreted as the torch ``dtype`` of the
    same size where given (the interface has no type string for bfloat16 or the FP8 types)."""
    import torch

    tensor = torch.as_tensor(DeviceArray(pointer, shape, typestr), device="cuda")
    return tensor if dtype is None else tensor.view(dtype)
