"""The results table's energy columns: one launch's energy and what it was measured under.

=====================  ==========================================================================
energy_j               energy of one launch (J): the window's mean power × its time per launch
power_w                mean power over the whole update periods of the counter inside the window (W)
gflops_per_watt        GFLOP/s per watt, i.e. GFLOP per joule of one launch (empty without arithmetic)
energy_time_ms         the window's time per launch (back to back, hot; the timing's median is cold)
energy_launches        launches in the window
energy_window_s        the window's length (the device's clock on the GPU)
energy_counted_s       the part of it the counter's readings span
energy_updates         update periods of the counter inside that span (1 on the CPU: a reading at each end)
energy_source          nvml (the GPU board's counter) or rapl (the CPU packages' and their DRAM's)
energy_sm_clock_mhz    the SM clock read during the window
power_limit_w          the power limit the driver enforced during the window (read, never set)
=====================  ==========================================================================

Empty where energy was not measured (``measure.energy`` off, no counter on the device, a failed evaluation,
a recording made before energy was measured).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from tuner.energy.measured import Energy

ENERGY_COLUMNS: tuple[str, ...] = (
    "energy_j", "power_w", "gflops_per_watt", "energy_time_ms", "energy_launches", "energy_window_s",
    "energy_counted_s", "energy_updates", "energy_source", "energy_sm_clock_mhz", "power_limit_w",
)
ENERGY_TEXT_COLUMNS: frozenset[str] = frozenset({"energy_source"})
ENERGY_INTEGER_COLUMNS: frozenset[str] = frozenset({"energy_launches", "energy_updates"})


def energy_cells(energy: Energy | None, flops: int | None) -> dict[str, Any]:
    """The energy columns of one row (all None without an energy measurement); ``flops``: of one launch."""
    if energy is None:
        return dict.fromkeys(ENERGY_COLUMNS)
    return {
        "energy_j": energy.joules,
        "power_w": energy.power_w,
        "gflops_per_watt": flops / energy.joules / 1e9 if flops and energy.joules > 0 else None,
        "energy_time_ms": energy.seconds_per_launch * 1e3,
        "energy_launches": energy.launches,
        "energy_window_s": energy.window_s,
        "energy_counted_s": energy.counted_s,
        "energy_updates": energy.updates,
        "energy_source": energy.source,
        "energy_sm_clock_mhz": energy.sm_clock_mhz,
        "power_limit_w": energy.power_limit_w,
    }


def _number(value: Any) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def energy_from_row(data: Mapping[str, Any]) -> Energy | None:
    """The energy measurement a row records (None where its energy columns are empty or absent)."""
    joules, power = _number(data.get("energy_j")), _number(data.get("power_w"))
    launches, window = _number(data.get("energy_launches")), _number(data.get("energy_window_s"))
    if joules is None or power is None or launches is None or window is None:
        return None
    source = data.get("energy_source")
    counted, updates = _number(data.get("energy_counted_s")), _number(data.get("energy_updates"))
    return Energy(joules=joules, power_w=power, launches=int(launches), window_s=window,
                  counted_s=window if counted is None else counted, updates=0 if updates is None else int(updates),
                  source=source if isinstance(source, str) else "",
                  sm_clock_mhz=_number(data.get("energy_sm_clock_mhz")),
                  power_limit_w=_number(data.get("power_limit_w")))
