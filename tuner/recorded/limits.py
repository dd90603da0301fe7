"""What a recorded row may hold, checked while a recording is read, so that memory is bounded by what is kept
and no impossible number is replayed.

A recording keeps each configuration's timed runs in one table of configurations × the most runs of any
configuration, so one configuration's runs set the width for all: a configuration may hold at most
MAX_RUNS_PER_CONFIGURATION runs, and the table at most MAX_RUN_CELLS cells. A time in ms must be finite and at
least MIN_TIME_MS (no kernel launch ends within a nanosecond; a smaller time would make a performance of
10³⁵ GFLOP/s the best); a cost (compile, verification, framework time) must be finite and not negative.
"""

from __future__ import annotations

import math
from typing import Any

from tuner.errors import TunerError

MAX_RUNS_PER_CONFIGURATION = 1_000
"""Kernel Tuner times 7 runs by default, the shipped recordings 32."""
MAX_RUN_CELLS = 2**25
"""256 MiB of runs in all (the largest shipped recording holds 17,956 × 32)."""
MIN_TIME_MS = 1e-6
MAX_TEXT = 256
"""Characters of a parameter's name or text value (each becomes part of every configuration key and table)."""
MAX_PARAMETERS = 64


def checked_runs(value: Any, where: str) -> list[float]:
    """The runs of a recorded list (none where it is no list): each a time, and no more than the limit."""
    if not isinstance(value, list):
        return []
    if len(value) > MAX_RUNS_PER_CONFIGURATION:
        raise TunerError(f"{where} holds {len(value):,} timed runs, more than the {MAX_RUNS_PER_CONFIGURATION:,} a "
                         f"recording may hold per configuration")
    runs = []
    for i, run in enumerate(value):
        refusal = time_refusal(run)
        if refusal is not None:
            raise TunerError(f"{where}: run {i} {refusal}")
        runs.append(float(run))
    return runs


def check_run_cells(configurations: int, width: int, source: str) -> None:
    if configurations * width > MAX_RUN_CELLS:
        raise TunerError(f"{source}: {configurations:,} configurations of up to {width:,} timed runs are more than "
                         f"the {MAX_RUN_CELLS:,} runs a recording may hold in all")


def text_refusal(names: tuple[str, ...], values: tuple[tuple[Any, ...], ...]) -> str | None:
    """Why the parameters' names and text values are past the limits, or None."""
    if len(names) > MAX_PARAMETERS:
        return f"its {len(names)} parameters are more than the {MAX_PARAMETERS} a recording may have"
    for name, column in zip(names, values, strict=True):
        long = next((v for v in (name, *column) if isinstance(v, str) and len(v) > MAX_TEXT), None)
        if long is not None:
            return (f"parameter '{name[:40]}': the text '{long[:40]}…' has {len(long):,} characters, more than the "
                    f"{MAX_TEXT} a parameter's name or value may have")
    return None


def time_refusal(value: Any) -> str | None:
    """Why ``value`` is no time in ms, or None."""
    if not _is_number(value):
        return f"is {value!r}, not a time in ms"
    if not math.isfinite(value) or value < MIN_TIME_MS:
        return f"is {value!r} ms; a time must be finite and at least {MIN_TIME_MS:g} ms"
    return None


def cost_refusal(value: Any) -> str | None:
    """Why ``value`` is no recorded cost (a duration that is not negative), or None; None where not recorded."""
    if value is None:
        return None
    if not _is_number(value) or not math.isfinite(value) or value < 0:
        return f"is {value!r}; a recorded duration must be a finite number, not negative"
    return None


def check_costs(record: dict[str, Any], fields: tuple[str, ...], where: str) -> None:
    """Each recorded duration among ``fields`` of ``record`` must be a cost."""
    for field in fields:
        refusal = cost_refusal(record.get(field))
        if refusal is not None:
            raise TunerError(f"{where}: field '{field}' {refusal}")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
