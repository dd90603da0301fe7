"""The GPU's ceilings, measured with the project's own kernels.

The kernels (``tuner/ceiling_kernels``): a streaming copy for bandwidth (bytes read + written per median time),
multiply-add chains per dtype for the CUDA cores' operations per second, and mma.sync chains on register fragments
per tensor-core dtype (float64, tf32, bfloat16, float16; ``tuner.peaks`` names them), on sm_90 beside back-to-back
wgmma from shared memory, the higher of the two kept, and wgmma alone for float8_e4m3 and float8_e5m2
(:mod:`tuner.backends.pycuda.tensor_ceilings`), and 16-byte loads from working sets the L2, the L1 and shared
memory hold (:mod:`tuner.backends.pycuda.memory_ceilings`), each timed by ``tuner.measure``.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuner.backends.pycuda import memory_ceilings, tensor_ceilings
from tuner.backends.pycuda.device import CEILING_DTYPES, TENSOR_FLOPS_PER_SM_CLOCK
from tuner.config import DTYPE_CTYPE
from tuner.peaks import TENSOR_DTYPES
from tuner.peaks import key as peak_key
from tuner.settings import MeasureSettings

if TYPE_CHECKING:
    from tuner.backends.pycuda.timing import Timer
    from tuner.measure.measurement import Timing

MMA_SHAPES = {"float64": (16, 8, 16), "tf32": (16, 8, 8), "bfloat16": (16, 8, 16), "float16": (16, 8, 16)}
"""The mma.sync shape each tensor ceiling issues (float64's m16n8k16 is sm_90's; m8n8k4 runs at half rate)."""
MMA_CHAINS = 4
MMA_ITERATIONS = 2048
MMA_BLOCKS_PER_SM = 8
MMA_THREADS = 128
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



def _kernel(name: str, prefix: str, function: str, arch: str) -> Any:
    from tuner.backends.pycuda.modules import compiled_function

    return compiled_function(prefix + (KERNEL_DIR / name).read_text(), arch, function)


def measure_ceilings(device: dict[str, Any], timer: Timer, progress: bool = False) -> dict[str, Any]:
    """Bandwidth and multiply-add rates measured with the project's kernels, with the raw timings."""
    arch = device["arch"]
    say = (lambda text: print(text, file=sys.stderr, flush=True)) if progress else (lambda text: None)
    measured: dict[str, float] = {}
    details: dict[str, Any] = {}
    say("measuring the DRAM bandwidth (streaming copy)…")
    _copy_bandwidth(device, timer, measured, details)
    _fma_rates(device, timer, say, measured, details)
    instructions = _tensor_rates(device, timer, say, measured, details)
    levels, level_details = memory_ceilings.measure(device, timer, CEILING_SETTINGS,
                                                    lambda file, prefix, name: _kernel(file, prefix, name, arch),
                                                    progress)
    measured.update(levels)
    details.update(level_details)
    return {"measured": measured, "details": details, "tensor_instructions": instructions}


def _copy_bandwidth(device: dict[str, Any], timer: Timer, measured: dict[str, float], details: dict[str, Any]) -> None:
    import numpy as np
    import pycuda.driver as cuda

    size = min(COPY_BYTES, device["memory_bytes"] // 8) // 4096 * 4096
    src, dst = cuda.mem_alloc(size), cuda.mem_alloc(size)
    try:
        cuda.memset_d32(src, 0x3F800000, size // 4)
        copy = _kernel("copy.cu", "", "copy", device["arch"])
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


def _fma_rates(device: dict[str, Any], timer: Timer, say: Callable[[str], None], measured: dict[str, float],
               details: dict[str, Any]) -> None:
    import numpy as np
    import pycuda.driver as cuda

    from tuner.kernels.verify import NUMPY_DTYPES

    blocks = device["multiprocessors"] * FMA_BLOCKS_PER_SM
    threads = blocks * FMA_THREADS
    for dtype in CEILING_DTYPES:
        say(f"measuring the {dtype} multiply-add rate…")
        nptype = NUMPY_DTYPES[dtype]
        prefix = f"typedef {DTYPE_CTYPE[dtype]} real_t;\n#define CHAINS {FMA_CHAINS}\n"
        fma = _kernel("fma.cu", prefix, "fma_chains", device["arch"])
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


def _tensor_rates(device: dict[str, Any], timer: Timer, say: Callable[[str], None], measured: dict[str, float],
                  details: dict[str, Any]) -> dict[str, str]:
    """The tensor cores' rates (mma.sync, and wgmma where the GPU has it, the higher kept); the instruction each
    dtype's rate came from."""
    instructions: dict[str, str] = {}
    if device["compute_capability"] not in TENSOR_FLOPS_PER_SM_CLOCK:
        return instructions
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
    return instructions


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


def kernels_digest(folder: Path = KERNEL_DIR) -> str:
    """A digest of the ceiling kernels' sources: ceilings measured by other kernels are not reused."""
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.cu")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]
