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
registers, shared_bytes, local_bytes, spill_bytes   the compiler's resource report (spill_bytes: stores + loads)
spill_store_bytes …    spill_load_bytes: the two halves of spill_bytes as ptxas reports them
device_s               seconds the device spent verifying and timing this configuration
=====================  ==========================================================================

cuBLAS rows (family ``cublas``) have no parameters and no launch geometry; their ``bytes_model`` is the
compulsory traffic (A and B read once, C written once). Statically invalid rows still carry the analytical
columns (flops, bytes_model, intensity) of the configuration that was rejected.

A row is built from a :class:`Record`: one evaluation as the study stores it in its trial's user attributes,
so the whole table can be rebuilt from the Optuna storage.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from tuner.config import DTYPE_BYTES, Config, ParamValue, Problem
from tuner.measurement import Measurement, Resources, Status, Timing
from tuner.model import cost
from tuner.templates import launch

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
    "spill_store_bytes", "spill_load_bytes", "device_s",
)
TEXT_COLUMNS: frozenset[str] = frozenset({
    "experiment", "study", "sampler", "measured_at", "metadata_id", "config_key", "problem", "family", "dtype",
    "block", "grid", "status", "reason", "samples_ms",
})
INTEGER_COLUMNS: frozenset[str] = frozenset({
    "trial", "M", "N", "K", "samples", "throttled_samples", "flops", "bytes_model",
    "registers", "shared_bytes", "local_bytes", "spill_bytes", "spill_store_bytes", "spill_load_bytes",
})
RESULTS_PARQUET = "results.parquet"
RESULTS_CSV = "results.csv"
METADATA_JSON = "metadata.json"
BASELINE_FAMILY = "cublas"
BASELINE = "baseline"  # the study and sampler names of cuBLAS rows


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

    def attrs(self) -> dict[str, Any]:
        """The JSON values a trial's user attributes keep (study, trial and experiment are the trial's own)."""
        return {
            "config_key": self.config.key,
            "config": config_to_dict(self.config),
            "measurement": self.measurement.to_dict(),
            "metadata_id": self.metadata_id,
            "wall_offset_s": self.wall_offset_s,
            "measured_at": self.measured_at,
            "sampler": self.sampler,
            "device_s": self.device_s,
        }

    @classmethod
    def from_attrs(cls, experiment: str, study: str, trial: int, attrs: Mapping[str, Any]) -> Record:
        return cls(
            experiment=experiment,
            study=study,
            sampler=attrs["sampler"],
            trial=trial,
            config=config_from_dict(attrs["config"]),
            measurement=Measurement.from_dict(attrs["measurement"]),
            metadata_id=attrs["metadata_id"],
            wall_offset_s=attrs["wall_offset_s"],
            measured_at=attrs["measured_at"],
            device_s=attrs.get("device_s"),
        )


def config_to_dict(config: Config) -> dict[str, Any]:
    p = config.problem
    return {"M": p.M, "N": p.N, "K": p.K, "family": config.family, "dtype": config.dtype,
            "params": config.param_dict}


def config_from_dict(data: Mapping[str, Any]) -> Config:
    return Config.make(Problem(data["M"], data["N"], data["K"]), data["family"], data["dtype"], data["params"])


