"""The results table in one namespace, as its many readers and writers import it
(``from tuner.results import table as results``): the schema (:mod:`tuner.results.schema`), one row
(:mod:`tuner.results.record`), a configuration's cost and geometry (:mod:`tuner.results.analytics`), performance and
the best rows (:mod:`tuner.results.objective`), the environment of the measurements
(:mod:`tuner.results.environment`) and the files of a run folder (:mod:`tuner.results.files`)."""

from __future__ import annotations

from tuner.results.analytics import Analytics, analytics_of, config_cost
from tuner.results.environment import baseline_library, ceilings_under_load, measuring_device, on_cpu
from tuner.results.files import (
    MAX_METADATA_BYTES,
    METADATA_JSON,
    RESULTS_CSV,
    RESULTS_PARQUET,
    load,
    load_metadata,
    load_table,
    save,
    spreadsheet_safe,
)
from tuner.results.objective import best_rows, performance, unit_of
from tuner.results.objectives import objective_of
from tuner.results.record import (
    Record,
    baseline_config,
    config_from_dict,
    config_of_row,
    config_to_dict,
    is_evaluation,
    measurement_from_row,
    row,
    row_params,
    trial_record,
)
from tuner.results.schema import (
    BASE_COLUMNS,
    BASELINE,
    BASELINE_FAMILY,
    BOOLEAN_COLUMNS,
    INTEGER_COLUMNS,
    MEASURE_COLUMNS,
    TEXT_COLUMNS,
    param_columns,
    to_frame,
)

__all__ = [
    "BASELINE", "BASELINE_FAMILY", "BASE_COLUMNS", "BOOLEAN_COLUMNS", "INTEGER_COLUMNS",
    "MAX_METADATA_BYTES", "MEASURE_COLUMNS", "METADATA_JSON", "RESULTS_CSV", "RESULTS_PARQUET", "TEXT_COLUMNS",
    "Analytics", "Record", "analytics_of", "baseline_config", "baseline_library", "best_rows", "ceilings_under_load",
    "config_cost", "config_from_dict", "config_of_row", "config_to_dict", "is_evaluation", "load", "load_metadata",
    "load_table", "measurement_from_row", "measuring_device", "objective_of", "on_cpu", "param_columns",
    "performance", "row", "row_params", "save", "spreadsheet_safe", "to_frame", "trial_record", "unit_of",
]
