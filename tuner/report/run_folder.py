"""A run folder as the reports read it: the results table, its metadata and the machine models.

Only ``results.parquet`` is required; every other piece (metadata, measured ceilings, machine models,
cuBLAS baselines) may be absent, and the reports then leave out what depends on it, with a note.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow

from tuner.config import DTYPES
from tuner.counters import store as counters_store
from tuner.errors import TunerError
from tuner.experiment.schema import parse_machine_models
from tuner.kernels.discovery import families
from tuner.kernels.model import MachineModel, cost
from tuner.peaks import unit_peaks
from tuner.report.groups import assign_groups
from tuner.report.metadata_shape import checked_metadata
from tuner.results import table as results
from tuner.results.environment import Environment
from tuner.results.objectives import Objectives, recorded_objective
from tuner.results.schema import BASELINE_FAMILY

if TYPE_CHECKING:
    from matplotlib.figure import Figure

KEY_COLUMNS = ("experiment", "study", "strategy", "metadata_id", "config_key", "problem", "family", "dtype", "status")
NUMERIC_COLUMNS = ("gflops", "bandwidth_gbs", "effective_bandwidth_gbs", "flops", "time_median_ms", "wall_offset_s",
                   "trial", "M", "N", "K")
REQUIRED_COLUMNS = ("problem", "family", "dtype", "status", "gflops")

Draw = Callable[["Run"], "Figure"]
"""Draws one figure of a run (a module-level function or a partial of one, so that another process can draw it)."""


@dataclass(frozen=True)
class Ceiling:
    """A device roofline: compute peak for one dtype and DRAM bandwidth, either of which may be unknown."""

    kind: str  # "measured" or "theoretical"
    gflops: float | None
    bandwidth_gbs: float | None
    unit: str = "cuda"
    """Which units the compute peak is of (tuner.peaks.UNITS): CUDA cores or tensor cores."""

    def bound_gflops(self, intensity: float) -> float | None:
        if self.bandwidth_gbs is None:
            return self.gflops
        memory_bound = self.bandwidth_gbs * intensity
        return memory_bound if self.gflops is None else min(self.gflops, memory_bound)

    @property
    def ridge_point(self) -> float | None:
        if self.gflops is None or self.bandwidth_gbs is None:
            return None
        return self.gflops / self.bandwidth_gbs


@dataclass
class Run:
    """Everything a report needs from one run folder."""

    path: Path
    df: pd.DataFrame
    """Every row of the results table, plus ``params`` (the row's parameter values as a dict) and ``group``
    (its analytical class, see tuner.report.groups; None for baselines)."""
    metadata: dict[str, Any]
    machine_models: tuple[MachineModel, ...]
    notes: list[str] = field(default_factory=list)
    """What is missing from the folder and which parts of the report it leaves out."""

    @property
    def experiment_name(self) -> str:
        name = (self.metadata.get("experiment") or {}).get("name")
        if name:
            return str(name)
        names = [n for n in self.df["experiment"].unique() if n] if "experiment" in self.df else []
        return str(names[0]) if names else self.path.name

    @cached_property
    def kernels(self) -> pd.DataFrame:
        """Rows of the tuned kernel families (every status), without the cuBLAS baselines."""
        return self.df[self.df["family"] != BASELINE_FAMILY]

    @cached_property
    def ok(self) -> pd.DataFrame:
        """Successful evaluations of the tuned kernels: the points of the figures."""
        kernels = self.kernels
        return kernels[(kernels["status"] == "ok") & kernels["performance"].notna()]

    @cached_property
    def baselines(self) -> pd.DataFrame:
        base = self.df[(self.df["family"] == BASELINE_FAMILY) & (self.df["status"] == "ok")]
        return base[base["gflops"].notna()]

    def slices(self) -> list[tuple[str, str]]:
        """The (dtype, problem) pairs of the kernel rows, largest problem first."""
        pairs = self.kernels[["dtype", "problem", "M", "N", "K"]].drop_duplicates(["dtype", "problem"])
        pairs = pairs.assign(size=pairs["M"] * pairs["N"] * pairs["K"].fillna(1))
        pairs = pairs.sort_values(["dtype", "size", "problem"], ascending=[True, False, True])
        return list(zip(pairs["dtype"], pairs["problem"], strict=True))

    @property
    def objective(self) -> Objectives:
        """What the run's last search pursued (time for runs recorded before objectives)."""
        return recorded_objective(self.metadata)

    @property
    def library(self) -> str:
        """The library the baseline rows measured: cuBLAS, or numpy's BLAS on the CPU."""
        return results.baseline_library(self.metadata)

    @property
    def environments(self) -> dict[str, dict[str, Any]]:
        envs = self.metadata.get("environments")
        return {str(k): v for k, v in envs.items() if isinstance(v, dict)} if isinstance(envs, dict) else {}

    def family_record(self, family: str) -> dict[str, Any] | None:
        """What the run stored of a family from a folder of its own (tuner.kernels.discovery.folder_family_records):
        the report reads it as data instead of importing the folder's code."""
        for env in self.environments.values():
            records = env.get("families")
            record = records.get(family) if isinstance(records, dict) else None
            if isinstance(record, dict):
                return record
        return None

    def environment(self, rows: pd.DataFrame) -> Environment:
        """The environment most of these rows were measured in (an empty one when the metadata has none)."""
        envs = self.environments
        if "metadata_id" in rows:
            counts = Counter(str(m) for m in rows["metadata_id"].dropna() if str(m) in envs)
            if counts:
                return Environment.from_dict(envs[counts.most_common(1)[0][0]])
        return Environment.from_dict(next(iter(envs.values())) if len(envs) == 1 else {})

    def device_ceilings(self, dtype: str, rows: pd.DataFrame) -> list[Ceiling]:
        """The device's measured and theoretical rooflines for ``dtype`` (only those with a known number)."""
        peaks = self.environment(rows).peaks
        ceilings = []
        for kind in ("measured", "theoretical"):
            values = peaks.get(kind) or {}
            bandwidth = _positive(values.get("bandwidth_gbs"))
            units = unit_peaks(values, dtype)
            for unit, gflops in sorted(units.items(), key=lambda item: -item[1]):
                ceilings.append(Ceiling(kind, gflops, bandwidth, unit))
            if not units and bandwidth is not None:
                ceilings.append(Ceiling(kind, None, bandwidth))
        return ceilings

    @cached_property
    def gpu_names(self) -> list[str]:
        """The names of the devices that measured the tuned kernels' rows (one for a run on one kind of GPU)."""
        if "gpu_name" not in self.kernels:
            return []
        return sorted(str(name) for name in self.kernels["gpu_name"].dropna().unique())

    def device_name(self, rows: pd.DataFrame) -> str:
        return str(self.environment(rows).device.get("name") or "the device")


def _positive(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number > 0 else None


def _machine_models(metadata: dict[str, Any], notes: list[str]) -> tuple[MachineModel, ...]:
    experiment = metadata.get("experiment") or {}
    listed = experiment.get("machine_models")
    if isinstance(listed, list):
        models = []
        for item in listed:
            try:
                peaks = {str(k): float(v) for k, v in item["peak_gflops"].items()}
                models.append(MachineModel(str(item["name"]), peaks, float(item["bandwidth_gbs"])))
            except (KeyError, TypeError, ValueError, AttributeError):
                notes.append(f"a machine model in metadata.json could not be read and is left out: {item!r}")
        return tuple(models)
    source = experiment.get("source")
    if isinstance(source, str):
        try:
            return parse_machine_models(source, str(experiment.get("path") or "the recorded experiment"))
        except TunerError as exc:
            notes.append(f"machine models left out: the recorded experiment could not be read ({exc})")
            return ()
    notes.append("metadata.json names no machine models: the rooflines show the device only")
    return ()


def _intensities(df: pd.DataFrame) -> pd.Series:
    """Each row's recorded intensity, or the analytical one of its configuration where none was recorded."""
    recorded = df["intensity"] if "intensity" in df else pd.Series(math.nan, index=df.index)
    intensity = pd.to_numeric(recorded, errors="coerce").astype(float)
    missing = ~np.isfinite(intensity) & df["family"].isin(list(families())) & df["dtype"].isin(DTYPES)
    for index in df.index[missing]:
        try:
            intensity[index] = cost(results.config_of_row(df.loc[index])).intensity
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            intensity[index] = math.nan
    return intensity


def _metadata(path: Path, notes: list[str]) -> dict[str, Any]:
    source = path / results.METADATA_JSON
    if not source.is_file():
        notes.append(f"{results.METADATA_JSON} is missing: no device description, ceilings or machine models")
        return {}
    try:
        raw = results.load_metadata(path)
    except (OSError, ValueError) as exc:
        notes.append(f"{source} cannot be read ({exc}): the report leaves it out (no device description, ceilings "
                     f"or machine models)")
        return {}
    return checked_metadata(raw, str(source), notes)


def load_run(run_dir: str | Path) -> Run:
    """Read a run folder; a folder without a readable results table, or with no row in it, raises TunerError
    naming it. A missing or damaged metadata.json costs only what depends on it, with a note."""
    path = Path(run_dir)
    table = path / results.RESULTS_PARQUET
    if not path.is_dir():
        raise TunerError(f"{path}: no such run folder (a run folder is what `python -m tuner run` writes, "
                         f"holding {results.RESULTS_PARQUET} and {results.METADATA_JSON})")
    if not table.is_file():
        raise TunerError(f"{path}: this folder has no {results.RESULTS_PARQUET}, so there is nothing to report; "
                         f"pass the output folder of `python -m tuner run`")
    try:
        df = counters_store.join_folder(results.load_table(path), path)  # counters read since the table was saved
    except (OSError, ValueError, pyarrow.ArrowException) as exc:
        raise TunerError(f"{table} cannot be read: {exc}") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise TunerError(f"{table}: the results table lacks the column(s) {', '.join(missing)}; "
                         f"it does not follow the schema of tuner.results.schema")
    if df.empty:
        raise TunerError(f"{table}: the results table has no rows (the run evaluated nothing, not even a cuBLAS "
                         f"baseline), so there is nothing to report")
    notes: list[str] = []
    metadata = _metadata(path, notes)
    df = df.reset_index(drop=True)
    df["params"] = [results.row_params(cells) for cells in df[results.param_columns(df)].to_dict("records")]
    for column in NUMERIC_COLUMNS:  # NaN where absent
        df[column] = pd.to_numeric(df[column], errors="coerce") if column in df else math.nan
    for column in KEY_COLUMNS:  # plain text, "" where missing, so that comparisons are never NA
        df[column] = df[column].astype("string").fillna("").astype(object) if column in df else ""
    df["intensity"] = _intensities(df)
    df["performance"] = results.performance(df)
    df["group"] = assign_groups(df[df["family"] != BASELINE_FAMILY])
    run = Run(path, df, metadata, _machine_models(metadata, notes), notes)
    if run.kernels.empty:
        notes.append(f"Nothing was evaluated successfully: the results table holds no evaluation of a tuned "
                     f"kernel, only {len(df)} cuBLAS baseline row(s).")
    elif run.ok.empty:
        notes.append(f"Nothing was evaluated successfully: none of the {len(run.kernels)} evaluations of tuned "
                     f"kernels has status ok (see Outcomes and failures).")
    return run
