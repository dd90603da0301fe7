"""The results table: one row per evaluation, its documented schema, and its files in a run folder.

Columns (stable names; ``p_<NAME>`` holds each kernel parameter, empty where a family lacks it):

=====================  ==========================================================================
experiment             experiment name
study                  Optuna study name (one per problem and dtype), or ``baseline`` for the vendor baseline
sampler                search strategy of the row's study (``baseline`` for the vendor baseline)
transferred_from       the earlier study whose fastest configurations the row's came from (``search.transfer``);
                       empty where the strategy proposed it
trial                  Optuna trial number in its study (-1 for baselines)
wall_offset_s          seconds from the start of the run (across resumes: of the first run)
measured_at            UTC time of the evaluation, ISO 8601
metadata_id            key into ``metadata.json`` (device, versions, commit, settings)
config_key             ``<problem>/<family>/<dtype>/<params>``, unique within an experiment
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

Baseline rows (family ``baseline``; tables written before name it ``cublas``, and are read as ``baseline``) hold the
vendor library's GEMM on the same problem: no parameters and no launch geometry; their ``bytes_model`` is the
compulsory traffic (A and B read once, C written once). Statically invalid rows still carry the analytical
columns (flops, bytes_model, intensity) of the configuration that was rejected, unless its values break a
precondition of the family's cost model (e.g. a tile size of 0).

A row is built from a :class:`Record`: one evaluation as the study stores it in its trial's user attributes,
so the whole table can be rebuilt from the Optuna storage.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from optuna.trial import FrozenTrial

from tuner import atomic_file, input_file
from tuner.config import DTYPE_BYTES, MATMUL_DIMS, Config, ParamValue, Problem
from tuner.energy.columns import (
    ENERGY_COLUMNS,
    ENERGY_INTEGER_COLUMNS,
    ENERGY_TEXT_COLUMNS,
    energy_cells,
    energy_from_row,
)
from tuner.energy.front import objective_score
from tuner.energy.objective import DEFAULT, Objective
from tuner.errors import TunerError
from tuner.kernels import matmul
from tuner.kernels.discovery import families, get_family
from tuner.kernels.model import Cost, cost
from tuner.kernels.render import launch
from tuner.measure.machine_load import Load
from tuner.measure.measurement import Measurement, Resources, Status, Timing
from tuner.peaks import compute_peak

BASE_COLUMNS: tuple[str, ...] = (
    "experiment", "study", "sampler", "transferred_from", "trial", "wall_offset_s", "measured_at", "metadata_id",
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
    "experiment", "study", "sampler", "transferred_from", "measured_at", "metadata_id", "config_key", "problem",
    "family", "dtype", "block", "grid", "status", "reason", "samples_ms", "device_name", "gpu_name", "gpu_uuid",
    "library",
}) | ENERGY_TEXT_COLUMNS
INTEGER_COLUMNS: frozenset[str] = frozenset({
    "trial", "M", "N", "K", "samples", "throttled_samples", "flops", "bytes_model",
    "registers", "shared_bytes", "local_bytes", "spill_bytes", "spill_store_bytes", "spill_load_bytes",
    "code_bytes", "vectorized_loops", "other_gpu_processes",
}) | ENERGY_INTEGER_COLUMNS
BOOLEAN_COLUMNS: frozenset[str] = frozenset({"under_load"})
RESULTS_PARQUET = "results.parquet"
RESULTS_CSV = "results.csv"
METADATA_JSON = "metadata.json"
MAX_METADATA_BYTES = 64 * 2**20
BASELINE_FAMILY = "baseline"
"""The family of the vendor library's rows (cuBLAS on the GPU, numpy's BLAS on the CPU)."""
LEGACY_BASELINE_FAMILY = "cublas"
"""What tables and storages written before named the baseline's family; read as BASELINE_FAMILY."""
BASELINE = "baseline"  # the study and sampler names of the baseline rows


