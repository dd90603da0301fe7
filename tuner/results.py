"""The results table: one row per evaluation, its documented schema, and its files in a run folder.

Columns (stable names; ``p_<NAME>`` holds each kernel parameter, empty where a family lacks it):

=====================  ==========================================================================
experiment             experiment name
study                  Optuna study name (one per problem and dtype), or ``baseline`` for cuBLAS
sampler                search strategy that proposed the row (``baseline`` for cuBLAS)
trial                  Optuna trial number in its study (-1 for baselines)
wall_offset_s          seconds from the start of the run (across resumes: of the first run)
measured_at            UTC time of the evaluation, ISO 8601
metadata_id            key into ``metadata.json`` (device, versions, commit, settings)
config_key             ``<problem>/<family>/<dtype>/<params>``, unique within an experiment
problem, M, N, K       problem size: C (M×N) = A (M×K) · B (K×N)
family, dtype          kernel family (template) and element type
p_<NAME>               the family's parameter values
block, grid            launch geometry, ``x×y×z``
status                 ok | invalid | compile_error | wrong | crashed
reason                 why, when the status is not ok (compiler message, fault text, constraint)
verify_error           ‖C − ref‖/‖ref‖ (floats) or number of wrong elements (int32)
time_median_ms …       time_mean_ms, time_min_ms, time_stdev_ms, time_cv, samples (count)
samples_ms             the raw samples, as a JSON list
throttled_samples      samples taken while the SM clock was below its clock at the start
sm_clock_mhz_before/after
flops                  2·M·N·K
bytes_model            global-memory bytes under the family's no-cache model
intensity              flops / bytes_model (FLOP/B)
gflops                 flops / median time
bandwidth_gbs          bytes_model / median time
pct_flops_ceiling      gflops as % of the device's measured FMA ceiling for the dtype
pct_bandwidth_ceiling  bandwidth_gbs as % of the device's measured DRAM bandwidth
compile_time_s         seconds to compile (0 when it came from the cache)
registers, shared_bytes, local_bytes, spill_bytes   the compiler's resource report
=====================  ==========================================================================
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

BASE_COLUMNS: tuple[str, ...] = (
    "experiment", "study", "sampler", "trial", "wall_offset_s", "measured_at", "metadata_id", "config_key",
    "problem", "M", "N", "K", "family", "dtype",
)
MEASURE_COLUMNS: tuple[str, ...] = (
    "block", "grid", "status", "reason", "verify_error",
    "time_median_ms", "time_mean_ms", "time_min_ms", "time_stdev_ms", "time_cv", "samples", "samples_ms",
    "throttled_samples", "sm_clock_mhz_before", "sm_clock_mhz_after",
    "flops", "bytes_model", "intensity", "gflops", "bandwidth_gbs", "pct_flops_ceiling", "pct_bandwidth_ceiling",
    "compile_time_s", "registers", "shared_bytes", "local_bytes", "spill_bytes",
)
RESULTS_PARQUET = "results.parquet"
RESULTS_CSV = "results.csv"
METADATA_JSON = "metadata.json"


def param_columns(df: pd.DataFrame) -> list[str]:
    return sorted(c for c in df.columns if c.startswith("p_"))


def to_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows in schema order: base columns, parameters, then measurements."""
    df = pd.DataFrame(rows)
    for column in (*BASE_COLUMNS, *MEASURE_COLUMNS):
        if column not in df.columns:
            df[column] = pd.NA
    ordered = [*BASE_COLUMNS, *param_columns(df), *MEASURE_COLUMNS]
    extra = [c for c in df.columns if c not in ordered]
    return df[ordered + extra].reset_index(drop=True)


def save(df: pd.DataFrame, metadata: dict[str, Any], folder: str | Path) -> None:
    """Write results.parquet, results.csv and metadata.json, each replaced atomically."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, write in (
        (RESULTS_PARQUET, lambda p: df.to_parquet(p, index=False)),
        (RESULTS_CSV, lambda p: df.to_csv(p, index=False)),
        (METADATA_JSON, lambda p: p.write_text(json.dumps(metadata, indent=2, sort_keys=True, default=str))),
    ):
        partial = folder / f".{name}.partial"
        write(partial)
        partial.replace(folder / name)


def load(path: str | Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A recorded table and its metadata, from a run folder or a results.parquet file."""
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    table = path / RESULTS_PARQUET if path.is_dir() else path
    df = pd.read_parquet(table)
    meta_file = folder / METADATA_JSON
    metadata = json.loads(meta_file.read_text()) if meta_file.exists() else {}
    return df, metadata
