"""The arithmetic of an energy counter read by the host: power over whole update periods, wrap-around, and the
counter's own resolution and update interval.

An energy counter (NVML's total energy in mJ, RAPL's ``energy_uj``) is a running total that the device updates
now and then: a reading between two updates says nothing new. Power is therefore taken between two *changes*
of the counter, which are the update instants as the host saw them (within one polling interval): the energy
between them was integrated over exactly the time between them, whatever the update interval is. Inside a busy
window the first change seen is skipped, so that no part of the period it closes lies before the window even
where the counter lags its integration by up to one period.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Reading:
    at_s: float
    """Host clock (``time.perf_counter``) at the reading: the middle of the call that read it."""
    value: int
    """The counter's value, in its unit (mJ for NVML, µJ for RAPL)."""
    took_s: float = 0.0
    """How long the call took."""


@dataclass(frozen=True)
class CountedSpan:
    """What the counter says of a busy window: its mean rate between two of its changes inside the window."""

    rate: float
    """Counter units per second (mJ/s = mW for NVML)."""
    span_s: float
    """Seconds between the two changes."""
    updates: int
    """Update periods between them (changes seen; two updates between two readings count as one)."""


def counter_delta(before: int, after: int, largest: int | None = None) -> int:
    """``after − before`` for a counter whose values run from 0 to ``largest`` and then start at 0 again
    (RAPL's ``max_energy_range_uj``); None: a counter that never wraps. One wrap at most is assumed: at a package's
    few hundred watts a RAPL counter of the usual 262 kJ range wraps every quarter of an hour or so."""
    if after >= before:
        return after - before
    if largest is None:
        raise ValueError(f"the counter went backwards ({before} then {after}) and does not wrap")
    return largest - before + 1 + after


def changes(readings: Sequence[Reading]) -> list[Reading]:
    """The readings that found a new value (the first reading of all excluded)."""
    return [now for before, now in zip(readings, readings[1:], strict=False) if now.value != before.value]


def counted_span(readings: Sequence[Reading], start_s: float, end_s: float, min_updates: int) -> CountedSpan | None:
    """The counter's mean rate over whole update periods within the busy window [start_s, end_s] (host clock),
    skipping the first change inside it; None when fewer than ``min_updates`` periods lie inside."""
    inside = [c for c in changes(readings) if start_s < c.at_s <= end_s][1:]
    if len(inside) < 2 or len(inside) - 1 < min_updates:
        return None
    first, last = inside[0], inside[-1]
    span = last.at_s - first.at_s
    if span <= 0:
        return None
    return CountedSpan((last.value - first.value) / span, span, len(inside) - 1)


@dataclass(frozen=True)
class CounterProperties:
    """How fine a counter is, from a series of readings."""

    readings: int
    changes: int
    step: int | None
    """The smallest increment seen (counter units)."""
    quantum: int | None
    """The greatest common divisor of the increments: the finest step the counter can take, as far as seen."""
    update_interval_s: float | None
    """The median time between changes."""
    update_interval_min_s: float | None
    update_interval_max_s: float | None
    read_s: float | None
    """The median time one reading takes."""
    rate: float | None
    """Mean counter units per second from the first change to the last."""

    def as_dict(self) -> dict[str, float | int | None]:
        return dict(self.__dict__)


def counter_properties(readings: Sequence[Reading]) -> CounterProperties:
    """The resolution and update interval a series of readings shows (taken faster than the counter updates)."""
    found = changes(readings)
    steps = [now.value - before.value for before, now in zip(readings, readings[1:], strict=False)
             if now.value > before.value]
    intervals = [b.at_s - a.at_s for a, b in zip(found, found[1:], strict=False)]
    took = [r.took_s for r in readings if r.took_s > 0]
    rate = None
    if len(found) >= 2 and found[-1].at_s > found[0].at_s:
        rate = (found[-1].value - found[0].value) / (found[-1].at_s - found[0].at_s)
    return CounterProperties(
        readings=len(readings),
        changes=len(found),
        step=min(steps) if steps else None,
        quantum=math.gcd(*steps) if steps else None,
        update_interval_s=statistics.median(intervals) if intervals else None,
        update_interval_min_s=min(intervals) if intervals else None,
        update_interval_max_s=max(intervals) if intervals else None,
        read_s=statistics.median(took) if took else None,
        rate=rate,
    )
