"""Launching kernels that need Hopper's launch features, through the CUDA driver API (ctypes on libcuda).

PyCUDA has no binding for thread-block clusters (``cuLaunchKernelEx`` with the cluster-dimension attribute) nor for
TMA descriptors (``cuTensorMapEncodeTiled``), and does not expose its functions' driver handles. A kernel that needs
either is therefore loaded a second time here, from the same cubin, into the context PyCUDA made current on this
thread; its parameters go to the driver as an array of pointers to each value: the 128-byte tensor maps first (the
kernel takes them as ``__grid_constant__`` parameters), then the family's arguments. Everything else (buffers,
events, the timer) stays PyCUDA's, on the same context and the same default stream. A kernel table's calls
(:mod:`tuner.table.call`) load and launch their kernels here too, in the caller's context, on the caller's stream.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from tuner.kernels.family import Dim3
from tuner.kernels.render import Launch
from tuner.kernels.tensor_maps import TensorMapFields

TENSOR_MAP_BYTES = 128
TENSOR_MAP_ALIGNMENT = 128
"""cuda.h aligns CUtensorMap to 128 bytes (the driver documents 64)."""
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4
CU_TENSOR_MAP_INTERLEAVE_NONE = 0
CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3
CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0
"""Out-of-bounds elements of a box arrive as zeros."""
LAUNCH_REFUSALS = {1: "CUDA_ERROR_INVALID_VALUE", 701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
                   912: "CUDA_ERROR_INVALID_CLUSTER_SIZE"}
"""Errors cuLaunchKernelEx returns, before anything runs, for a launch the hardware cannot take."""
PARAMETER_TYPES = {"P": ctypes.c_uint64, "i": ctypes.c_int32, "q": ctypes.c_int64, "f": ctypes.c_float,
                   "d": ctypes.c_double}
"""ctypes of the argument codes the measuring process's signatures use (PyCUDA's ``prepare`` codes)."""


class DriverError(Exception):
    """A driver call failed; ``code`` is its CUresult."""

    def __init__(self, call: str, code: int, name: str, text: str):
        super().__init__(f"{call} failed: {name} ({text})")
        self.code = code


class _LaunchAttribute(ctypes.Structure):
    """CUlaunchAttribute: an id, padding to 8 bytes, a 64-byte value (here the cluster's x, y, z)."""

    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("x", ctypes.c_uint), ("y", ctypes.c_uint),
                ("z", ctypes.c_uint), ("rest", ctypes.c_char * 52)]


class _LaunchConfig(ctypes.Structure):
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(_LaunchAttribute)), ("numAttrs", ctypes.c_uint)]


@cache
def _driver() -> ctypes.CDLL:
    library = ctypes.CDLL("libcuda.so.1")
    pointer, uint = ctypes.c_void_p, ctypes.c_uint
    signatures: dict[str, list[Any]] = {
        "cuGetErrorName": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
        "cuGetErrorString": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
        "cuModuleLoadData": [ctypes.POINTER(pointer), ctypes.c_char_p],
        "cuModuleUnload": [pointer],
        "cuModuleGetFunction": [ctypes.POINTER(pointer), pointer, ctypes.c_char_p],
        "cuFuncSetAttribute": [pointer, ctypes.c_int, ctypes.c_int],
        "cuLaunchKernelEx": [ctypes.POINTER(_LaunchConfig), pointer, ctypes.POINTER(pointer), pointer],
        "cuOccupancyMaxActiveClusters": [ctypes.POINTER(ctypes.c_int), pointer, ctypes.POINTER(_LaunchConfig)],
        "cuInit": [uint],
        "cuDeviceGet": [ctypes.POINTER(ctypes.c_int), ctypes.c_int],
        "cuDeviceGetAttribute": [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int],
        "cuDeviceGetName": [ctypes.c_char_p, ctypes.c_int, ctypes.c_int],
        "cuDevicePrimaryCtxRetain": [ctypes.POINTER(pointer), ctypes.c_int],
        "cuCtxGetCurrent": [ctypes.POINTER(pointer)],
        "cuCtxSetCurrent": [pointer],
        "cuCtxGetDevice": [ctypes.POINTER(ctypes.c_int)],
        "cuPointerGetAttribute": [pointer, ctypes.c_int, ctypes.c_uint64],
        "cuTensorMapEncodeTiled": [pointer, ctypes.c_int, uint, pointer, ctypes.POINTER(ctypes.c_uint64),
                                   ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32),
                                   ctypes.POINTER(ctypes.c_uint32), ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                   ctypes.c_int],
    }
    for name, arguments in signatures.items():
        function = getattr(library, name)
        function.argtypes, function.restype = arguments, ctypes.c_int
    return library