RECORD_ATTR = "record"
"""The trial user attribute holding an evaluation's Record (its results row, rebuilt)."""


@dataclass(frozen=True)
class Record:
    """One evaluation: what was measured, where, when and by which search; the source of one row."""

    experiment: str
    study: str
    sampler: str
    trial: int
    config: Config
    measurement: Measurement
    metadata_id: str
    wall_offset_s: float
    measured_at: str
    device_s: float | None = None
    transferred_from: str | None = None
    """The study whose fastest configurations this one came from (tuner.search.transfer), None where the strategy
    proposed it."""

    def attrs(self) -> dict[str, Any]:
        """The JSON values a trial's user attributes keep (study and experiment are the trial's own; ``trial`` is
        the number the row was measured under, which a trial put back into a new storage keeps)."""
        return {
            "config_key": self.config.key,
            "config": config_to_dict(self.config),
            "measurement": self.measurement.to_dict(),
            "metadata_id": self.metadata_id,
            "wall_offset_s": self.wall_offset_s,
            "measured_at": self.measured_at,
            "sampler": self.sampler,
            "device_s": self.device_s,
            "trial": self.trial,
            "transferred_from": self.transferred_from,
        }

    @classmethod
    def from_attrs(cls, experiment: str, study: str, trial: int, attrs: Mapping[str, Any]) -> Record:
        return cls(
            experiment=experiment,
            study=study,
            sampler=attrs["sampler"],
            trial=int(attrs.get("trial", trial)),
            config=config_from_dict(attrs["config"]),
            measurement=Measurement.from_dict(attrs["measurement"]),
            metadata_id=attrs["metadata_id"],
            wall_offset_s=attrs["wall_offset_s"],
            measured_at=attrs["measured_at"],
            device_s=attrs.get("device_s"),
            transferred_from=attrs.get("transferred_from"),
        )


def is_evaluation(trial: FrozenTrial) -> bool:
    """A trial that holds a measurement."""
    return RECORD_ATTR in trial.user_attrs


def trial_record(experiment: str, study_name: str, trial: FrozenTrial) -> Record:
    return Record.from_attrs(experiment, study_name, trial.number, trial.user_attrs[RECORD_ATTR])


def config_to_dict(config: Config) -> dict[str, Any]:
    return {"sizes": config.problem.as_dict(), "family": config.family, "dtype": config.dtype,
            "params": config.param_dict}


def config_from_dict(data: Mapping[str, Any]) -> Config:
    sizes = data["sizes"] if "sizes" in data else {d: data[d] for d in MATMUL_DIMS}
    family = BASELINE_FAMILY if data["family"] == LEGACY_BASELINE_FAMILY else data["family"]
    return Config.make(Problem.of(sizes), family, data["dtype"], data["params"])


def _param_value(value: Any) -> ParamValue | None:
    """A parameter cell as the family declares it: int (a CSV or float column may hold 16.0), text or a
    boolean."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, str | bool):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    number = float(value)
    if math.isnan(number):
        return None
    return int(number) if number.is_integer() else value


def row_params(row: Mapping[str, Any]) -> dict[str, ParamValue]:
    """The parameters of one row: its ``p_`` columns that hold a value, without the prefix."""
    params = {}
    for column, cell in row.items():
        value = _param_value(cell) if str(column).startswith("p_") else None
        if value is not None:
            params[str(column)[2:]] = value
    return params


def config_of_row(row: Mapping[str, Any]) -> Config:
    """The configuration a results row describes: the sizes its family takes (those of M, N and K the row holds,
    for a baseline or a family not known here)."""
    family = families().get(str(row["family"]))
    dims = family.dims if family is not None else [d for d in MATMUL_DIMS if _present(row.get(d))]
    problem = Problem(**{d: int(row[d]) for d in dims})
    return Config.make(problem, str(row["family"]), str(row["dtype"]), row_params(row))


def on_cpu(environment: Mapping[str, Any] | None) -> bool:
    """Whether an environment is a CPU's (the CPU backend's, recorded with its BLAS)."""
    return isinstance(environment, Mapping) and (
        environment.get("backend") == "cpu" or "blas" in (environment.get("versions") or {}))


def baseline_library(metadata: Mapping[str, Any]) -> str:
    """What the baseline rows measured: numpy's BLAS where the run measured on the CPU, else cuBLAS."""
    environments = metadata.get("environments")
    found = environments.values() if isinstance(environments, Mapping) else ()
    return "BLAS" if any(on_cpu(env) for env in found) else "cuBLAS"


