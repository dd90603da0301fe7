"""A kernel's workspace on the GPU: its buffers for one problem and dtype, the inputs and the reference they are
checked against, and the outputs poisoned before each launch and read back after it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from tuner.config import Problem
from tuner.kernels.arguments import Buffer
from tuner.kernels.family import Kernel
from tuner.kernels.verify import NUMPY_DTYPES, Expected, Tolerance, Verdict, check_all, poison_word, random_inputs
from tuner.precision import raw_bytes

ARGUMENT_FORMATS = {"int32": "i", "int64": "q", "float32": "f", "float64": "d", "tf32": "f"}
"""PyCUDA's ``prepare`` codes of scalar arguments (buffers are pointers, ``P``)."""
NUMPY_DTYPES_ALL: Mapping[str, type[np.generic]] = {**NUMPY_DTYPES, "int64": np.int64}


@dataclass(frozen=True)
class HostData:
    """What a workspace holds on the host: the inputs, the reference and the tolerance."""

    inputs: dict[str, np.ndarray]
    expected: dict[str, Expected]
    tolerance: Tolerance


def device_bytes(kernel: Kernel, problem: Problem, dtype: str) -> int:
    """What a workspace allocates on the device: its buffers, and a pristine copy of those both read and
    written."""
    buffers = [a for a in kernel.arguments if isinstance(a, Buffer)]
    return sum(max(1, b.nbytes(problem, dtype)) * (2 if b.is_input and b.is_output else 1) for b in buffers)


def host_data(kernel: Kernel, problem: Problem, dtype: str, seed: int) -> HostData:
    buffers = [a for a in kernel.arguments if isinstance(a, Buffer)]
    inputs = random_inputs(buffers, problem, dtype, seed)
    return HostData(inputs, kernel.reference(inputs, problem, seed), kernel.tolerance(dtype, problem))


class Workspace:
    """One kernel's buffers for one problem and dtype, on the device, with the inputs and the reference."""

    def __init__(self, kernel: Kernel, problem: Problem, dtype: str, host: HostData):
        import pycuda.driver as cuda

        self.kernel, self.problem, self.dtype = kernel, problem, dtype
        buffers = [a for a in kernel.arguments if isinstance(a, Buffer)]
        self.inputs, self.expected, self.tolerance = host.inputs, host.expected, host.tolerance
        self.device: dict[str, Any] = {}
        self.outputs = [b for b in buffers if b.is_output]
        self.pristine: dict[str, Any] = {}
        """Device copies of the outputs that are inputs too, to refill them from."""
        self.host: dict[str, np.ndarray] = {}
        """The outputs as read back, typed."""
        self.host_bytes: dict[str, np.ndarray] = {}
        """Page-locked host memory the outputs are read back into (``host`` views it)."""
        for buffer in buffers:
            nbytes = max(1, buffer.nbytes(problem, dtype))
            self.device[buffer.name] = cuda.mem_alloc(nbytes)
            if buffer.is_input:
                cuda.memcpy_htod(self.device[buffer.name], raw_bytes(self.inputs[buffer.name]))
            if buffer.is_input and buffer.is_output:
                self.pristine[buffer.name] = cuda.mem_alloc(nbytes)
                cuda.memcpy_dtod(self.pristine[buffer.name], self.device[buffer.name], nbytes)
        for buffer in self.outputs:
            raw = cuda.pagelocked_empty(max(1, buffer.nbytes(problem, dtype)), np.uint8)
            self.host_bytes[buffer.name] = raw
            self.host[buffer.name] = raw[:buffer.nbytes(problem, dtype)].view(
                NUMPY_DTYPES[buffer.dtype_of(dtype)]).reshape(buffer.shape(problem))

    @property
    def signature(self) -> str:
        return "".join("P" if isinstance(a, Buffer) else ARGUMENT_FORMATS[a.type_of(self.dtype)]
                       for a in self.kernel.arguments)

    def arguments(self) -> tuple[Any, ...]:
        values: list[Any] = []
        for argument in self.kernel.arguments:
            if isinstance(argument, Buffer):
                values.append(int(self.device[argument.name]))
            else:
                values.append(NUMPY_DTYPES_ALL[argument.type_of(self.dtype)](argument.value(self.problem)))
        return tuple(values)

    def prepare_outputs(self) -> None:
        """Poison every output, refill the ones that are inputs too (queued on the default stream)."""
        import pycuda.driver as cuda

        for buffer in self.outputs:
            pointer, nbytes = self.device[buffer.name], buffer.nbytes(self.problem, self.dtype)
            if buffer.is_input:
                cuda.memcpy_dtod_async(pointer, self.pristine[buffer.name], nbytes)
            else:
                cuda.memset_d32_async(pointer, poison_word(buffer.dtype_of(self.dtype)), nbytes // 4)
                if nbytes % 4:  # an odd count of 16-bit elements: the last one (all bits set is NaN there too)
                    cuda.memset_d8_async(int(pointer) + nbytes // 4 * 4, 0xFF, nbytes % 4)

    def check(self) -> Verdict:
        """The outputs as the last launch left them, against the reference."""
        import pycuda.driver as cuda

        kinds = {}
        for buffer in self.outputs:
            cuda.memcpy_dtoh(self.host_bytes[buffer.name], self.device[buffer.name])
            kinds[buffer.name] = buffer.dtype_of(self.dtype)
        return check_all(self.host, self.expected, kinds, self.tolerance)

    def free(self) -> None:
        for pointer in [*self.device.values(), *self.pristine.values()]:
            pointer.free()
        self.host.clear()
        self.host_bytes.clear()
