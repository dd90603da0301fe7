"""One row of the results table: the :class:`Record` of an evaluation, as a study keeps it in its trial's user
attributes (so the whole table can be rebuilt from the Optuna storage), the row made of it, and the way back from a
row to its configuration and measurement."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from optuna.trial import FrozenTrial

from tuner.config import MATMUL_DIMS, Config, ParamValue, Problem
from tuner.energy.columns import energy_cells, energy_from_row
from tuner.kernels.discovery import families
from tuner.measure.machine_load import Load
from tuner.measure.measurement import Measurement, Resources, Status, Timing
from tuner.optuna_attrs import RECORD_ATTR
from tuner.peaks import compute_peak
from tuner.results.analytics import Analytics
from tuner.results.environment import Environment
from tuner.results.objectives import median_seconds, performance_of
from tuner.results.schema import BASELINE_FAMILY


@dataclass(frozen=True)
class Record:
    """One evaluation: what was measured, where, when and by which search; the source of one row."""

    experiment: str
    study: str
    strategy: str
    """The search strategy's name (the row's ``strategy``)."""
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
            "strategy": self.strategy,
            "device_s": self.device_s,
            "trial": self.trial,
            "transferred_from": self.transferred_from,
        }

    @classmethod
    def from_attrs(cls, experiment: str, study: str, trial: int, attrs: Mapping[str, Any]) -> Record:
        return cls(
            experiment=experiment,
            study=study,
            strategy=attrs["strategy"],
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
    return Config.make(Problem.of(data["sizes"]), data["family"], data["dtype"], data["params"])


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


def baseline_config(problem: Problem, dtype: str) -> Config:
    """The configuration standing for the vendor baseline on one problem: family ``baseline``, no parameters."""
    return Config.make(problem, BASELINE_FAMILY, dtype, {})


def _percent(value: float | None, ceiling: Any) -> float | None:
    if value is None or not isinstance(ceiling, int | float) or ceiling <= 0:
        return None
    return 100.0 * value / ceiling


def row(record: Record, analytics: Analytics, environment: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The results-table row of one evaluation: ``analytics`` (:func:`tuner.results.analytics.analytics_of` its
    configuration) supplies the cost model and launch geometry, ``environment`` (its metadata) the device and the
    measured ceilings."""
    config, m = record.config, record.measurement
    timing, resources = m.timing, m.resources
    work = analytics.cost
    seconds = median_seconds(m) if work is not None else None
    gflops = work.flops / seconds / 1e9 if work and seconds and work.flops else None
    bandwidth = work.global_bytes / seconds / 1e9 if work and seconds else None
    env = Environment.from_dict(environment)
    measured, device = env.measured_peaks, env.device
    gpu = not env.on_cpu
    data: dict[str, Any] = {
        "experiment": record.experiment,
        "study": record.study,
        "strategy": record.strategy,
        "transferred_from": record.transferred_from,
        "trial": record.trial,
        "wall_offset_s": record.wall_offset_s,
        "measured_at": record.measured_at,
        "metadata_id": record.metadata_id,
        "config_key": config.key,
        **config.as_row(),
        "block": analytics.block,
        "grid": analytics.grid,
        "status": m.status.value,
        "reason": m.reason,
        "verify_error": m.error,
        "flops": analytics.flops,
        "bytes_model": work.global_bytes if work else None,
        "intensity": work.intensity if work else None,
        "gflops": gflops,
        "bandwidth_gbs": bandwidth,
        "effective_bandwidth_gbs": work.compulsory_bytes / seconds / 1e9 if work and seconds else None,
        "performance": performance_of(work, m),
        "pct_flops_ceiling": _percent(gflops, compute_peak(measured, config.dtype)),
        "pct_bandwidth_ceiling": _percent(bandwidth, measured.get("bandwidth_gbs")),
        "compile_time_s": m.compile_time_s,
        **_resource_cells(resources),
        "device_s": record.device_s,
        **_load_cells(m.load),
        "device_name": device.get("name"),
        "gpu_name": device.get("name") if gpu else None,
        "gpu_uuid": device.get("uuid") if gpu else None,
        "library": _library(config, m, env),
        **energy_cells(m.energy, work.flops if work else None),
    }
    if timing is not None:
        data.update(_timing_cells(timing))
    return data


def _resource_cells(resources: Resources) -> dict[str, Any]:
    """A row's cells of what the compiler reported."""
    spills = (resources.spill_store_bytes, resources.spill_load_bytes)
    return {
        "registers": resources.registers,
        "shared_bytes": resources.shared_bytes,
        "local_bytes": resources.local_bytes,
        "spill_bytes": None if spills == (None, None) else sum(s or 0 for s in spills),
        "spill_store_bytes": resources.spill_store_bytes,
        "spill_load_bytes": resources.spill_load_bytes,
        "code_bytes": resources.code_bytes,
        "vectorized_loops": resources.vectorized_loops,
    }


def _load_cells(load: Load | None) -> dict[str, Any]:
    """A row's cells of what other processes did while it was measured."""
    return {
        "other_cpus": load.other_cpus if load else None,
        "other_gpu_processes": load.other_gpu_processes if load else None,
        "other_gpu_percent": load.other_gpu_percent if load else None,
        "under_load": load.under_load if load else None,
    }


def _timing_cells(timing: Timing) -> dict[str, Any]:
    """A timed row's cells of its samples."""
    return {
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
    }


def _library(config: Config, measurement: Measurement, environment: Environment) -> str | None:
    """What a baseline row measured: the library its backend names (in an ok measurement's reason), else the
    kind of library its environment has; None for any other row."""
    if config.family != BASELINE_FAMILY:
        return None
    if measurement.status is Status.OK and measurement.reason:
        return measurement.reason
    return "numpy's BLAS" if environment.on_cpu else "cuBLAS"


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