def ceilings_under_load(metadata: Mapping[str, Any] | None, metadata_id: Any) -> bool:
    """Whether the ceilings of the environment ``metadata_id`` were measured under load
    (:mod:`tuner.measure.machine_load`)."""
    environments = (metadata or {}).get("environments")
    environment = environments.get(str(metadata_id)) if isinstance(environments, Mapping) else None
    ceilings = environment.get("ceilings") if isinstance(environment, Mapping) else None
    load = ceilings.get("load") if isinstance(ceilings, Mapping) else None
    return isinstance(load, Mapping) and bool(load.get("under_load"))


def measuring_device(metadata: Mapping[str, Any]) -> str:
    """"CPU" where the run measured on the CPU, else "GPU"."""
    return "CPU" if baseline_library(metadata) == "BLAS" else "GPU"


def baseline_config(problem: Problem, dtype: str) -> Config:
    """The configuration standing for the vendor baseline on one problem: family ``baseline``, no parameters."""
    return Config.make(problem, BASELINE_FAMILY, dtype, {})


def _seconds(measurement: Measurement) -> float | None:
    """The median time of a timed ``ok`` measurement, in seconds."""
    if measurement.status is not Status.OK or measurement.timing is None or measurement.timing.median_ms <= 0:
        return None
    return measurement.timing.median_ms * 1e-3


def config_cost(config: Config) -> Cost | None:
    """The analytical cost of a configuration (a baseline's: the GEMM's, with its compulsory traffic); None
    where the family's cost model is not defined for its values (a broken precondition)."""
    if config.family == BASELINE_FAMILY:
        size = DTYPE_BYTES[config.dtype]
        traffic = matmul.compulsory_bytes(config.problem, size)
        return Cost(matmul.flops(config.problem), traffic, traffic, {})
    return cost(config) if _modelled(config) else None


def _flops(config: Config) -> int:
    """The operations of one launch, which depend on the problem alone (defined where the cost model is not)."""
    return get_family(config.family).flops(config.problem)


def objective_of(config: Config, measurement: Measurement) -> float | None:
    """What the search maximizes: GFLOP/s at the median time for a kernel that computes, the effective
    bandwidth (compulsory bytes over the median time, GB/s) for one that only moves data; None unless ok."""
    seconds = _seconds(measurement)
    work = config_cost(config) if seconds is not None else None
    if seconds is None or work is None:
        return None
    return (work.flops if work.flops else work.compulsory_bytes) / seconds / 1e9


def _modelled(config: Config) -> bool:
    """Whether the family's launch geometry and cost model describe the configuration (never cuBLAS, nor values
    that break a precondition such as a tile size of 0)."""
    if config.family == BASELINE_FAMILY:
        return False
    return not get_family(config.family).broken_preconditions(config.param_dict, config.dtype)


def _geometry(config: Config, multiprocessors: int | None) -> tuple[str | None, str | None]:
    family = get_family(config.family) if _modelled(config) else None
    if family is None or family.target != "cuda" or family.recording is not None:
        return None, None
    geometry = launch(config)
    return "×".join(map(str, geometry.block)), "×".join(map(str, geometry.grid_on(multiprocessors)))


