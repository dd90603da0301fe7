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
    they are; ``load`` watches the machine meanwhile. The ceilings are measured once per machine and cached with the
    load they were measured under, whatever it was (a ceiling measured under load reads low: a warning says so, and
    percentages of it are flagged); later calls reuse them until ``remeasure``. Measuring is always announced on
    stderr, ``progress`` says each step. A cache written before loads were watched is measured again.
    """
    device = describe()
    compiler = versions()
    path = _cache_file(device, compiler)
    cached = None if remeasure else read_cached(path, device["name"])
    if cached is not None and "load" in (cached.get("ceilings") or {}):
        if progress and cached["ceilings"]["load"].get("under_load"):
            _say(f"note: {trust_text(cached['ceilings']['load'], path)}")
        return {**cached, "device": device, "versions": compiler, "cache_file": str(path)}
    array_bytes = array_bytes or stream_array_bytes()
    _say(f"measuring this CPU's ceilings (memory bandwidth and multiply-add rates on "
         f"{' and '.join(map(str, thread_counts()))} thread(s), about a minute), once: they are cached in {path} "
         f"with the machine's load meanwhile, for the runs that follow ({REMEASURE} measures them again)")
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
    write_cached(path, result)
    if watched["under_load"]:
        _say(f"warning: {trust_text(watched, path)}")
    return {**result, "cache_file": str(path)}


REMEASURE = ("run --remeasure-ceilings (tuner.run(..., remeasure_ceilings=True), or python -m tuner device --cpu "
             "--remeasure)")
"""How the user measures the CPU's ceilings again."""


def trust_text(load: dict[str, Any], path: Path | str) -> str:
    """What ceilings measured under ``load`` (``ceilings_load``'s) are worth, and how to measure them again."""
    slowed = ", ".join(load.get("loaded") or ()) or "some"
    return (f"the CPU's ceilings cached in {path} were measured while {load.get('worst')} ({slowed} slowed): they "
            f"read low and percentages of them are flagged '?'; measure them again on an idle machine with "
            f"{REMEASURE}")


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


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
        lines.append(f"  UNDER LOAD: measured while {load['worst']} ({', '.join(load['loaded'])} slowed): they read "
                     f"low, and percentages of them are flagged: measure again on an idle machine")
    elif load:
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
