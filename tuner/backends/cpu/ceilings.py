"""The CPU's ceilings: theoretical peaks from its description, and bandwidth and multiply-add rates measured with
the project's own kernels on one core and on all cores; cached per machine, printed by ``tuner device --cpu``.

Theoretical multiply-add peak: cores × clock × FMA pipes × lanes × 2 (a multiply-add counts as two operations).
Lanes come from the widest vector the flags name (AVX-512 64 bytes, AVX 32, else 16); AMD cores run AVX-512 as
two 256-bit halves, so they count 32 bytes. The FMA pipes per core are not visible to software: two are assumed
(x86 cores since Intel Haswell and AMD Zen 2 start two vector multiply-adds per cycle); without the ``fma`` flag
the peak is left unknown, as is the DRAM bandwidth (the memory's speed is not visible without root).

Measured (``tuner/ceiling_kernels/*.c``): STREAM's copy and triad loops over arrays of ``STREAM_FACTOR`` × the
last-level cache each (STREAM's rule), counting bytes as STREAM does (copy: 2 × 8 bytes per element, read +
written; triad 3 × 8), and ``fma.c``'s independent chains of vector multiply-adds, per dtype; each timed hot by
``tuner.backends.cpu.timing`` with ``CEILING_SETTINGS`` (median). Cached as JSON under ``$TUNER_CACHE_DIR`` (default
``~/.cache/tuner``) per machine: host, CPU model, CPU count, compiler and flags.
"""

from __future__ import annotations

import ctypes
import hashlib
import platform
import re
import sys
import textwrap
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from tuner.backends.cpu.info import describe, llc_bytes, usable_cpus
from tuner.backends.cpu.timing import CpuTimer
from tuner.compile.cc import compiler_identity, find_cc, flags, openmp_works, own_kernel
from tuner.config import DTYPE_CTYPE
from tuner.measure.ceilings_cache import read_cached, write_cached
from tuner.measure.machine_load import Load, LoadMeter
from tuner.measure.measurement import Timing
from tuner.settings import MeasureSettings, cache_root

CEILING_SETTINGS = MeasureSettings(cold_caches=False, warmup=2, min_samples=10, max_samples=100, max_time_s=1.0,
                                   target_noise=0.005)
STREAM_FACTOR = 4
MIN_STREAM_BYTES = 64 * 2**20
FMA_PIPES_ASSUMED = 2
FMA_CALL_SECONDS = 0.02
"""The multiply-add kernel's iterations are chosen so that one call lasts about this long."""
FMA_DTYPES = ("float32", "float64")
TEXT_WIDTH = 80
"""The columns ``device --cpu`` fits its text to."""
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


def versions() -> dict[str, Any]:
    cc = find_cc()
    return {"cc": compiler_identity(cc), "cc_path": cc, "flags": list(flags(cc)), "openmp": openmp_works(cc)}


def _cache_file(device: dict[str, Any], compiler: dict[str, Any]) -> Path:
    key = "|".join(str(part) for part in (platform.node(), device["name"], device["cpus"], device["usable_cpus"],
                                           compiler["cc"], " ".join(compiler["flags"])))
    return cache_root() / f"cpu-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


