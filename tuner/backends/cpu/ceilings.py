"""The CPU's ceilings: theoretical peaks from its description, and bandwidth and multiply-add rates measured with
the project's own kernels on one core and on all cores (cached and printed by :mod:`tuner.backends.cpu.summary`).

Theoretical multiply-add peak: cores × clock × FMA pipes × lanes × 2 (a multiply-add counts as two operations).
Lanes come from the widest vector the flags name (AVX-512 64 bytes, AVX 32, else 16); AMD cores run AVX-512 as
two 256-bit halves, so they count 32 bytes. The FMA pipes per core are not visible to software: two are assumed
(x86 cores since Intel Haswell and AMD Zen 2 start two vector multiply-adds per cycle); without the ``fma`` flag
the peak is left unknown, as is the DRAM bandwidth (the memory's speed is not visible without root).

Measured (``tuner/ceiling_kernels/*.c``): STREAM's copy and triad loops over arrays of ``STREAM_FACTOR`` × the
last-level cache each (STREAM's rule), counting bytes as STREAM does (copy: 2 × 8 bytes per element, read +
written; triad 3 × 8), and ``fma.c``'s independent chains of vector multiply-adds, per dtype; each timed hot by
``tuner.backends.cpu.timing`` with ``CEILING_SETTINGS`` (median).
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from tuner.backends.cpu.info import llc_bytes, usable_cpus
from tuner.backends.cpu.timing import CpuTimer
from tuner.compile.cc import find_cc, openmp_works, own_kernel
from tuner.config import DTYPE_CTYPE
from tuner.measure.machine_load import Load, LoadMeter
from tuner.measure.measurement import Timing
from tuner.settings import MeasureSettings

CEILING_SETTINGS = MeasureSettings(cold_caches=False, warmup=2, min_samples=10, max_samples=100, max_time_s=1.0,
                                   target_noise=0.005)
STREAM_FACTOR = 4
MIN_STREAM_BYTES = 64 * 2**20
FMA_PIPES_ASSUMED = 2
FMA_CALL_SECONDS = 0.02
"""The multiply-add kernel's iterations are chosen so that one call lasts about this long."""
FMA_DTYPES = ("float32", "float64")
NUMPY_FLOAT = {"float32": np.float32, "float64": np.float64}


def stream_array_bytes() -> int:
    """Bytes of each STREAM array: STREAM_FACTOR × the last-level cache, at least MIN_STREAM_BYTES."""
    return max(STREAM_FACTOR * llc_bytes(), MIN_STREAM_BYTES)


def thread_counts() -> tuple[int, ...]:
    """The thread counts the ceilings are measured at: one core, and all usable cores (with OpenMP)."""
    cores = usable_cpus()
    return (1, cores) if cores > 1 and openmp_works(find_cc()) else (1,)


def fma_vector_bytes(device: dict[str, Any]) -> int:
    bits = device["vector_bits"]
    if bits > 256 and device.get("vendor") == "AuthenticAMD":
        bits = 256  # Zen 4 runs an AVX-512 multiply-add on both 256-bit pipes
    return bits // 8


def theoretical_peaks(device: dict[str, Any], threads: int) -> dict[str, float | None]:
    """Peak GFLOP/s per dtype on ``threads`` cores, and DRAM GB/s (None: not visible to software)."""
    clock: float | None = device.get("clock_mhz")
    usable = "fma" in device.get("flags", [])
    peaks: dict[str, float | None] = {}
    for dtype, size in (("float32", 4), ("float64", 8)):
        lanes = fma_vector_bytes(device) // size
        peaks[f"{dtype}_gflops"] = threads * clock * 1e-3 * FMA_PIPES_ASSUMED * lanes * 2 if usable and clock else None
    peaks["bandwidth_gbs"] = None
    return peaks


def _timing(timing: Timing, load: Load, **extra: Any) -> dict[str, Any]:
    return {**extra, "median_ms": timing.median_ms, "min_ms": timing.min_ms, "cv": timing.cv,
            "samples": timing.count, "load": load.to_dict()}


def _timed(timer: CpuTimer, run: Callable[[], object], settings: MeasureSettings, watch: LoadMeter,
           threads: int) -> tuple[Timing, Load]:
    """The timing of ``run`` on ``threads`` threads, and what other processes did meanwhile."""
    window = watch.window(threads)
    timing = timer.time(run, settings)
    return timing, window.close()


