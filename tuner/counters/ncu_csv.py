"""Nsight Compute's ``--csv --page raw`` output read as numbers in base units.

The raw page is a CSV table: a header row of metric names (after ``ID``, ``Kernel Name`` and the other columns
that describe the launch), a row of units, then one row per profiled kernel, in the order they were profiled.
Values use thousands separators (``537,018,368``) and units carry whatever prefix ncu chose for them
(``Gbyte``, ``msecond``, ``cycle/nsecond``); ``n/a`` stands for a value ncu could not collect. Lines that ncu or
the profiled program print before the table (``==PROF==``, ``==WARNING==``) are skipped.
"""

from __future__ import annotations

import csv
import io
from typing import TypeAlias

from tuner.errors import TunerError

RawMetrics: TypeAlias = dict[str, tuple[str, str]]
"""One profiled kernel: metric (or column) name → (value as printed, unit)."""

PREFIXES = {"": 1.0, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "m": 1e-3, "u": 1e-6, "n": 1e-9}
BASE_UNITS = {"second": ("second", "s"), "hertz": ("hz", "Hz", "cycle/second", "cycle/s"), "byte": ("byte", "B")}
COUNT_UNITS = ("inst", "sector", "request", "wavefront", "warp", "cycle")


def parse_ncu_raw(text: str) -> list[RawMetrics]:
    """Every profiled kernel of ``ncu --csv --page raw`` output, in profiling order; TunerError without one."""
    start = text.find('"ID"')
    rows = list(csv.reader(io.StringIO(text[start:] if start >= 0 else text)))
    rows = [row for row in rows if row]
    if len(rows) < 3:
        raise TunerError("Nsight Compute's report has no profiled kernel in it")
    header, units = rows[0], rows[1]
    kernels = []
    for values in rows[2:]:
        if len(values) < 2 or values[0].startswith("=="):
            continue
        kernels.append({name: (value, unit) for name, unit, value in zip(header, units, values, strict=False)})
    if not kernels:
        raise TunerError("Nsight Compute's report has no profiled kernel in it")
    return kernels


def number(metrics: RawMetrics, name: str) -> float | None:
    """A metric as a float (ncu writes thousands with commas), None where the report lacks it or has no value."""
    if name not in metrics:
        return None
    try:
        return float(metrics[name][0].replace(",", ""))
    except ValueError:
        return None


def unit_factor(unit: str, bases: tuple[str, ...]) -> float | None:
    """What a value in ``unit`` is multiplied by to be in the first of ``bases``; None for another unit."""
    for base in bases:
        if "/" in base:
            if "/" not in unit or unit.split("/", 1)[0] != base.split("/", 1)[0]:
                continue
            per = unit_factor(unit.split("/", 1)[1], (base.split("/", 1)[1],))
            if per:
                return 1 / per
        elif unit.endswith(base) and unit[: len(unit) - len(base)] in PREFIXES:
            return PREFIXES[unit[: len(unit) - len(base)]]
    return None


def scaled(metrics: RawMetrics, name: str, to: str) -> float | None:
    """A metric in seconds, hertz or bytes (``to``), whatever prefix ncu chose for it (``msecond``,
    ``Ghz``, ``cycle/nsecond``, ``Mbyte``); None where the report lacks it or has another unit."""
    value = number(metrics, name)
    factor = unit_factor(metrics[name][1], BASE_UNITS[to]) if value is not None else None
    return None if factor is None or value is None else value * factor


def count(metrics: RawMetrics, name: str) -> float | None:
    """A counted quantity (instructions, wavefronts, sectors), with whatever prefix ncu chose for its unit
    (``Minst``); None where the report lacks it."""
    value = number(metrics, name)
    if value is None:
        return None
    unit = metrics[name][1]
    prefix = next((unit[: -len(base)] for base in COUNT_UNITS if unit.endswith(base)), "")
    return value * PREFIXES.get(prefix, 1.0)


def first_of(metrics: RawMetrics, *names: str) -> float | None:
    """The first of several names for a figure that the report has (names differ between ncu versions)."""
    return next((v for n in names if (v := number(metrics, n)) is not None), None)
