"""The CPU this process runs on, as Linux describes it: model, cores, caches, vector extensions, clock; and the BLAS
numpy calls on it.

Read from ``/proc/cpuinfo`` and sysfs (``/sys/devices/system/cpu``), so nothing runs and nothing needs root.
What the system does not say (a clock under a hypervisor, the memory's speed) stays None.
"""

from __future__ import annotations

import os
import platform
import re
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from tuner.compile.cc import PROC_CPUINFO, cpuinfo_fields
from tuner.measure.machine_load import usable_cpu_set

SYSFS_CPU = Path("/sys/devices/system/cpu")
VECTOR_FLAGS = ("sse2", "avx", "avx2", "fma", "avx512f", "avx512vl", "avx512_bf16", "amx_tile", "asimd", "sve")
"""The instruction-set flags the description keeps (x86 and Arm)."""
FALLBACK_LLC_BYTES = 32 * 2**20
"""Assumed last-level cache where neither sysfs nor /proc/cpuinfo names one."""


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def parse_size(text: str) -> int | None:
    """Bytes of a cache size as sysfs writes it ("32K", "512K", "32768K", "1M")."""
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]?)i?B?\s*", text, re.IGNORECASE)
    if not match:
        return None
    return int(match.group(1)) * {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[match.group(2).upper()]


def parse_cpu_list(text: str) -> list[int]:
    """CPU numbers of a sysfs list such as "0-3,8"."""
    cpus: list[int] = []
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        cpus.extend(range(int(low), int(high or low) + 1))
    return cpus


def caches(cpu: int = 0) -> list[dict[str, Any]]:
    """The data and unified caches of one CPU: level, type, bytes and how many CPUs share each."""
    found = []
    for index in sorted((SYSFS_CPU / f"cpu{cpu}" / "cache").glob("index*")):
        kind = _read(index / "type")
        size = parse_size(_read(index / "size") or "")
        level = _read(index / "level")
        if kind == "Instruction" or size is None or level is None:
            continue
        shared = parse_cpu_list(_read(index / "shared_cpu_list") or str(cpu))
        found.append({"level": int(level), "type": kind, "bytes": size, "shared_by": len(shared)})
    return found


def usable_cpus() -> int:
    """How many CPUs this process may run on (its affinity mask), at least 1."""
    return max(1, len(usable_cpu_set()))


def _physical_cores() -> int | None:
    """Distinct (package, core) pairs among the online CPUs."""
    pairs = set()
    for cpu in sorted(SYSFS_CPU.glob("cpu[0-9]*")):
        core, package = _read(cpu / "topology" / "core_id"), _read(cpu / "topology" / "physical_package_id")
        if core is not None:
            pairs.add((package, core))
    return len(pairs) or None


def _clock_mhz(fields: dict[str, str]) -> tuple[float | None, str]:
    """The highest clock the system names, and where it comes from."""
    maximum = _read(SYSFS_CPU / "cpu0" / "cpufreq" / "cpuinfo_max_freq")
    if maximum and maximum.isdigit():
        return int(maximum) / 1e3, "cpufreq cpuinfo_max_freq (the highest boost clock)"
    reported = fields.get("cpu MHz")
    try:
        value = float(reported) if reported else None
    except ValueError:
        value = None
    if value:
        return value, ("/proc/cpuinfo 'cpu MHz' (without cpufreq, as under a hypervisor, this is the nominal clock; "
                       "the boost clock is unknown)")
    return None, "unknown"


def vector_bits(flags: set[str]) -> int:
    """Width of the widest floating-point vector the instruction set offers."""
    if "avx512f" in flags:
        return 512
    if "avx" in flags:
        return 256
    return 128  # SSE2 on x86-64, NEON (asimd) on Arm


@cache
def describe() -> dict[str, Any]:
    """Model, vendor, cores, caches, flags, vector width and clock of this machine's CPU."""
    fields = cpuinfo_fields(_read(PROC_CPUINFO) or "")
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    found = caches()
    llc = max(found, key=lambda c: c["level"]) if found else None
    clock, clock_source = _clock_mhz(fields)
    return {
        "name": fields.get("model name") or platform.processor() or platform.machine(),
        "vendor": fields.get("vendor_id"),
        "family": fields.get("cpu family"),
        "model": fields.get("model"),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "usable_cpus": usable_cpus(),
        "cores": _physical_cores(),
        "caches": found,
        "llc_bytes": llc["bytes"] if llc else None,
        "flags": [flag for flag in VECTOR_FLAGS if flag in flags],
        "vector_bits": vector_bits(flags),
        "clock_mhz": clock,
        "clock_source": clock_source,
    }


def llc_bytes() -> int:
    """The last-level cache's size (FALLBACK_LLC_BYTES where the system does not say)."""
    return describe()["llc_bytes"] or FALLBACK_LLC_BYTES


def total_cache_bytes() -> int:
    """What all caches of the machine hold at most: the last level plus every core's private levels."""
    info = describe()
    cores = info["usable_cpus"]
    private = sum(c["bytes"] for c in info["caches"] if c["shared_by"] == 1)
    return llc_bytes() + cores * private


def blas_description(threads: int) -> str:
    """Which BLAS numpy calls, e.g. "scipy-openblas 0.3.31 through numpy 2.4.6 matmul, 1 thread"."""
    library = "numpy's BLAS"
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        library = f"{blas.get('name', 'BLAS')} {blas.get('version', '')}".strip()
    except (TypeError, KeyError, ValueError):
        pass  # an older numpy prints its configuration instead of returning it
    return f"{library} through numpy {np.__version__} matmul, {threads} thread{'s' * (threads != 1)}"
