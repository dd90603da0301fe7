"""The bandwidth ceilings of the levels above DRAM: the L2 cache, the L1 cache and shared memory.

Measured with the kernels of ``tuner/ceiling_kernels/cache_levels.cu`` (16-byte loads from a working set the
level holds, ``LEVEL_BLOCKS_PER_SM`` blocks of ``LEVEL_THREADS`` threads per SM, bytes loaded / median time, hot:
no flush) beside DRAM's streaming copy, and theoretical where a figure can be derived: shared memory and the L1
serve 32 banks × 4 bytes = 128 bytes per clock per SM (the CUDA programming guide's banks, compute capability 5.0
and later), so SMs × 128 B × the SM clock. NVIDIA publishes no L2 bandwidth for
these GPUs; its theoretical figure is left unknown.

Peaks (GB/s) in the device's peaks dict: ``l2_bandwidth_gbs``, ``l1_bandwidth_gbs``, ``shared_bandwidth_gbs``
(``bandwidth_gbs`` stays DRAM's).
"""

from __future__ import annotations

import sys
from functools import partial
from typing import TYPE_CHECKING, Any

from tuner.peaks import LEVEL_KEYS
from tuner.settings import MeasureSettings

if TYPE_CHECKING:
    from tuner.backends.pycuda.timing import Timer

BANKS = 32
BANK_BYTES = 4
"""Shared memory's banks and the bytes each serves per clock (compute capability 5.0 and later, the CUDA
programming guide): 128 bytes per clock per SM, the width of the L1/shared data path."""
LEVEL_BLOCKS_PER_SM = 8
LEVEL_THREADS = 256
WINDOW = 512
"""float4 elements each block reads in the L1 and shared-memory kernels (8 KiB: eight blocks of an SM hold 64 KiB,
which the L1 keeps whatever share of it shared memory takes)."""
ITERATIONS = {"l2": 2048, "l1": 8192, "shared": 8192}
KERNELS = {"l2": "l2_reads", "l1": "l1_reads", "shared": "shared_reads"}
METHOD = (f"L2, L1, shared memory: {LEVEL_BLOCKS_PER_SM} blocks of {LEVEL_THREADS} threads per SM, 16-byte loads "
          f"(L2: ld.global.cg over a quarter of the L2; L1: ld.global.ca over {WINDOW * 16 // 1024} KiB per block; "
          f"shared: ld.shared over {WINDOW * 16 // 1024} KiB per block), bytes loaded / median time")


def bytes_per_sm_clock(device: dict[str, Any]) -> int | None:
    """What shared memory and the L1 serve per clock per SM, where the compute capability says (5.0 and later)."""
    try:
        major = int(str(device.get("compute_capability")).split(".")[0])
    except ValueError:
        return None
    return BANKS * BANK_BYTES if major >= 5 else None


def theoretical(device: dict[str, Any]) -> dict[str, float | None]:
    """Theoretical GB/s of each level (None where unknown)."""
    per_clock = bytes_per_sm_clock(device)
    sms, clock = device.get("multiprocessors"), device.get("sm_clock_mhz")
    on_chip = sms * per_clock * clock / 1e3 if per_clock and sms and clock else None
    return {"l2_bandwidth_gbs": None, "l1_bandwidth_gbs": on_chip, "shared_bandwidth_gbs": on_chip}


def _working_set_bytes(device: dict[str, Any]) -> int:
    """A power of two at most a quarter of the L2 (8 MiB where the L2's size is unknown)."""
    quarter = max((device.get("l2_bytes") or 2**25) // 4, 2**20)
    return 1 << (quarter.bit_length() - 1)


def measure(device: dict[str, Any], timer: Timer, settings: MeasureSettings,
            kernel: Any, progress: bool = False) -> tuple[dict[str, float], dict[str, Any]]:
    """Measured GB/s of each level and the timings behind them; ``kernel(file, prefix, function)`` compiles a
    ceiling kernel for the device."""
    import numpy as np
    import pycuda.driver as cuda

    blocks = device["multiprocessors"] * LEVEL_BLOCKS_PER_SM
    threads = blocks * LEVEL_THREADS
    size = _working_set_bytes(device)
    data, out = cuda.mem_alloc(size), cuda.mem_alloc(threads * 4)
    measured: dict[str, float] = {}
    details: dict[str, Any] = {}
    try:
        cuda.memset_d32(data, 0x3F800000, size // 4)
        for level, name in KERNELS.items():
            if progress:
                print(f"measuring the {level} bandwidth…", file=sys.stderr, flush=True)
            function = kernel("cache_levels.cu", f"#define WINDOW {WINDOW}\n", name)
            function.prepare("PQiP")
            iterations = ITERATIONS[level]
            timing = timer.time(partial(function.prepared_call, (blocks, 1, 1), (LEVEL_THREADS, 1, 1), int(data),
                                        np.uint64(size // 16 - 1), np.int32(iterations), int(out)), settings)
            loaded = threads * iterations * 16
            measured[LEVEL_KEYS[level]] = loaded / (timing.median_ms * 1e-3) / 1e9
            details[level] = {"bytes": loaded, "working_set_bytes": size if level == "l2" else WINDOW * 16,
                              "median_ms": timing.median_ms, "cv": timing.cv, "samples": timing.count,
                              "sm_clock_mhz_before": timing.sm_clock_mhz_before,
                              "sm_clock_mhz_after": timing.sm_clock_mhz_after,
                              "throttled_samples": timing.throttled_samples}
    finally:
        data.free()
        out.free()
    return measured, details
