"""The results table's schema: its columns, their order and their types.

What each column holds, and what baseline and statically invalid rows carry: the README's section on the results
table's columns.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from tuner.energy.columns import ENERGY_COLUMNS, ENERGY_INTEGER_COLUMNS, ENERGY_TEXT_COLUMNS

BASE_COLUMNS: tuple[str, ...] = (
    "experiment", "study", "strategy", "transferred_from", "trial", "wall_offset_s", "measured_at", "metadata_id",
    "config_key", "problem", "M", "N", "K", "family", "dtype",
)
MEASURE_COLUMNS: tuple[str, ...] = (
    "block", "grid", "status", "reason", "verify_error",
    "time_median_ms", "time_mean_ms", "time_min_ms", "time_stdev_ms", "time_cv", "samples", "samples_ms",
    "throttled_samples", "sm_clock_mhz_before", "sm_clock_mhz_after",
    "flops", "bytes_model", "intensity", "gflops", "bandwidth_gbs", "effective_bandwidth_gbs", "performance",
    "pct_flops_ceiling",
    "pct_bandwidth_ceiling",
    "compile_time_s", "registers", "shared_bytes", "local_bytes", "spill_bytes",
    "spill_store_bytes", "spill_load_bytes", "code_bytes", "vectorized_loops", "device_s",
    "other_cpus", "other_gpu_processes", "other_gpu_percent", "under_load",
    "device_name", "gpu_name", "gpu_uuid", "library",
    *ENERGY_COLUMNS,
)
TEXT_COLUMNS: frozenset[str] = frozenset({
    "experiment", "study", "strategy", "transferred_from", "measured_at", "metadata_id", "config_key", "problem",
    "family", "dtype", "block", "grid", "status", "reason", "samples_ms", "device_name", "gpu_name", "gpu_uuid",
    "library",
}) | ENERGY_TEXT_COLUMNS
INTEGER_COLUMNS: frozenset[str] = frozenset({
    "trial", "M", "N", "K", "samples", "throttled_samples", "flops", "bytes_model",
    "registers", "shared_bytes", "local_bytes", "spill_bytes", "spill_store_bytes", "spill_load_bytes",
    "code_bytes", "vectorized_loops", "other_gpu_processes",
}) | ENERGY_INTEGER_COLUMNS
BOOLEAN_COLUMNS: frozenset[str] = frozenset({"under_load"})
BASELINE_FAMILY = "baseline"
"""The family of the vendor library's rows (cuBLAS on the GPU, numpy's BLAS on the CPU)."""
BASELINE = "baseline"  # the study and strategy names of the baseline rows



def param_columns(df: pd.DataFrame) -> list[str]:
    return sorted(c for c in df.columns if c.startswith("p_"))


def _parameter_type(column: pd.Series) -> str:
    """Int64 for integer parameters, boolean for true/false ones, string for text (or a mix)."""
    values = column.dropna()
    if all(isinstance(v, bool) for v in values):
        return "boolean"
    if all(isinstance(v, int | float) and not isinstance(v, bool) and float(v).is_integer() for v in values):
        return "Int64"
    return "string"


def to_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows in schema order (base columns, parameters, then measurements), each column in its documented type."""
    df = pd.DataFrame(rows)
    for column in (*BASE_COLUMNS, *MEASURE_COLUMNS):
        if column not in df.columns:
            df[column] = pd.NA
    size_columns = [c for c in df.columns if str(c).isupper() and c not in BASE_COLUMNS]
    ordered = [*BASE_COLUMNS, *size_columns, *param_columns(df), *MEASURE_COLUMNS]
    extra = [c for c in df.columns if c not in ordered]
    df = df[ordered + extra].reset_index(drop=True)
    for column in df.columns:
        if column in TEXT_COLUMNS:
            df[column] = df[column].astype("string")
        elif column.startswith("p_"):
            df[column] = df[column].astype(_parameter_type(df[column]))
        elif column in INTEGER_COLUMNS or column in size_columns:
            df[column] = df[column].astype("Int64")
        elif column in BOOLEAN_COLUMNS:
            df[column] = df[column].astype("boolean")
        elif column not in extra:
            df[column] = pd.to_numeric(df[column], errors="coerce").astype("float64")
    return df