def measure_bandwidth(timer: CpuTimer, threads: tuple[int, ...], array_bytes: int, settings: MeasureSettings,
                      say: Any, watch: LoadMeter) -> dict[str, Any]:
    """STREAM copy and triad at each thread count: {"copy": {"threads": details}, "triad": {...}}."""
    stream = own_kernel("stream.c")
    pointer, size = ctypes.c_void_p, ctypes.c_size_t
    stream.fill.argtypes = [pointer, size, ctypes.c_double, ctypes.c_int]
    stream.copy.argtypes = [pointer, pointer, size, ctypes.c_int]
    stream.triad.argtypes = [pointer, pointer, pointer, ctypes.c_double, size, ctypes.c_int]
    n = array_bytes // 8
    arrays = [np.empty(n, np.float64) for _ in range(3)]
    a, b, c = (array.ctypes.data for array in arrays)
    for address, value in ((a, 1.0), (b, 2.0), (c, 0.0)):
        stream.fill(address, n, value, max(threads))
    found: dict[str, Any] = {"copy": {}, "triad": {}}
    for count in threads:
        say(f"measuring the memory bandwidth on {count} thread(s) (STREAM copy and triad, "
            f"{3 * array_bytes >> 20} MiB)…")
        timing, load = _timed(timer, partial(stream.copy, a, c, n, count), settings, watch, count)
        found["copy"][str(count)] = _timing(timing, load, bytes=2 * 8 * n,
                                            gbs=2 * 8 * n / (timing.median_ms * 1e-3) / 1e9)
        timing, load = _timed(timer, partial(stream.triad, a, b, c, 3.0, n, count), settings, watch, count)
        found["triad"][str(count)] = _timing(timing, load, bytes=3 * 8 * n,
                                             gbs=3 * 8 * n / (timing.median_ms * 1e-3) / 1e9)
    return found


def measure_fma(timer: CpuTimer, dtype: str, threads: tuple[int, ...], settings: MeasureSettings,
                say: Any, watch: LoadMeter, call_seconds: float = FMA_CALL_SECONDS) -> dict[str, dict[str, Any]]:
    """The multiply-add rate of ``dtype`` at each thread count: {"threads": details with "gflops"}."""
    real = NUMPY_FLOAT[dtype]
    library = own_kernel("fma.c", f"typedef {DTYPE_CTYPE[dtype]} real_t;\n")
    ctype = ctypes.c_float if dtype == "float32" else ctypes.c_double
    library.fma_chains.argtypes = [ctypes.c_void_p, ctypes.c_long, ctype, ctype, ctypes.c_int]
    lanes, chains = library.fma_lanes(), library.fma_chains_count()
    out = np.zeros(max(threads), real)

    def call(iterations: int, count: int) -> Callable[[], None]:
        return lambda: library.fma_chains(out.ctypes.data, iterations, 0.999999, 1e-6, count)

    # Each thread runs the same iterations, chosen on one thread (where no other thread's wake-up is timed) so that
    # a call lasts about call_seconds.
    iterations, trial = 1000, MeasureSettings(cold_caches=False, warmup=1, min_samples=3, max_samples=3)
    while (seconds := timer.time(call(iterations, 1), trial).min_ms * 1e-3) < call_seconds / 8:
        iterations *= 8
    iterations = max(iterations, int(iterations * call_seconds / seconds))
    found = {}
    for count in threads:
        say(f"measuring the {dtype} multiply-add rate on {count} thread(s)…")
        timing, load = _timed(timer, call(iterations, count), settings, watch, count)
        operations = 2 * lanes * chains * iterations * count
        found[str(count)] = _timing(timing, load, operations=operations, lanes=lanes, chains=chains,
                                    gflops=operations / (timing.median_ms * 1e-3) / 1e9)
    return found


def measure_ceilings(timer: CpuTimer, threads: tuple[int, ...] | None = None, array_bytes: int | None = None,
                     settings: MeasureSettings = CEILING_SETTINGS, progress: bool = False,
                     watch: LoadMeter | None = None) -> dict[str, Any]:
    """Measured ceilings per thread count ({"1": {...}, "2": {...}}) and the raw timings, each with the load of the
    machine while it was measured (``watch``; default: this process's tree is the run's own)."""
    say = (lambda text: print(text, file=sys.stderr, flush=True)) if progress else (lambda text: None)
    threads = threads or thread_counts()
    watch = watch or LoadMeter()
    details: dict[str, Any] = measure_bandwidth(timer, threads, array_bytes or stream_array_bytes(), settings, say,
                                                watch)
    for dtype in FMA_DTYPES:
        details[f"fma_{dtype}"] = measure_fma(timer, dtype, threads, settings, say, watch)
    by_threads = {
        count: {
            "float32_gflops": details["fma_float32"][count]["gflops"],
            "float64_gflops": details["fma_float64"][count]["gflops"],
            "bandwidth_gbs": details["copy"][count]["gbs"],
            "triad_gbs": details["triad"][count]["gbs"],
        }
        for count in map(str, threads)
    }
    return {"by_threads": by_threads, "details": details}


def method_text(array_bytes: int, settings: MeasureSettings) -> str:
    return (f"bandwidth: STREAM copy (2 × 8 B per element) and triad (3 × 8 B) over {array_bytes >> 20} MiB arrays, "
            f"(bytes read + written) / median time; multiply-add: 12 independent vector chains per thread, 2 "
            f"operations each / median time; hot, {settings.min_samples}-{settings.max_samples} samples, on 1 "
            f"thread and on all usable cores")
