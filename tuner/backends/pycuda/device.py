"""The GPU: its description (:func:`describe`), its software versions and its theoretical peaks.

Theoretical peaks:

- arithmetic: SMs × lanes per SM × SM clock × 2 (a multiply-add counts as two operations). The lanes per
  SM come from ``LANES_PER_SM`` (on sm_90: 128 float32, 64 float64 and 64 int32 lanes); the clock is the
  maximum (boost) SM clock.
- DRAM bandwidth: memory clock × bus width × 2 / 8. The 2 is double data rate (data moves on both edges
  of the clock the driver reports), the 8 turns bits into bytes. An H100 SXM (HBM3) reports 2619 MHz and a
  5120-bit bus: 2619e6 × 5120 × 2 / 8 = 3.35 TB/s, NVIDIA's figure.

- tensor cores: SMs × dense operations per SM per clock (``TENSOR_FLOPS_PER_SM_CLOCK``) × SM clock.
- the L1 cache and shared memory: SMs × 128 bytes per clock × SM clock; the L2: unknown
  (:mod:`tuner.backends.pycuda.memory_ceilings`).
"""

from __future__ import annotations

from typing import Any

from tuner.backends.pycuda import memory_ceilings
from tuner.errors import TunerError
from tuner.peaks import key as peak_key

LANES_PER_SM: dict[str, dict[str, int]] = {
    "8.0": {"float32": 64, "float64": 32, "int32": 64},
    "8.6": {"float32": 128, "float64": 2, "int32": 64},
    "8.9": {"float32": 128, "float64": 2, "int32": 64},
    "9.0": {"float32": 128, "float64": 64, "int32": 64},
}
CEILING_DTYPES = ("float32", "float64", "int32")
TENSOR_FLOPS_PER_SM_CLOCK: dict[str, dict[str, int]] = {
    "8.0": {"float64": 128, "tf32": 1024, "bfloat16": 2048, "float16": 2048},
    "9.0": {"float64": 256, "tf32": 2048, "bfloat16": 4096, "float16": 4096, "float8_e4m3": 8192,
            "float8_e5m2": 8192},
}
"""Dense tensor-core operations per SM per clock (NVIDIA's A100 and H100 whitepapers; on sm_90 the full rate
needs wgmma, mma.sync reaches about two thirds of it in 16-bit types; FP8's rate is twice the 16-bit one in
either format)."""


def theoretical_peaks(device: dict[str, Any]) -> dict[str, float | None]:
    """Peak GFLOP/s per dtype and DRAM GB/s from the device description (None where unknown)."""
    lanes = LANES_PER_SM.get(device.get("compute_capability", ""), {})
    sms, clock = device.get("multiprocessors"), device.get("sm_clock_mhz")
    peaks: dict[str, float | None] = {}
    for dtype in CEILING_DTYPES:
        per_sm = lanes.get(dtype)
        peaks[f"{dtype}_gflops"] = sms * per_sm * clock * 2 / 1e3 if sms and per_sm and clock else None
    tensor = TENSOR_FLOPS_PER_SM_CLOCK.get(device.get("compute_capability", ""), {})
    for dtype, per_clock in tensor.items():
        peaks[peak_key(dtype, "tensor")] = sms * per_clock * clock / 1e3 if sms and clock else None
    memory_clock, bus = device.get("memory_clock_mhz"), device.get("memory_bus_width_bits")
    peaks["bandwidth_gbs"] = memory_clock * bus * 2 / 8 / 1e3 if memory_clock and bus else None
    peaks.update(memory_ceilings.theoretical(device))
    return peaks


# --- on the GPU ----------------------------------------------------------------------------------------------

def require_gpu() -> None:
    """Create (or reuse) the primary context of the default GPU, or explain in one paragraph why not."""
    try:
        import pycuda.driver  # noqa: F401
    except ImportError as exc:
        raise TunerError(f"the GPU path needs PyCUDA with a CUDA driver, and importing it failed ({exc}); "
                         'install it with pip install -e ".[cuda]" in the checkout, on a machine with an NVIDIA '
                         "GPU; without one, python -m tuner run EXPERIMENT --backend replay --replay RUN_FOLDER "
                         "works from a recorded run") from None
    try:
        _block_while_waiting()
        import pycuda.autoprimaryctx  # noqa: F401
    except Exception as exc:  # pycuda raises its own error types, or RuntimeError without a device
        raise TunerError(f"no usable CUDA GPU: PyCUDA could not create a context ({exc}); check nvidia-smi "
                         "and CUDA_VISIBLE_DEVICES") from None


CU_CTX_SCHED_BLOCKING_SYNC = 0x04