def _percent(value: float | None, ceiling: Any) -> float | None:
    if value is None or not isinstance(ceiling, int | float) or ceiling <= 0:
        return None
    return 100.0 * value / ceiling


def row(record: Record, environment: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The results-table row of one evaluation; ``environment`` (its metadata) supplies the measured ceilings."""
    config, m = record.config, record.measurement
    timing, resources = m.timing, m.resources
    work = config_cost(config)
    seconds = _seconds(m) if work is not None else None
    gflops = work.flops / seconds / 1e9 if work and seconds and work.flops else None
    bandwidth = work.global_bytes / seconds / 1e9 if work and seconds else None
    measured = ((environment or {}).get("peaks") or {}).get("measured") or {}
    device = (environment or {}).get("device") or {}
    gpu = not on_cpu(environment)
    load = m.load
    block, grid = _geometry(config, device.get("multiprocessors"))
    spills = (resources.spill_store_bytes, resources.spill_load_bytes)
    data: dict[str, Any] = {
        "experiment": record.experiment,
        "study": record.study,
        "sampler": record.sampler,
        "transferred_from": record.transferred_from,
        "trial": record.trial,
        "wall_offset_s": record.wall_offset_s,
        "measured_at": record.measured_at,
        "metadata_id": record.metadata_id,
        "config_key": config.key,
        **config.as_row(),
        "block": block,
        "grid": grid,
        "status": m.status.value,
        "reason": m.reason,
        "verify_error": m.error,
        "flops": work.flops if work else _flops(config),
        "bytes_model": work.global_bytes if work else None,
        "intensity": work.intensity if work else None,
        "gflops": gflops,
        "bandwidth_gbs": bandwidth,
        "effective_bandwidth_gbs": work.compulsory_bytes / seconds / 1e9 if work and seconds else None,
        "performance": objective_of(config, m),
        "pct_flops_ceiling": _percent(gflops, compute_peak(measured, config.dtype)),
        "pct_bandwidth_ceiling": _percent(bandwidth, measured.get("bandwidth_gbs")),
        "compile_time_s": m.compile_time_s,
        "registers": resources.registers,
        "shared_bytes": resources.shared_bytes,
        "local_bytes": resources.local_bytes,
        "spill_bytes": None if spills == (None, None) else sum(s or 0 for s in spills),
        "spill_store_bytes": resources.spill_store_bytes,
        "spill_load_bytes": resources.spill_load_bytes,
        "code_bytes": resources.code_bytes,
        "vectorized_loops": resources.vectorized_loops,
        "device_s": record.device_s,
        "other_cpus": load.other_cpus if load else None,
        "other_gpu_processes": load.other_gpu_processes if load else None,
        "other_gpu_percent": load.other_gpu_percent if load else None,
        "under_load": load.under_load if load else None,
        "device_name": device.get("name"),
        "gpu_name": device.get("name") if gpu else None,
        "gpu_uuid": device.get("uuid") if gpu else None,
        "library": _library(config, m, environment),
        **energy_cells(m.energy, work.flops if work else None),
    }
    if timing is not None:
        data.update({
            "time_median_ms": timing.median_ms,
            "time_mean_ms": timing.mean_ms,
            "time_min_ms": timing.min_ms,
            "time_stdev_ms": timing.stdev_ms,
            "time_cv": timing.cv,
            "samples": timing.count,
            "samples_ms": json.dumps(list(timing.samples_ms)),
            "throttled_samples": timing.throttled_samples,
            "sm_clock_mhz_before": timing.sm_clock_mhz_before,
            "sm_clock_mhz_after": timing.sm_clock_mhz_after,
        })
    return data


def _library(config: Config, measurement: Measurement, environment: Mapping[str, Any] | None) -> str | None:
    """What a baseline row measured: the library its backend names (in an ok measurement's reason), else the
    kind of library its environment has; None for any other row."""
    if config.family != BASELINE_FAMILY:
        return None
    if measurement.status is Status.OK and measurement.reason:
        return measurement.reason
    return "numpy's BLAS" if on_cpu(environment) else "cuBLAS"


def _present(value: Any) -> bool:
    return value is not None and not pd.isna(value)


def _optional_int(value: Any) -> int | None:
    return int(value) if _present(value) else None


def _optional_float(value: Any) -> float | None:
    return float(value) if _present(value) else None


def measurement_from_row(data: Mapping[str, Any]) -> Measurement:
    """The measurement a row records (the inverse of :func:`row` for the backend's part of it)."""
    timing = None
    if _present(data.get("time_median_ms")):
        timing = Timing(
            median_ms=float(data["time_median_ms"]),
            mean_ms=float(data["time_mean_ms"]),
            min_ms=float(data["time_min_ms"]),
            stdev_ms=float(data["time_stdev_ms"]),
            samples_ms=tuple(json.loads(data["samples_ms"])) if _present(data.get("samples_ms")) else (),
            throttled_samples=_optional_int(data.get("throttled_samples")) or 0,
            sm_clock_mhz_before=_optional_float(data.get("sm_clock_mhz_before")),
            sm_clock_mhz_after=_optional_float(data.get("sm_clock_mhz_after")),
        )
    load = None
    if _present(data.get("under_load")):
        load = Load(None, None, None, _optional_float(data.get("other_cpus")),
                    _optional_int(data.get("other_gpu_processes")), _optional_float(data.get("other_gpu_percent")),
                    bool(data["under_load"]))
    return Measurement(
        status=Status(data["status"]),
        reason=data["reason"] if _present(data.get("reason")) else "",
        load=load,
        timing=timing,
        error=_optional_float(data.get("verify_error")),
        compile_time_s=_optional_float(data.get("compile_time_s")),
        resources=Resources(**{
            name: _optional_int(data.get(name))
            for name in ("registers", "shared_bytes", "local_bytes", "spill_store_bytes", "spill_load_bytes",
                         "code_bytes", "vectorized_loops")
        }),
        energy=energy_from_row(data),
    )


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


def performance(df: pd.DataFrame) -> pd.Series:
    """Each row's performance: its ``performance`` column, or (tables recorded before it) its GFLOP/s."""
    if "performance" in df:
        return df["performance"].fillna(df["gflops"]).astype(float)
    return df["gflops"].astype(float)


def unit_of(df: pd.DataFrame) -> str:
    """The unit of the performance of these rows: GFLOP/s, or GB/s where none of them does arithmetic."""
    flops = pd.to_numeric(df.get("flops", pd.Series(dtype=float)), errors="coerce")
    return "GB/s" if len(flops) and (flops.fillna(0) == 0).all() else "GFLOP/s"


def best_rows(df: pd.DataFrame, objective: Objective = DEFAULT) -> pd.DataFrame:
    """The best ``ok`` tuned configuration (cuBLAS rows aside) of each problem and dtype: the fastest, or by the
    objective's first name (tuner.energy.objective) the one with the least energy or energy-delay product."""
    score = objective_score(df, objective[0], performance(df))
    ok = df[(df["status"] == Status.OK.value) & (df["family"] != BASELINE_FAMILY) & score.notna()]
    if ok.empty:
        return ok.reset_index(drop=True)
    best = ok.loc[score[ok.index].groupby([ok["problem"], ok["dtype"]], sort=False).idxmax()]
    return best.sort_values(["M", "N", "K", "dtype"]).reset_index(drop=True)


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _defused(cell: Any) -> Any:
    if isinstance(cell, str) and cell.startswith(FORMULA_STARTS) and not _PLAIN_NUMBER.fullmatch(cell):
        return "'" + cell
    return cell


def spreadsheet_safe(df: pd.DataFrame) -> pd.DataFrame:
    """The table with every text cell a spreadsheet would take for a formula (one starting with =, +, -, @, a tab
    or a carriage return, other than a plain number) written after an apostrophe, which spreadsheets read as
    "text follows" (results.csv only; results.parquet keeps the text as it is)."""
    text = [c for c in df.columns if pd.api.types.is_string_dtype(df[c]) or df[c].dtype == object]
    if not text:
        return df
    safe = df.copy()
    for column in text:
        safe[column] = safe[column].map(_defused, na_action="ignore")
    return safe


def save(df: pd.DataFrame, metadata: dict[str, Any], folder: str | Path) -> None:
    """Write results.parquet, results.csv and metadata.json, each replaced atomically.

    A folder that cannot take them (a full disk, a read-only file system, no permission) raises TunerError
    naming it; the files written there before are left as they were, and no partial file stays behind."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, write in (
            (RESULTS_PARQUET, lambda p: df.to_parquet(p, index=False)),
            (RESULTS_CSV, lambda p: spreadsheet_safe(df).to_csv(p, index=False)),
            (METADATA_JSON, lambda p: p.write_text(json.dumps(metadata, indent=2, sort_keys=True, default=str))),
        ):
            atomic_file.replace_with(folder / name, write)
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)  # pyarrow wraps the system's words in its own
        raise TunerError(f"{folder}: the results table cannot be saved in this folder ({reason}); the files saved "
                         f"there before are left as they were, and a run's evaluations stay in its Optuna storage, "
                         f"from which the table is rebuilt: free space or make the folder writable, then run the "
                         f"same command again") from None


def load_table(path: str | Path) -> pd.DataFrame:
    """The results table of a run folder, or of a results.parquet file (only a regular file: InputFileError for a
    FIFO or a device)."""
    path = Path(path)
    table = path / RESULTS_PARQUET if path.is_dir() else path
    why = input_file.not_regular(table)
    if why is not None:
        raise input_file.InputFileError(f"{table} {why}")
    return with_baseline_renamed(pd.read_parquet(table))


def with_baseline_renamed(df: pd.DataFrame) -> pd.DataFrame:
    """A table written before the baseline's family was named ``baseline``: its ``cublas`` rows as baseline rows
    (family, configuration key, and the library they measured, which their reason names)."""
    if "family" not in df.columns or not (df["family"] == LEGACY_BASELINE_FAMILY).any():
        return df
    df = df.copy()
    old = df["family"] == LEGACY_BASELINE_FAMILY
    df["family"] = df["family"].astype(object).where(~old, BASELINE_FAMILY).astype(df["family"].dtype)
    if "config_key" in df.columns:
        keys = df.loc[old, "config_key"].astype(str).str.replace(f"/{LEGACY_BASELINE_FAMILY}/", f"/{BASELINE_FAMILY}/",
                                                                    n=1, regex=False)
        df["config_key"] = df["config_key"].astype(object).where(~old, keys).astype(df["config_key"].dtype)
    if "library" not in df.columns and "reason" in df.columns and "status" in df.columns:
        library = df["reason"].where(old & (df["status"] == Status.OK.value) & df["reason"].notna())
        df["library"] = library.astype("string")
    return df


def load_metadata(path: str | Path) -> Any:
    """The parsed metadata.json beside a results table ({} where there is none); not necessarily a mapping.
    Raises ValueError (json.JSONDecodeError) when the file is not JSON or nests too deeply to be read, OSError
    where it cannot be read, is no regular file or is larger than MAX_METADATA_BYTES."""
    path = Path(path)
    meta_file = (path if path.is_dir() else path.parent) / METADATA_JSON
    if not meta_file.exists():
        return {}
    text = input_file.read_text(meta_file, MAX_METADATA_BYTES)
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"{meta_file} nests its values too deeply to be read") from None


def load(path: str | Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A recorded table and its metadata, from a run folder or a results.parquet file."""
    return load_table(path), load_metadata(path)