def _check(call: str, code: int) -> None:
    if code == 0:
        return
    name, text = ctypes.c_char_p(), ctypes.c_char_p()
    library = _driver()
    library.cuGetErrorName(code, ctypes.byref(name))
    library.cuGetErrorString(code, ctypes.byref(text))
    raise DriverError(call, code, (name.value or b"CUresult %d" % code).decode(), (text.value or b"").decode())


class TensorMapBuffer:
    """One encoded tensor map, aligned in host memory as cuda.h aligns CUtensorMap."""

    def __init__(self, fields: TensorMapFields, address: int):
        self._storage = ctypes.create_string_buffer(TENSOR_MAP_BYTES + TENSOR_MAP_ALIGNMENT)
        start = ctypes.addressof(self._storage)
        self.address = start + (-start) % TENSOR_MAP_ALIGNMENT
        rank = len(fields.dims)
        _check("cuTensorMapEncodeTiled", _driver().cuTensorMapEncodeTiled(
            ctypes.c_void_p(self.address), fields.data_type, rank, ctypes.c_void_p(address),
            (ctypes.c_uint64 * rank)(*fields.dims), (ctypes.c_uint64 * (rank - 1))(*fields.strides),
            (ctypes.c_uint32 * rank)(*fields.box), (ctypes.c_uint32 * rank)(*fields.element_strides),
            CU_TENSOR_MAP_INTERLEAVE_NONE, fields.swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE))


@dataclass
class Parameters:
    """The kernel's parameter block: pointers to each value, and the values they point at (kept alive)."""

    maps: list[TensorMapBuffer]
    values: list[Any]
    pointers: Any


def parameters(maps: Sequence[TensorMapBuffer], signature: str, arguments: Sequence[Any]) -> Parameters:
    """The tensor maps, then the arguments typed by ``signature`` (``P`` pointer, ``i`` int32, …)."""
    values: list[Any] = [PARAMETER_TYPES[code](value) for code, value in zip(signature, arguments, strict=True)]
    addresses = [m.address for m in maps] + [ctypes.addressof(v) for v in values]
    return Parameters(list(maps), values, (ctypes.c_void_p * len(addresses))(*addresses))