def _block_while_waiting() -> None:
    """Let the primary contexts' host threads sleep while they wait for the GPU. With one context on a host of many
    cores CUDA spins instead, and a measuring process that waits on its kernels most of the time then holds a whole core
    that the compilers, working ahead, need; kernels are timed by events on the GPU either way."""
    import ctypes

    import pycuda.driver as cuda

    cuda.init()
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return
    set_flags = getattr(driver, "cuDevicePrimaryCtxSetFlags_v2", None) or \
        getattr(driver, "cuDevicePrimaryCtxSetFlags", None)  # a driver without either keeps CUDA's default
    if set_flags is None:
        return
    for ordinal in range(cuda.Device.count()):
        device = ctypes.c_int()
        if driver.cuDeviceGet(ctypes.byref(device), ordinal) == 0:
            set_flags(device, CU_CTX_SCHED_BLOCKING_SYNC)


def nvml_handle(pci_bus_id: str) -> Any | None:
    """The NVML handle of the GPU at this PCI address, or None without nvidia-ml-py or NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            if _bus_key(pynvml.nvmlDeviceGetPciInfo(handle).busId) == _bus_key(pci_bus_id):
                return handle
    except Exception:  # no pynvml, no NVML library, or NVML refuses: clocks are then unknown
        return None
    return None


def _bus_key(bus_id: str | bytes) -> tuple[int, str]:
    text = bus_id.decode() if isinstance(bus_id, bytes) else bus_id
    domain, rest = text.lower().split(":", 1)
    return int(domain, 16), rest


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def describe() -> dict[str, Any]:
    """The current context's GPU: name, compute capability, SMs, clocks, memory, L2, shared memory."""
    import pycuda.driver as cuda

    device = cuda.Context.get_device()
    attribute = cuda.device_attribute

    def get(name: str) -> int | None:
        try:
            return device.get_attribute(getattr(attribute, name))
        except (AttributeError, cuda.Error):
            return None

    major, minor = device.compute_capability()
    handle = nvml_handle(device.pci_bus_id())
    sm_khz, memory_khz = get("CLOCK_RATE"), get("MEMORY_CLOCK_RATE")
    info: dict[str, Any] = {
        "name": device.name(),
        "uuid": None,
        "pci_bus_id": device.pci_bus_id(),
        "compute_capability": f"{major}.{minor}",
        "arch": f"sm_{major}{minor}",
        "multiprocessors": get("MULTIPROCESSOR_COUNT"),
        "sm_clock_mhz": sm_khz / 1e3 if sm_khz else None,
        "memory_clock_mhz": memory_khz / 1e3 if memory_khz else None,
        "memory_bytes": device.total_memory(),
        "memory_bus_width_bits": get("GLOBAL_MEMORY_BUS_WIDTH"),
        "l2_bytes": get("L2_CACHE_SIZE"),
        "shared_per_block_bytes": get("MAX_SHARED_MEMORY_PER_BLOCK"),
        "shared_per_block_optin_bytes": get("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
        "shared_per_sm_bytes": get("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"),
        "registers_per_block": get("MAX_REGISTERS_PER_BLOCK"),
        "max_threads_per_block": get("MAX_THREADS_PER_BLOCK"),
        "threads_per_sm": get("MAX_THREADS_PER_MULTIPROCESSOR"),
        "registers_per_sm": get("MAX_REGISTERS_PER_MULTIPROCESSOR"),
        "blocks_per_sm": get("MAX_BLOCKS_PER_MULTIPROCESSOR"),
        "max_grid": [get("MAX_GRID_DIM_X"), get("MAX_GRID_DIM_Y"), get("MAX_GRID_DIM_Z")],
    }
    if handle is not None:
        import pynvml

        info["uuid"] = _text(pynvml.nvmlDeviceGetUUID(handle))
        # Where the driver API no longer reports clocks, NVML's maximum clocks stand in.
        info["sm_clock_mhz"] = info["sm_clock_mhz"] or pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)
        info["memory_clock_mhz"] = info["memory_clock_mhz"] or pynvml.nvmlDeviceGetMaxClockInfo(
            handle, pynvml.NVML_CLOCK_MEM)
    return info


def software_versions() -> dict[str, str | None]:
    """Driver, CUDA, nvcc and PyCUDA versions as seen from this process."""
    import pycuda
    import pycuda.driver as cuda

    from tuner.compile.nvcc import nvcc_version

    driver = None
    try:
        import pynvml

        pynvml.nvmlInit()
        driver = _text(pynvml.nvmlSystemGetDriverVersion())
    except Exception:  # without NVML the driver's own version string is unknown
        pass
    api = cuda.get_driver_version()
    return {
        "driver": driver,
        "cuda_driver_api": f"{api // 1000}.{api % 1000 // 10}",
        "cuda": ".".join(map(str, cuda.get_version()[:2])),
        "nvcc": nvcc_version(),
        "pycuda": pycuda.VERSION_TEXT,
    }
