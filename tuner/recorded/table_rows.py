"""The rows of a recorded results table, checked before any is replayed or read as a recorded space.

A row must have a known status; an ``ok`` row a median time that is a time (:mod:`tuner.recorded.limits`); its
samples, where recorded, a JSON list of at most the limit's times; its compile and device times, where recorded,
durations that are not negative. The first row that breaks one is refused with its position and configuration key,
so that a poisoned row is never replayed as ``ok``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd

from tuner.errors import TunerError
from tuner.measure.measurement import Status
from tuner.recorded.limits import checked_runs, cost_refusal, time_refusal

STATUSES = frozenset(s.value for s in Status)


def check_table_rows(df: pd.DataFrame, source: object) -> None:
    """Refuse the first row of ``df`` (read from ``source``) that no recording may hold."""
    for position, data in enumerate(df.to_dict("records")):
        refusal = row_refusal(data)
        if refusal is not None:
            raise TunerError(f"{source}: row {position} of the results table (configuration "
                             f"'{data.get('config_key')}'): {refusal}; a recorded row is replayed only as it was "
                             f"measured")


def row_refusal(data: dict[str, Any]) -> str | None:
    """Why one recorded row cannot be replayed, or None."""
    status = data.get("status")
    if status not in STATUSES:
        return f"the status {status!r} is none of {', '.join(sorted(STATUSES))}"
    if status == Status.OK.value:
        refusal = time_refusal(_number(data.get("time_median_ms")))
        if refusal is not None:
            return f"it is ok but its median time {refusal}"
    for column in ("compile_time_s", "device_s"):
        refusal = cost_refusal(_number(data.get(column)))
        if refusal is not None:
            return f"column '{column}' {refusal}"
    return _samples_refusal(data.get("samples_ms"))


def _samples_refusal(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return None
    try:
        samples = json.loads(value) if isinstance(value, str) else None
    except (json.JSONDecodeError, RecursionError):
        samples = None
    if not isinstance(samples, list):
        return f"column 'samples_ms' holds {str(value)[:60]!r}, not a JSON list of times in ms"
    try:
        checked_runs(samples, "column 'samples_ms'")
    except TunerError as exc:
        return str(exc)
    return None


def _number(value: Any) -> Any:
    """A table's number as Python's (numpy scalars unwrapped); NaN and NA as None."""
    if value is None or value is pd.NA:
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value
