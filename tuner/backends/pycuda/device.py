"""The GPU: its description, theoretical peaks, and ceilings measured with the project's own kernels.

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

Measured ceilings (``tuner/ceiling_kernels``): a streaming copy for bandwidth (bytes read + written per
median time), multiply-add chains per dtype for the CUDA cores' operations per second, and mma.sync chains on
register fragments per tensor-core dtype (float64, tf32, bfloat16, float16; ``tuner.peaks`` names them), on sm_90
beside back-to-back wgmma from shared memory, the higher of the two kept (:mod:`tuner.backends.pycuda.tensor_ceilings`),
and 16-byte loads from working sets the L2, the L1 and shared memory hold
(:mod:`tuner.backends.pycuda.memory_ceilings`), each timed by
``tuner.measure``.
They are cached per device (name + UUID + driver) and version of the ceiling kernels (a digest of their sources) as
JSON under ``$TUNER_CACHE_DIR`` or ``~/.cache/tuner``.
"""

from __future__ import annotations

import hashlib
import sys
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuner.backends.pycuda import memory_ceilings, tensor_ceilings
from tuner.config import DTYPE_CTYPE
from tuner.errors import TunerError
from tuner.measure.ceilings_cache import read_cached, write_cached
from tuner.measure.machine_load import LoadMeter, NvmlProcesses
from tuner.peaks import TENSOR_DTYPES
from tuner.peaks import key as peak_key
from tuner.settings import MeasureSettings, cache_root

if TYPE_CHECKING:
    from tuner.backends.pycuda.timing import Timer
    from tuner.measure.measurement import Timing

LANES_PER_SM: dict[str, dict[str, int]] = {
    "8.0": {"float32": 64, "float64": 32, "int32": 64},
    "8.6": {"float32": 128, "float64": 2, "int32": 64},
    "8.9": {"float32": 128, "float64": 2, "int32": 64},
    "9.0": {"float32": 128, "float64": 64, "int32": 64},
}
CEILING_DTYPES = ("float32", "float64", "int32")
TENSOR_FLOPS_PER_SM_CLOCK: dict[str, dict[str, int]] = {
    "8.0": {"float64": 128, "tf32": 1024, "bfloat16": 2048, "float16": 2048},
    "9.0": {"float64": 256, "tf32": 2048, "bfloat16": 4096, "float16": 4096},
}
"""Dense tensor-core operations per SM per clock (NVIDIA's A100 and H100 whitepapers; on sm_90 the full rate
needs wgmma, mma.sync reaches about two thirds of it in 16-bit types)."""
PUBLISHED_TENSOR_TFLOPS = {"NVIDIA H100 80GB HBM3": {"float64": 66.9, "tf32": 494.7, "bfloat16": 989.4,
                                                    "float16": 989.4}}
"""Datasheet dense tensor-core rates, printed beside the computed and the measured ones."""
MMA_SHAPES = {"float64": (16, 8, 16), "tf32": (16, 8, 8), "bfloat16": (16, 8, 16), "float16": (16, 8, 16)}
"""The mma.sync shape each tensor ceiling issues (float64's m16n8k16 is sm_90's; m8n8k4 runs at half rate)."""
MMA_CHAINS = 4
MMA_ITERATIONS = 2048
MMA_BLOCKS_PER_SM = 8
MMA_THREADS = 128
PUBLISHED_BANDWIDTH_GBS = {"NVIDIA H100 80GB HBM3": 3350.0, "NVIDIA H200": 4800.0}
"""Datasheet DRAM bandwidths, printed beside the computed figure as a check of the formula."""
CEILING_SETTINGS = MeasureSettings(cold_caches=False, warmup=5, min_samples=20, max_samples=200, max_time_s=1.0,
                                   target_noise=0.002)