def summary(remeasure: bool = False, timer: CpuTimer | None = None, progress: bool = False,
            settings: MeasureSettings = CEILING_SETTINGS, array_bytes: int | None = None,
            load: LoadMeter | None = None) -> dict[str, Any]:
    """The CPU's description, compiler, theoretical peaks and measured ceilings (cached per machine).

    Keys: device, versions, peaks ({"theoretical", "measured"} on all usable cores), by_threads (measured ceilings
    per thread count, as text keys), ceilings (method, measured_utc, details, load: see ``ceilings_load``),
    cache_file. ``settings`` and ``array_bytes`` (of each STREAM array) change how the ceilings are measured when
    they are; ``load`` watches the machine meanwhile. Ceilings measured under load are not cached (and a warning
    says so): the next run measures them again. A cache written before loads were watched is measured again.
    """
    device = describe()
    compiler = versions()
    path = _cache_file(device, compiler)
    cached = None if remeasure else read_cached(path, device["name"])
    if cached is not None and "load" in (cached.get("ceilings") or {}):
        return {**cached, "device": device, "versions": compiler, "cache_file": str(path)}
    array_bytes = array_bytes or stream_array_bytes()
    if progress:
        counts = " and ".join(map(str, thread_counts()))
        print(f"measuring this CPU's ceilings (memory bandwidth and multiply-add rates on {counts} thread(s)), once "
              f"per machine: they are cached in {path} for the runs that follow", file=sys.stderr, flush=True)
    measured = measure_ceilings(timer or CpuTimer(), array_bytes=array_bytes, settings=settings, progress=progress,
                                watch=load)
    cores = max(int(count) for count in measured["by_threads"])
    watched = ceilings_load(measured["details"])
    result = {
        "device": device,
        "versions": compiler,
        "peaks": {"theoretical": theoretical_peaks(device, cores),
                  "measured": {k: v for k, v in measured["by_threads"][str(cores)].items() if k != "triad_gbs"}},
        "by_threads": measured["by_threads"],
        "ceilings": {"method": method_text(array_bytes, settings),
                     "measured_utc": datetime.now(UTC).isoformat(timespec="seconds"),
                     "details": measured["details"], "load": watched},
    }
    if watched["under_load"]:
        print(f"warning: the CPU's ceilings were measured while {watched['worst']}; they are not cached, so the "
              f"next run measures them again, and percentages of them are flagged (python -m tuner device --cpu "
              f"--remeasure on an idle machine)", file=sys.stderr, flush=True)
    else:
        write_cached(path, result)
    return {**result, "cache_file": str(path)}


def ceilings_load(details: dict[str, Any]) -> dict[str, Any]:
    """What other processes did while the ceilings were measured: {"under_load": whether any ceiling was measured
    under load, "worst": the heaviest load in words, "loaded": the ceilings measured under load ("copy 2",
    "fma_float64 2", ...)}."""
    loads = {f"{name} {count}": Load.from_dict(part.get("load")) for name, parts in details.items()
             if isinstance(parts, dict) for count, part in parts.items() if isinstance(part, dict)}
    known = {name: load for name, load in loads.items() if load is not None}
    heaviest = max(known.values(), key=lambda load: load.other_cpus or 0.0, default=None)
    return {"under_load": any(load.under_load for load in known.values()),
            "worst": heaviest.describe() if heaviest is not None else "no other work seen",
            "loaded": sorted(name for name, load in known.items() if load.under_load)}


def peaks_at(info: dict[str, Any], threads: int) -> dict[str, dict[str, float | None]]:
    """Theoretical and measured peaks for a run on ``threads`` threads (the nearest measured thread count)."""
    by_threads = info.get("by_threads") or {}
    nearest = min(by_threads, key=lambda count: abs(int(count) - threads)) if by_threads else None
    measured = dict(by_threads[nearest]) if nearest else {}
    measured.pop("triad_gbs", None)
    cores = min(threads, info["device"].get("usable_cpus") or threads)
    return {"theoretical": theoretical_peaks(info["device"], cores), "measured": measured}


# --- printing ------------------------------------------------------------------------------------------------

def _size(nbytes: int) -> str:
    return f"{nbytes >> 20} MiB" if nbytes >= 2**20 else f"{nbytes >> 10} KiB"


def _rate(value: float | None, unit: str) -> str:
    return "?" if value is None else f"{value:.1f} G{unit}"