def _config(grid: tuple[int, int, int], block: tuple[int, int, int], shared_bytes: int,
            cluster: tuple[int, int, int], stream: int | None = None) -> tuple[_LaunchConfig, Any]:
    """A launch configuration on ``stream`` (None: the default stream), with the cluster-dimension attribute where
    there is a cluster (and the attribute array it points at, which must live as long as it)."""
    attributes = (_LaunchAttribute * 1)()
    count = 0
    if cluster != (1, 1, 1):
        attributes[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attributes[0].x, attributes[0].y, attributes[0].z = cluster
        count = 1
    config = _LaunchConfig(*grid, *block, shared_bytes, stream,
                           ctypes.cast(attributes, ctypes.POINTER(_LaunchAttribute)), count)
    return config, attributes


class ExtendedKernel:
    """A kernel of a cubin loaded through the driver into the current context, launched with cuLaunchKernelEx."""

    def __init__(self, cubin: bytes, name: str, dynamic_shared_bytes: int):
        library = _driver()
        self._module = ctypes.c_void_p()
        self._image = ctypes.create_string_buffer(cubin, len(cubin))
        _check("cuModuleLoadData", library.cuModuleLoadData(ctypes.byref(self._module), self._image))
        self._function = ctypes.c_void_p()
        try:
            _check("cuModuleGetFunction",
                   library.cuModuleGetFunction(ctypes.byref(self._function), self._module, name.encode()))
            _check("cuFuncSetAttribute", library.cuFuncSetAttribute(
                self._function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic_shared_bytes))
        except DriverError:
            self.close()
            raise

    def launch(self, grid: tuple[int, int, int], block: tuple[int, int, int], shared_bytes: int,
               cluster: tuple[int, int, int], block_parameters: Parameters, stream: int | None = None) -> None:
        """Queue one launch on ``stream`` (None: the default stream); DriverError where the driver refuses it."""
        config, _attributes = _config(grid, block, shared_bytes, cluster, stream)
        _check("cuLaunchKernelEx", _driver().cuLaunchKernelEx(ctypes.byref(config), self._function,
                                                               block_parameters.pointers, None))

    def prepared(self, grid: tuple[int, int, int], block: tuple[int, int, int], shared_bytes: int,
                 cluster: tuple[int, int, int]) -> PreparedLaunch:
        """A launch of this kernel laid out once, queued many times (the call path of a kernel table)."""
        return PreparedLaunch(self, *_config(grid, block, shared_bytes, cluster))

    def active_clusters(self, block: tuple[int, int, int], shared_bytes: int, cluster: tuple[int, int, int]) -> int:
        """Clusters of this kernel the GPU runs at once (they must fit whole into its GPCs, so fewer than the SMs
        over the cluster size may)."""
        config, _attributes = _config(cluster, block, shared_bytes, cluster)
        count = ctypes.c_int()
        _check("cuOccupancyMaxActiveClusters",
               _driver().cuOccupancyMaxActiveClusters(ctypes.byref(count), self._function, ctypes.byref(config)))
        return count.value

    def close(self) -> None:
        if self._module:
            _driver().cuModuleUnload(self._module)
            self._module = ctypes.c_void_p()



class PreparedLaunch:
    """A launch configuration kept between launches: each queues it on a stream with a parameter block."""

    def __init__(self, kernel: ExtendedKernel, config: _LaunchConfig, attributes: Any):
        self._kernel, self._config, self._attributes = kernel, config, attributes
        self._reference = ctypes.byref(config)
        self._launch = _driver().cuLaunchKernelEx

    def run(self, block_parameters: Parameters, stream: int) -> None:
        """Queue the launch on ``stream``; DriverError where the driver refuses it."""
        self._config.hStream = stream
        code = self._launch(self._reference, self._kernel._function, block_parameters.pointers, None)
        if code:
            _check("cuLaunchKernelEx", code)


def launch_grid(kernel: ExtendedKernel, launch: Launch, multiprocessors: int | None) -> Dim3:
    """The grid of ``launch`` on a GPU of this many SMs; a persistent grid of clusters holds only the clusters that
    run at once (they must fit whole into the GPU's processing clusters), or the last ones would wait for the first."""
    grid = launch.grid_on(multiprocessors)
    size = launch.cluster[0] * launch.cluster[1] * launch.cluster[2]
    if launch.resident_blocks_per_sm and size > 1:
        with contextlib.suppress(DriverError):  # no answer: one block per SM, in whole clusters
            active = kernel.active_clusters(launch.block, launch.dynamic_shared_bytes, launch.cluster)
            grid = (min(grid[0], max(1, active) * size), 1, 1)
    return grid


CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 75, 76
CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9


def pointer_device_ordinal(pointer: int) -> int:
    """The device a CUDA allocation belongs to; DriverError for an address the driver does not know."""
    ordinal = ctypes.c_int()
    _check("cuPointerGetAttribute", _driver().cuPointerGetAttribute(
        ctypes.byref(ordinal), CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, pointer))
    return ordinal.value


@dataclass(frozen=True)
class DeviceFacts:
    name: str
    compute_capability: str
    multiprocessors: int


def device_facts(ordinal: int) -> DeviceFacts:
    """Name, compute capability (``9.0``) and SM count of one device, from the driver."""
    library = _driver()
    _check("cuInit", library.cuInit(0))
    device, value = ctypes.c_int(), ctypes.c_int()
    _check("cuDeviceGet", library.cuDeviceGet(ctypes.byref(device), ordinal))
    numbers = []
    for attribute in (CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                      CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT):
        _check("cuDeviceGetAttribute", library.cuDeviceGetAttribute(ctypes.byref(value), attribute, device))
        numbers.append(value.value)
    name = ctypes.create_string_buffer(256)
    _check("cuDeviceGetName", library.cuDeviceGetName(name, len(name), device))
    return DeviceFacts(name.value.decode(errors="replace"), f"{numbers[0]}.{numbers[1]}", numbers[2])


def context_is(context: int) -> bool:
    """Whether ``context`` is the one current on this thread (one driver call)."""
    current = ctypes.c_void_p()
    _driver().cuCtxGetCurrent(ctypes.byref(current))
    return current.value == context


def make_current(context: int) -> None:
    """Make ``context`` the current one on this thread."""
    _check("cuCtxSetCurrent", _driver().cuCtxSetCurrent(ctypes.c_void_p(context)))


def current_context(ordinal: int) -> int:
    """The context current on this thread when it is ``ordinal``'s; else the device's primary context (the one
    PyTorch and CuPy use), made current. Returns its handle."""
    library = _driver()
    context, device = ctypes.c_void_p(), ctypes.c_int()
    _check("cuCtxGetCurrent", library.cuCtxGetCurrent(ctypes.byref(context)))
    if context.value and library.cuCtxGetDevice(ctypes.byref(device)) == 0 and device.value == ordinal:
        return context.value
    _check("cuInit", library.cuInit(0))
    _check("cuDeviceGet", library.cuDeviceGet(ctypes.byref(device), ordinal))
    _check("cuDevicePrimaryCtxRetain", library.cuDevicePrimaryCtxRetain(ctypes.byref(context), device))
    make_current(int(context.value or 0))
    return int(context.value or 0)