FMA_CHAINS = 8
FMA_ITERATIONS = 4096
FMA_BLOCKS_PER_SM = 16
FMA_THREADS = 256
COPY_BYTES = 2**30
"""Size of each of the copy's two buffers (less on a GPU with under 8 GiB)."""
KERNEL_DIR = Path(__file__).parents[2] / "ceiling_kernels"
CEILINGS_METHOD = (
    f"copy: two {COPY_BYTES // 2**20} MiB buffers, 16 B per thread, (bytes read + written) / median time; "
    f"fma: {FMA_BLOCKS_PER_SM} blocks of {FMA_THREADS} threads per SM, {FMA_CHAINS} independent chains × "
    f"{FMA_ITERATIONS} multiply-adds per thread, 2 operations each / median time; mma: {MMA_BLOCKS_PER_SM} blocks "
    f"of {MMA_THREADS} threads per SM, {MMA_CHAINS} independent mma.sync chains × {MMA_ITERATIONS} per warp on "
    f"register fragments, 2·m·n·k operations each / median time; {tensor_ceilings.METHOD}; "
    f"{memory_ceilings.METHOD}; hot (no flush), "
    f"{CEILING_SETTINGS.min_samples}-{CEILING_SETTINGS.max_samples} samples"
)


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


def _kernel(name: str, prefix: str, function: str, arch: str) -> Any:
    from tuner.backends.pycuda.modules import compiled_function

    return compiled_function(prefix + (KERNEL_DIR / name).read_text(), arch, function)


