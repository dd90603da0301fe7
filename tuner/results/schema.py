"""The results table's schema: its columns, their order and their types.

Columns (stable names; ``p_<NAME>`` holds each kernel parameter, empty where a family lacks it):

=====================  ==========================================================================
experiment             experiment name
study                  Optuna study name (one per problem and dtype), or ``baseline`` for the vendor baseline
strategy               search strategy of the row's study (``baseline`` for the vendor baseline)
transferred_from       the earlier study whose fastest configurations the row's came from (``search.transfer``);
                       empty where the strategy proposed it
trial                  Optuna trial number in its study (-1 for baselines)
wall_offset_s          seconds from the start of the run (across resumes: of the first run)
measured_at            UTC time of the evaluation, ISO 8601
metadata_id            key into ``metadata.json`` (device, versions, commit, settings)
config_key             ``<problem>/<family>/<dtype>/<params>``, unique within an experiment (``name=value`` pairs;
                       a text that is not a plain word written as a JSON string, :mod:`tuner.names.key_text`)
problem, M, N, K       problem size: C (M×N) = A (M×K) · B (K×N); a family of another kernel has a column per
                       size it takes
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
effective_bandwidth_gbs  the compulsory bytes (inputs read once, outputs written once) / median time
performance            what the search maximizes: gflops, or effective_bandwidth_gbs for a family whose kernel does
                       no arithmetic (a transpose, say)
pct_flops_ceiling      gflops as % of the device's measured peak for the dtype (tuner.peaks.compute_peak: the higher
                       of the CUDA cores' multiply-add rate and the tensor cores' rate, mma.sync's or wgmma's)
pct_bandwidth_ceiling  bandwidth_gbs as % of the device's measured DRAM bandwidth
compile_time_s         seconds to compile (0 when it came from the cache)
registers, shared_bytes, local_bytes, spill_bytes   the compiler's resource report (spill_bytes: stores + loads)
spill_store_bytes …    spill_load_bytes: the two halves of spill_bytes as ptxas reports them
code_bytes             machine code of a C kernel's library (its .text section)
vectorized_loops       loops the C compiler reports as vectorized (GCC)
device_s               seconds the device spent verifying and timing this configuration
gpu_name, gpu_uuid     the device that measured the row (from its environment; a replayed row: the recording's)
energy_j, power_w …    one launch's energy and how it was measured, where it was (tuner.energy.columns)
dram_bytes, l2_bytes …  the hardware counters of a counted configuration (joined from the folder's counters.parquet
                       when the table is saved; tuner.counters.store lists them)
other_cpus             CPUs' worth of time other processes took while the row was verified and timed
                       (:mod:`tuner.measure.machine_load`; empty where not watched: GPU rows, older tables)
other_gpu_processes    other processes on the measuring GPU meanwhile, and the highest share of its SMs one of
other_gpu_percent      them used (NVML; empty without it)
under_load             whether that other work may have slowed the measurement (its numbers are flagged)
device_name            the device that measured the row, GPU or CPU (from its environment; a replayed row: the
                       recording's)
gpu_name, gpu_uuid     the GPU that measured the row (empty for a CPU's)
library                what a baseline row measured (cuBLAS, numpy's BLAS, ...; empty for the other rows)
=====================  ==========================================================================

Baseline rows (family ``baseline``) hold the
vendor library's GEMM on the same problem: no parameters and no launch geometry; their ``bytes_model`` is the
compulsory traffic (A and B read once, C written once). Statically invalid rows still carry the analytical
columns (flops, bytes_model, intensity) of the configuration that was rejected, unless its values break a
precondition of the family's cost model (e.g. a tile size of 0).
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
