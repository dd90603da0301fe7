"""What each evaluated trial shows Optuna's tools as scalar user attributes, beside its ``record``.

optuna-dashboard and ``Study.trials_dataframe`` sort and filter trials by scalar attributes; the ``record`` (the
results row, rebuilt) is one nested mapping they can only print. So each evaluation also keeps its outcome, median
time and performance as attributes of their own (a write each, beside the record's: three, not one per field of the
record), and the record leaves out what is empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tuner.optuna_attrs import PERFORMANCE_ATTR, STATUS_ATTR, TIME_ATTR
from tuner.results.record import Record

OPTIONAL = ("device_s", "transferred_from")
"""The record's fields that may be absent."""


def scalar_attrs(record: Record, performance: float | None) -> dict[str, Any]:
    """The evaluation's filterable attributes: status, and time_ms and performance where it ran."""
    measurement = record.measurement
    attrs: dict[str, Any] = {STATUS_ATTR: measurement.status.value}
    if measurement.timing is not None:
        attrs[TIME_ATTR] = measurement.timing.median_ms
    if performance is not None:
        attrs[PERFORMANCE_ATTR] = performance
    return attrs


def stored_record(record: Record) -> dict[str, Any]:
    """The record as a trial keeps it: its measurement without empty entries, and no empty optional field
    (:meth:`Record.from_attrs` reads them as absent)."""
    attrs = record.attrs()
    attrs["measurement"] = compact(attrs["measurement"])
    return {key: value for key, value in attrs.items() if value is not None or key not in OPTIONAL}


def compact(value: Any) -> Any:
    """A JSON value without the entries of its mappings that are None (at every depth)."""
    if isinstance(value, Mapping):
        return {key: compact(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [compact(item) for item in value]
    return value