def measure_ceilings(device: dict[str, Any], timer: Timer, progress: bool = False) -> dict[str, Any]:
    """Bandwidth and multiply-add rates measured with the project's kernels, with the raw timings."""
    import numpy as np
    import pycuda.driver as cuda

    from tuner.kernels.verify import NUMPY_DTYPES

    arch = device["arch"]
    say = (lambda text: print(text, file=sys.stderr, flush=True)) if progress else (lambda text: None)
    measured: dict[str, float] = {}
    details: dict[str, Any] = {}

    say("measuring the DRAM bandwidth (streaming copy)…")
    size = min(COPY_BYTES, device["memory_bytes"] // 8) // 4096 * 4096
    src, dst = cuda.mem_alloc(size), cuda.mem_alloc(size)
    try:
        cuda.memset_d32(src, 0x3F800000, size // 4)
        copy = _kernel("copy.cu", "", "copy", arch)
        copy.prepare("PPQ")
        elements = size // 16
        grid = ((elements + 255) // 256, 1, 1)
        timing = timer.time(lambda: copy.prepared_call(grid, (256, 1, 1), int(src), int(dst), np.uint64(elements)),
                            CEILING_SETTINGS)
    finally:
        src.free()
        dst.free()
    measured["bandwidth_gbs"] = 2 * size / (timing.median_ms * 1e-3) / 1e9
    details["copy"] = {"bytes": 2 * size, **_timing_details(timing)}

    blocks = device["multiprocessors"] * FMA_BLOCKS_PER_SM
    threads = blocks * FMA_THREADS
    for dtype in CEILING_DTYPES:
        say(f"measuring the {dtype} multiply-add rate…")
        nptype = NUMPY_DTYPES[dtype]
        prefix = f"typedef {DTYPE_CTYPE[dtype]} real_t;\n#define CHAINS {FMA_CHAINS}\n"
        fma = _kernel("fma.cu", prefix, "fma_chains", arch)
        fma.prepare([np.intp, nptype, nptype, np.int32])
        b, c = (nptype(1), nptype(1)) if dtype == "int32" else (nptype(0.999), nptype(0.001))
        out = cuda.mem_alloc(threads * np.dtype(nptype).itemsize)
        try:
            timing = timer.time(partial(fma.prepared_call, (blocks, 1, 1), (FMA_THREADS, 1, 1), int(out), b, c,
                                        np.int32(FMA_ITERATIONS)), CEILING_SETTINGS)
        finally:
            out.free()
        operations = 2 * threads * FMA_CHAINS * FMA_ITERATIONS
        measured[f"{dtype}_gflops"] = operations / (timing.median_ms * 1e-3) / 1e9
        details[f"fma_{dtype}"] = {"operations": operations, **_timing_details(timing)}
    instructions: dict[str, str] = {}
    if device["compute_capability"] in TENSOR_FLOPS_PER_SM_CLOCK:
        rates: dict[str, dict[str, float]] = {tensor_ceilings.MMA_SYNC: {}, tensor_ceilings.WGMMA: {}}
        for dtype in TENSOR_DTYPES:
            say(f"measuring the {dtype} tensor-core (mma.sync) rate…")
            operations, timing = _mma_ceiling(device, dtype, timer)
            rates[tensor_ceilings.MMA_SYNC][dtype] = operations / (timing.median_ms * 1e-3) / 1e9
            details[f"mma_{dtype}"] = {"operations": operations, **_timing_details(timing)}
        if tensor_ceilings.wgmma_arch(device["compute_capability"]):
            for dtype in tensor_ceilings.WGMMA_K:
                say(f"measuring the {dtype} tensor-core (wgmma) rate…")
                operations, timing = tensor_ceilings.measure_wgmma(device, dtype, timer, CEILING_SETTINGS, _kernel)
                rates[tensor_ceilings.WGMMA][dtype] = operations / (timing.median_ms * 1e-3) / 1e9
                details[f"wgmma_{dtype}"] = {"operations": operations, **_timing_details(timing)}
        for dtype, (rate, instruction) in tensor_ceilings.pick(rates).items():
            measured[peak_key(dtype, "tensor")] = rate
            instructions[dtype] = instruction
    levels, level_details = memory_ceilings.measure(device, timer, CEILING_SETTINGS,
                                                    lambda file, prefix, name: _kernel(file, prefix, name, arch),
                                                    progress)
    measured.update(levels)
    details.update(level_details)
    return {"measured": measured, "details": details, "tensor_instructions": instructions}


def _mma_ceiling(device: dict[str, Any], dtype: str, timer: Timer) -> tuple[int, Timing]:
    import numpy as np
    import pycuda.driver as cuda

    blocks = device["multiprocessors"] * MMA_BLOCKS_PER_SM
    prefix = f"#define MMA_{dtype.upper()}\n#define CHAINS {MMA_CHAINS}\n"
    kernel = _kernel("mma.cu", prefix, "mma_chains", device["arch"])
    kernel.prepare([np.intp, np.int32])
    out = cuda.mem_alloc(blocks * MMA_THREADS * 8)
    try:
        timing = timer.time(partial(kernel.prepared_call, (blocks, 1, 1), (MMA_THREADS, 1, 1), int(out),
                                    np.int32(MMA_ITERATIONS)), CEILING_SETTINGS)
    finally:
        out.free()
    m, n, k = MMA_SHAPES[dtype]
    warps = blocks * MMA_THREADS // 32
    return 2 * m * n * k * warps * MMA_CHAINS * MMA_ITERATIONS, timing


def _timing_details(timing: Timing) -> dict[str, Any]:
    return {"median_ms": timing.median_ms, "cv": timing.cv, "samples": timing.count,
            "sm_clock_mhz_before": timing.sm_clock_mhz_before, "sm_clock_mhz_after": timing.sm_clock_mhz_after,
            "throttled_samples": timing.throttled_samples}


def _complete(cached: dict[str, Any], device: dict[str, Any]) -> bool:
    measured = (cached.get("peaks") or {}).get("measured") or {}
    wanted = [f"{d}_gflops" for d in CEILING_DTYPES] + ["bandwidth_gbs", *memory_ceilings.LEVEL_KEYS.values()]
    if device.get("compute_capability") in TENSOR_FLOPS_PER_SM_CLOCK:
        wanted += [peak_key(d, "tensor") for d in TENSOR_DTYPES]
    return all(k in measured for k in wanted)


def kernels_digest(folder: Path = KERNEL_DIR) -> str:
    """A digest of the ceiling kernels' sources: ceilings measured by other kernels are not reused."""
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.cu")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _cache_file(device: dict[str, Any], versions: dict[str, Any]) -> Path:
    key = (f"{device['name']}|{device.get('uuid') or device.get('pci_bus_id')}|{versions.get('driver')}|"
           f"{kernels_digest()}")
    return cache_root() / f"device-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


def summary(remeasure: bool = False, timer: Timer | None = None, progress: bool = False,
            load: LoadMeter | None = None) -> dict[str, Any]:
    """The GPU's description, versions, theoretical peaks and measured ceilings (cached per device).

    Keys: device, versions, peaks ({"theoretical": …, "measured": …}), ceilings (method, measured_utc,
    details, tensor_instructions: the instruction each tensor ceiling came from, load: what other processes did on
    the GPU meanwhile, :class:`tuner.machine_load.Load` as a dict),
    cache_file. Needs a GPU; creates the primary context when there is none. ``load`` watches the GPU while the
    ceilings are measured (default: through NVML, where it is installed); ceilings measured while another process
    used the GPU are not cached, and a warning says so.
    """
    require_gpu()
    device = describe()
    versions = software_versions()
    path = _cache_file(device, versions)
    cached = None if remeasure else read_cached(path, device["name"])
    if cached is not None and not _complete(cached, device):
        cached = None  # cached before a ceiling this version measures existed
    if cached is not None:
        return {**cached, "device": device, "versions": versions, "cache_file": str(path)}
    own_timer = timer is None
    if timer is None:
        from tuner.backends.pycuda.timing import SmClock, Timer

        handle = nvml_handle(device["pci_bus_id"])
        timer = Timer(device["l2_bytes"] or 0, SmClock(handle) if handle else None, device["arch"])
    window = (load or _gpu_load_meter(device)).window()
    if progress:
        print(f"measuring this GPU's ceilings (memory bandwidth, arithmetic rates), once per device: they are cached "
              f"in {path} for the runs that follow", file=sys.stderr, flush=True)
    try:
        ceilings = measure_ceilings(device, timer, progress=progress)
    finally:
        if own_timer:
            timer.close()
    watched = window.close()
    result = {
        "device": device,
        "versions": versions,
        "peaks": {"theoretical": theoretical_peaks(device), "measured": ceilings["measured"]},
        "ceilings": {"method": CEILINGS_METHOD, "measured_utc": datetime.now(UTC).isoformat(timespec="seconds"),
                     "details": ceilings["details"], "tensor_instructions": ceilings.get("tensor_instructions", {}),
                     "load": watched.to_dict()},
    }
    if watched.under_load:
        print(f"warning: the GPU's ceilings were measured while {watched.describe()}; they are not cached, so the "
              f"next run measures them again, and percentages of them are flagged", file=sys.stderr, flush=True)
    else:
        write_cached(path, result)
    return {**result, "cache_file": str(path)}


def _gpu_load_meter(device: dict[str, Any]) -> LoadMeter:
    """A watch on the other processes of this GPU (none without NVML)."""
    handle = nvml_handle(device["pci_bus_id"])
    return LoadMeter(gpu=NvmlProcesses(handle) if handle else None, counters=None)


# --- printing ------------------------------------------------------------------------------------------------

def _size(nbytes: int | None) -> str:
    if nbytes is None:
        return "?"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{nbytes} B"


def _rate(value: float | None, unit: str) -> str:
    return "?" if value is None else f"{value / 1e3:.2f} T{unit}"


def format_summary(info: dict[str, Any]) -> str:
    d, v = info["device"], info["versions"]
    theoretical, measured = info["peaks"]["theoretical"], info["peaks"]["measured"]
    lines = [
        f"{d['name']}  (compute capability {d['compute_capability']}, {d['arch']})",
        f"  UUID                      {d.get('uuid') or '?'}  (PCI {d['pci_bus_id']})",
        f"  multiprocessors           {d['multiprocessors']}",
        f"  SM clock (max)            {d['sm_clock_mhz']:.0f} MHz",
        f"  memory clock (max)        {d['memory_clock_mhz']:.0f} MHz",
        f"  memory                    {_size(d['memory_bytes'])}, {d['memory_bus_width_bits']}-bit bus",
        f"  L2 cache                  {_size(d['l2_bytes'])}",
        f"  shared memory per block   {_size(d['shared_per_block_bytes'])} "
        f"(opt-in {_size(d['shared_per_block_optin_bytes'])}); per SM {_size(d['shared_per_sm_bytes'])}",
        f"  registers per block       {d['registers_per_block']}; threads per block ≤ {d['max_threads_per_block']}",
        "software",
        f"  driver                    {v['driver'] or '?'} (CUDA {v['cuda_driver_api']} driver API)",
        f"  CUDA (PyCUDA built for)   {v['cuda']}",
        f"  nvcc                      {v['nvcc'] or 'not found'}",
        f"  PyCUDA                    {v['pycuda']}",
        "peaks                       theoretical      measured    % of theoretical",
    ]
    rows = [("float32 multiply-add", "float32_gflops", "FLOP/s"), ("float64 multiply-add", "float64_gflops", "FLOP/s"),
            ("int32 multiply-add", "int32_gflops", "OP/s"), ("DRAM bandwidth", "bandwidth_gbs", "B/s")]
    rows += [(label.split(" (")[0], key, "B/s") for key, label in memory_ceilings.LEVEL_LABELS.items()
             if key in measured or theoretical.get(key)]
    instructions = info["ceilings"].get("tensor_instructions", {})
    rows += [(f"{dtype} tensor ({instructions.get(dtype, tensor_ceilings.MMA_SYNC)})", peak_key(dtype, "tensor"),
              "FLOP/s") for dtype in TENSOR_DTYPES
             if peak_key(dtype, "tensor") in measured or theoretical.get(peak_key(dtype, "tensor"))]
    for label, key, unit in rows:
        peak, got = theoretical.get(key), measured.get(key)
        share = f"{100 * got / peak:.0f}%" if peak and got else "?"
        lines.append(f"  {label:<24}  {_rate(peak, unit):>14}  {_rate(got, unit):>12}  {share:>8}")
    tensor = TENSOR_FLOPS_PER_SM_CLOCK.get(d["compute_capability"])
    if tensor:
        rates = "/".join(str(tensor[dtype]) for dtype in TENSOR_DTYPES)
        datasheet = PUBLISHED_TENSOR_TFLOPS.get(d["name"])
        sheet = ("; NVIDIA publishes " + "/".join(f"{datasheet[dtype]:g}" for dtype in TENSOR_DTYPES) + " TFLOP/s "
                 "dense for this GPU") if datasheet else ""
        lines.append(f"  (tensor: {d['multiprocessors']} SMs × {rates} {'/'.join(TENSOR_DTYPES)} operations per SM "
                     f"per clock × {d['sm_clock_mhz']:.0f} MHz{sheet}; mma.sync reaches about two thirds of the "
                     f"16-bit rate on sm_90, whose full rate needs wgmma)")
    lanes = LANES_PER_SM.get(d["compute_capability"])
    if lanes:
        per_sm = "/".join(str(lanes[dtype]) for dtype in CEILING_DTYPES)
        lines.append(f"  (arithmetic: {d['multiprocessors']} SMs × {per_sm} float32/float64/int32 lanes per SM × "
                     f"{d['sm_clock_mhz']:.0f} MHz × 2 operations per multiply-add)")
    if theoretical.get("bandwidth_gbs"):
        published = PUBLISHED_BANDWIDTH_GBS.get(d["name"])
        check = f"; NVIDIA publishes {published / 1e3:.2f} TB/s for this GPU" if published else ""
        lines.append(f"  (bandwidth: {d['memory_clock_mhz']:.0f} MHz × {d['memory_bus_width_bits']} bit × 2 (double "
                     f"data rate: both clock edges) / 8 bit per byte = {theoretical['bandwidth_gbs']:.0f} GB/s{check})")
    if theoretical.get("l1_bandwidth_gbs"):
        lines.append(f"  (L1 and shared memory: {d['multiprocessors']} SMs × {memory_ceilings.bytes_per_sm_clock(d)} B "
                     f"per clock ({memory_ceilings.BANKS} banks × {memory_ceilings.BANK_BYTES} B) × "
                     f"{d['sm_clock_mhz']:.0f} MHz; NVIDIA publishes no L2 bandwidth)")
    ceilings = info["ceilings"]
    clocks = [f"{name.removeprefix('fma_')} {t['sm_clock_mhz_before']:.0f}→{t['sm_clock_mhz_after']:.0f}"
              for name, t in ceilings.get("details", {}).items()
              if t.get("sm_clock_mhz_before") and t.get("sm_clock_mhz_after")]
    if clocks:
        lines.append(f"  (SM clock in MHz before→after each ceiling's samples: {', '.join(clocks)})")
    lines.append(f"ceilings measured {ceilings['measured_utc']} ({ceilings['method']})")
    lines.append(f"cached in {info['cache_file']} (python -m tuner device --remeasure to measure again)")
    return "\n".join(lines)


def print_device(remeasure: bool = False) -> None:
    """``python -m tuner device``: describe the GPU and print its theoretical and measured ceilings."""
    print(format_summary(summary(remeasure=remeasure, progress=True)))
