"""The CPU's summary: its description, compiler, theoretical peaks and measured ceilings, cached as JSON under
``$TUNER_CACHE_DIR`` (default ``~/.cache/tuner``) per machine (host, CPU model, CPU count, compiler and flags), and
printed by ``python -m tuner device --cpu``.
"""

from __future__ import annotations

import hashlib
import platform
import re
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tuner.backends.cpu import ceilings as cpu_ceilings
from tuner.backends.cpu.ceilings import (
    CEILING_SETTINGS,
    FMA_PIPES_ASSUMED,
    fma_vector_bytes,
    method_text,
    stream_array_bytes,
    theoretical_peaks,
    thread_counts,
)
from tuner.backends.cpu.info import describe
from tuner.backends.cpu.timing import CpuTimer
from tuner.compile.cc import compiler_identity, find_cc, flags, openmp_works
from tuner.measure.ceilings_cache import read_cached, write_cached
from tuner.measure.machine_load import Load, LoadMeter
from tuner.settings import MeasureSettings, cache_root

TEXT_WIDTH = 80
"""The columns ``device --cpu`` fits its text to."""


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
    measured = cpu_ceilings.measure_ceilings(timer or CpuTimer(), array_bytes=array_bytes, settings=settings,
                                             progress=progress, watch=load)
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