def format_summary(info: dict[str, Any]) -> str:
    d, v = info["device"], info["versions"]
    caches = ", ".join(f"L{c['level']} {c['type'].lower()} {_size(c['bytes'])}"
                       + (f" shared by {c['shared_by']}" if c["shared_by"] > 1 else " per core") for c in d["caches"])
    clock = f"{d['clock_mhz']:.0f} MHz from {d['clock_source']}" if d.get("clock_mhz") else "unknown"
    lines = [
        f"{d['name']}  ({d['machine']}, {d.get('vendor') or '?'} family {d.get('family')} model {d.get('model')})",
        f"  cores                     {d['cores'] or '?'} ({d['cpus']} CPUs, {d['usable_cpus']} usable here)",
        f"  caches                    {caches or '?'}",
        f"  vector extensions         {' '.join(d['flags']) or 'none named'} (widest vector {d['vector_bits']} bit)",
        f"  clock                     {clock}",
        "compiler",
        f"  {v['cc']} ({v['cc_path']})",
        f"  flags                     {' '.join(v['flags'])}" + ("" if v["openmp"] else " (no OpenMP: one thread)"),
        f"ceilings{'theoretical':>45}  {'measured':>12}  {'% of it':>8}",
    ]
    for count, measured in sorted(info["by_threads"].items(), key=lambda item: int(item[0])):
        theoretical = theoretical_peaks(d, int(count))
        for label, key, unit in (("float32 multiply-add", "float32_gflops", "FLOP/s"),
                                 ("float64 multiply-add", "float64_gflops", "FLOP/s"),
                                 ("bandwidth (STREAM copy)", "bandwidth_gbs", "B/s"),
                                 ("bandwidth (STREAM triad)", "triad_gbs", "B/s")):
            peak, got = theoretical.get(key), measured.get(key)
            share = f"{100 * got / peak:.0f}%" if peak and got else "?"
            lines.append(f"  {count} thread(s) {label:<24} {_rate(peak, unit):>14}  {_rate(got, unit):>12}  {share:>8}")
    if d.get("clock_mhz") and "fma" in d["flags"]:
        lanes64 = fma_vector_bytes(d) // 8
        lines.append(f"  (multiply-add: cores × {d['clock_mhz']:.0f} MHz × {FMA_PIPES_ASSUMED} FMA pipes (assumed) × "
                     f"{lanes64} float64 / {2 * lanes64} float32 lanes × 2 operations)")
        one = info["by_threads"].get("1", {}).get("float64_gflops")
        if one:
            lines.append(f"  (the measured float64 rate on one core implies a clock of "
                         f"{one * 1e3 / (FMA_PIPES_ASSUMED * lanes64 * 2):.0f} MHz at {FMA_PIPES_ASSUMED} FMA pipes)")
    lines.append("  (DRAM bandwidth: no theoretical figure; the memory's speed is not visible without root)")
    ceilings = info["ceilings"]
    lines.append(f"ceilings measured {ceilings['measured_utc']} ({ceilings['method']})")
    load = ceilings.get("load") or {}
    if load.get("under_load"):
        lines.append(f"  UNDER LOAD: measured while {load['worst']} ({', '.join(load['loaded'])} slowed); not cached, "
                     f"and percentages of them are flagged: measure again on an idle machine")
        lines.append(f"not cached (it would be {info['cache_file']})")
    else:
        if load:
            lines.append(f"  load while measured: {load['worst']} (within what the measurements leave free)")
        lines.append(f"cached in {info['cache_file']} (python -m tuner device --cpu --remeasure to measure again)")
    return "\n".join(_fitted(line) for line in lines)


def _fitted(line: str) -> str:
    """A line within TEXT_WIDTH columns, its continuation lines under its value (or its text)."""
    if len(line) <= TEXT_WIDTH:
        return line
    labelled = re.match(r"^\s*\S.*?\s{2,}", line)
    hanging = len(labelled.group(0)) if labelled and len(labelled.group(0)) < TEXT_WIDTH // 2 else \
        len(line) - len(line.lstrip()) + 2
    return textwrap.fill(line, TEXT_WIDTH, subsequent_indent=" " * hanging, break_on_hyphens=False)


def print_cpu(remeasure: bool = False) -> None:
    """``python -m tuner device --cpu``: describe the CPU and print its theoretical and measured ceilings."""
    print(format_summary(summary(remeasure=remeasure, progress=True)))