def _param_value(value: Any) -> ParamValue | None:
    """A parameter cell as the family declares it: int (a CSV or float column may hold 16.0) or text."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, str):
        return value
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
    """The configuration a results row describes."""
    problem = Problem(int(row["M"]), int(row["N"]), int(row["K"]))
    return Config.make(problem, str(row["family"]), str(row["dtype"]), row_params(row))


def baseline_config(problem: Problem, dtype: str) -> Config:
    """The configuration standing for cuBLAS on one problem: family ``cublas``, no parameters."""
    return Config.make(problem, BASELINE_FAMILY, dtype, {})


def gflops_of(config: Config, measurement: Measurement) -> float | None:
    """GFLOP/s at the median time, for a timed ``ok`` measurement."""
    if measurement.status is not Status.OK or measurement.timing is None or measurement.timing.median_ms <= 0:
        return None
    return config.problem.flops / (measurement.timing.median_ms * 1e-3) / 1e9


def _geometry(config: Config, multiprocessors: int | None) -> tuple[str | None, str | None]:
    if config.family == BASELINE_FAMILY:
        return None, None
    geometry = launch(config)
    return "×".join(map(str, geometry.block)), "×".join(map(str, geometry.grid_on(multiprocessors)))


def _bytes_model(config: Config) -> int:
    if config.family == BASELINE_FAMILY:
        p = config.problem
        return DTYPE_BYTES[config.dtype] * (p.M * p.K + p.K * p.N + p.M * p.N)
    return cost(config).global_bytes


def _percent(value: float | None, ceiling: Any) -> float | None:
    if value is None or not isinstance(ceiling, int | float) or ceiling <= 0:
        return None
    return 100.0 * value / ceiling


def row(record: Record, environment: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The results-table row of one evaluation; ``environment`` (its metadata) supplies the measured ceilings."""
    config, m = record.config, record.measurement
    timing, resources = m.timing, m.resources
    flops = config.problem.flops
    bytes_model = _bytes_model(config)
    gflops = gflops_of(config, m)
    bandwidth = bytes_model / (timing.median_ms * 1e-3) / 1e9 if gflops is not None else None
    measured = ((environment or {}).get("peaks") or {}).get("measured") or {}
    block, grid = _geometry(config, ((environment or {}).get("device") or {}).get("multiprocessors"))
    spills = (resources.spill_store_bytes, resources.spill_load_bytes)
    data: dict[str, Any] = {
        "experiment": record.experiment,
        "study": record.study,
        "sampler": record.sampler,
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
        "flops": flops,
        "bytes_model": bytes_model,
        "intensity": flops / bytes_model,
        "gflops": gflops,
        "bandwidth_gbs": bandwidth,
        "pct_flops_ceiling": _percent(gflops, measured.get(f"{config.dtype}_gflops")),
        "pct_bandwidth_ceiling": _percent(bandwidth, measured.get("bandwidth_gbs")),
        "compile_time_s": m.compile_time_s,
        "registers": resources.registers,
        "shared_bytes": resources.shared_bytes,
        "local_bytes": resources.local_bytes,
        "spill_bytes": None if spills == (None, None) else sum(s or 0 for s in spills),
        "spill_store_bytes": resources.spill_store_bytes,
        "spill_load_bytes": resources.spill_load_bytes,
        "device_s": record.device_s,
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
    return Measurement(
        status=Status(data["status"]),
        reason=data["reason"] if _present(data.get("reason")) else "",
        timing=timing,
        error=_optional_float(data.get("verify_error")),
        compile_time_s=_optional_float(data.get("compile_time_s")),
        resources=Resources(**{
            name: _optional_int(data.get(name))
            for name in ("registers", "shared_bytes", "local_bytes", "spill_store_bytes", "spill_load_bytes")
        }),
    )


def param_columns(df: pd.DataFrame) -> list[str]:
    return sorted(c for c in df.columns if c.startswith("p_"))


def to_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows in schema order (base columns, parameters, then measurements), each column in its documented type."""
    df = pd.DataFrame(rows)
    for column in (*BASE_COLUMNS, *MEASURE_COLUMNS):
        if column not in df.columns:
            df[column] = pd.NA
    ordered = [*BASE_COLUMNS, *param_columns(df), *MEASURE_COLUMNS]
    extra = [c for c in df.columns if c not in ordered]
    df = df[ordered + extra].reset_index(drop=True)
    for column in df.columns:
        if column in TEXT_COLUMNS:
            df[column] = df[column].astype("string")
        elif column in INTEGER_COLUMNS or column.startswith("p_"):
            df[column] = df[column].astype("Int64")
        elif column not in extra:
            df[column] = df[column].astype("float64")
    return df


def best_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The fastest ``ok`` tuned configuration (cuBLAS rows aside) of each problem and dtype."""
    ok = df[(df["status"] == Status.OK.value) & (df["family"] != BASELINE_FAMILY) & df["gflops"].notna()]
    if ok.empty:
        return ok.reset_index(drop=True)
    best = ok.loc[ok.groupby(["problem", "dtype"], sort=False)["gflops"].idxmax()]
    return best.sort_values(["M", "N", "K", "dtype"]).reset_index(drop=True)


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


def load_table(path: str | Path) -> pd.DataFrame:
    """The results table of a run folder, or of a results.parquet file."""
    path = Path(path)
    return pd.read_parquet(path / RESULTS_PARQUET if path.is_dir() else path)


def load_metadata(path: str | Path) -> Any:
    """The parsed metadata.json beside a results table ({} where there is none); not necessarily a mapping.
    Raises ValueError (json.JSONDecodeError) when the file is not JSON."""
    path = Path(path)
    meta_file = (path if path.is_dir() else path.parent) / METADATA_JSON
    return json.loads(meta_file.read_text()) if meta_file.exists() else {}


def load(path: str | Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A recorded table and its metadata, from a run folder or a results.parquet file."""
    return load_table(path), load_metadata(path)
