"""A run folder's evaluations in Kernel Tuner's formats: its cache files and T4 results files.

One file per study and family (Kernel Tuner tunes one kernel on one problem per file), holding the first row of
each configuration, vendor baselines left out; where the folder's experiment can be read again, the combinations
its rules reject are written as invalid, so that a brute-force run covers the whole product. What the files hold
and how Kernel Tuner takes them: the README's section on exporting a run.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from tuner import atomic_file
from tuner.config import Config, ParamValue, Problem
from tuner.errors import TunerError
from tuner.measure.measurement import Status
from tuner.names.file_names import fitting_name
from tuner.results import table as results

FORMATS = ("kernel-tuner-cache", "t4")
KERNEL_TUNER_ERRORS = {Status.INVALID.value: "InvalidConfig", Status.COMPILE_ERROR.value: "CompilationFailedConfig",
                       Status.CRASHED.value: "RuntimeFailedConfig", Status.WRONG.value: "RuntimeFailedConfig"}
T4_INVALIDITY = {Status.OK.value: "correct", Status.INVALID.value: "constraints",
                 Status.COMPILE_ERROR.value: "compile", Status.CRASHED.value: "runtime",
                 Status.WRONG.value: "correctness"}


@dataclass(frozen=True)
class Exported:
    path: Path
    study: str
    family: str
    recorded: int
    """Configurations the folder measured."""
    filled: int
    """Combinations the experiment's rules reject (or no entry lists), written as invalid."""
    unmeasured: int
    """Valid configurations the folder never measured (left out); -1 where the experiment could not be read."""
    format: str = FORMATS[0]

    @property
    def simulation_warning(self) -> str | None:
        """Why Kernel Tuner's simulation mode may refuse the file (a cache that lacks valid configurations), or None."""
        if self.format != FORMATS[0] or self.unmeasured == 0:
            return None
        lacks = (f"lacks {self.unmeasured} valid configuration(s) the run never measured (a sampled search)"
                 if self.unmeasured > 0 else "may lack valid configurations: the run's experiment could not be read "
                 "again to tell")
        return (f"{self.path} {lacks}; Kernel Tuner's simulation mode stops at the first one it asks for (\"all "
                f"configurations must be present in the cache\"): give it restrictions that exclude them, or export "
                f"a brute-force run")


def kernel_tuner_problem_size(problem: Problem) -> list[int]:
    """The problem size Kernel Tuner's users pass for a problem: the grid's extent, x first (``[N, M]`` where the
    problem has sizes M and N: C's columns, then its rows); else the problem's sizes in order."""
    sizes = problem.as_dict()
    if "M" in sizes and "N" in sizes:
        return [sizes["N"], sizes["M"]]
    return list(sizes.values())


@dataclass(frozen=True)
class Kernel:
    """One study's family as a Kernel Tuner kernel: its parameters, values and what is known of every combination."""

    study: str
    family: str
    problem: Problem
    names: tuple[str, ...]
    values: tuple[tuple[ParamValue, ...], ...]
    rows: list[dict[str, Any]]
    rejected: list[tuple[dict[str, ParamValue], str]]
    """Combinations the experiment's static rules reject (or that no entry lists), with the reason."""
    unmeasured: int


def export(folder: str | Path, fmt: str, out: str | Path | None = None) -> list[Exported]:
    """Write the folder's studies in ``fmt`` (FORMATS) into ``out`` (default ``<folder>/export``)."""
    if fmt not in FORMATS:
        raise TunerError(f"--format takes {' or '.join(FORMATS)}, not {fmt!r}")
    folder = Path(folder)
    try:
        df, metadata = results.load(folder)
    except (OSError, ValueError) as exc:
        raise TunerError(f"{folder}: the results table cannot be read ({exc}); give a run folder") from None
    target = Path(out) if out is not None else folder / "export"
    try:
        target.mkdir(parents=True, exist_ok=True)
        return _write(folder, target, fmt, df, metadata)
    except OSError as exc:
        raise TunerError(f"{target}: the exported files cannot be written there ({exc.strerror or exc}); give --out "
                         f"a folder that exists or can be created, and that can be written") from None


def _write(folder: Path, target: Path, fmt: str, df: pd.DataFrame, metadata: Mapping[str, Any]) -> list[Exported]:
    device = _device_names(metadata)
    written = []
    for kernel in kernels(df, metadata):
        rows = kernel.rows
        device_name = device.get(str(rows[0].get("metadata_id")), "") if rows else ""
        stem = kernel.study.replace("/", "_") + f"_{kernel.family}"
        if fmt == "t4":
            path = target / fitting_name(stem, "_t4.json")
            atomic_file.write_text(path, json.dumps(t4_document(kernel), indent=1) + "\n")
        else:
            path = target / fitting_name(stem, ".json")
            atomic_file.write_text(path, cache_text(kernel, device_name))
        written.append(Exported(path, kernel.study, kernel.family, len(rows), len(kernel.rejected),
                                kernel.unmeasured, fmt))
    if not written:
        raise TunerError(f"{folder}: the results table holds no tuned configuration to export")
    return written


def kernels(df: pd.DataFrame, metadata: Mapping[str, Any]) -> list[Kernel]:
    """Every study's families, with the rows measured and, where the experiment can be read, the rest."""
    tuned = df[df["family"] != results.BASELINE_FAMILY].drop_duplicates(["study", "config_key"])
    spaces = _spaces(metadata)
    found = []
    for (study, family), rows in tuned.groupby(["study", "family"], sort=False):
        records = rows.to_dict("records")
        space = spaces.get(str(study))
        measured = {str(row["config_key"]) for row in records}
        if space is not None and str(family) in space.choices:
            listed = space.choices[str(family)]
            names, values = tuple(listed), tuple(tuple(v) for v in listed.values())
            rejected, unmeasured = [], 0
            for combination in itertools.product(*values):
                params = dict(zip(names, combination, strict=True))
                config = Config.make(space.problem, str(family), space.dtype, params)
                if config.key in measured:
                    continue
                reason = space.rejection(config)
                if reason is None:
                    unmeasured += 1
                else:
                    rejected.append((params, reason))
        else:
            names = tuple(results.row_params(records[0]))
            values = tuple(_visited([results.row_params(row)[name] for row in records]) for name in names)
            rejected, unmeasured = [], -1
        problem = results.config_of_row(records[0]).problem
        found.append(Kernel(str(study), str(family), problem, names, values, records, rejected, unmeasured))
    return found


def _spaces(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The studies of the folder's stored experiment, by name; none where it names code (``template_dirs``),
    recordings, or cannot be read."""
    from tuner.experiment.schema import parse_experiment
    from tuner.search.study_space import study_spaces

    stored = metadata.get("experiment") if isinstance(metadata, Mapping) else None
    text = stored.get("source") if isinstance(stored, Mapping) else None
    if not isinstance(text, str) or not text:
        return {}
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        return {}
    kernels = document.get("kernels") if isinstance(document, dict) else None
    if not isinstance(kernels, list) or "template_dirs" in document or any(
            isinstance(k, dict) and "recorded" in k for k in kernels):
        return {}
    try:
        return {space.name: space for space in study_spaces(parse_experiment(text, "the folder's experiment"))}
    except TunerError:
        return {}


def _visited(values: list[ParamValue]) -> tuple[ParamValue, ...]:
    distinct = list(dict.fromkeys(values))
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in distinct)
    return tuple(sorted(distinct)) if numbers else tuple(distinct)


def _device_names(metadata: Mapping[str, Any]) -> dict[str, str]:
    environments = metadata.get("environments") if isinstance(metadata, Mapping) else None
    return {str(key): str((env.get("device") or {}).get("name", "")) for key, env in (environments or {}).items()
            if isinstance(env, dict)}


# --- Kernel Tuner's cache ----------------------------------------------------------------------------------


def cache_text(kernel: Kernel, device_name: str) -> str:
    """The cache file's text, as Kernel Tuner writes it: the header (``device_name``, ``kernel_name`` the family,
    ``problem_size`` as Kernel Tuner's users pass it, ``problem`` the sizes by name, which this package reads back,
    ``tune_params_keys`` and ``tune_params`` in the experiment's order, ``objective`` ``time``), then one record a
    line."""
    header = {"device_name": device_name, "kernel_name": kernel.family,
              "problem_size": kernel_tuner_problem_size(kernel.problem), "problem": kernel.problem.as_dict(),
              "tune_params_keys": list(kernel.names),
              "tune_params": {name: list(values) for name, values in zip(kernel.names, kernel.values, strict=True)},
              "objective": "time", "cache": {}}
    lines = [json.dumps(header, indent="")[:-3]]
    for params, record in _records(kernel):
        key = ",".join(str(params[name]) for name in kernel.names)
        lines.append(json.dumps({key: record})[1:-1] + ",")
    return "\n".join(lines).rstrip(",") + "}\n}\n"


def _records(kernel: Kernel) -> list[tuple[dict[str, ParamValue], dict[str, Any]]]:
    """Each configuration's values and cache record: ``time`` (the median, ms), ``times`` (the samples),
    ``compile_time``, ``verification_time`` 0 (verifying is part of the device time), ``benchmark_time`` (the
    device time), ``framework_time`` (the device time outside the samples, so that compile + framework time and
    the samples, as Kernel Tuner's methodology counts a configuration, give the recorded cost), ``strategy_time``
    0 and ``timestamp``. A failure names Kernel Tuner's class in ``time`` and ``__error__`` (Kernel Tuner has no
    class for a wrong result: read back, such a row is crashed)."""
    found = []
    for row in kernel.rows:
        params = results.row_params(row)
        status = str(row["status"])
        record: dict[str, Any] = {**params, "time": _number(row.get("time_median_ms"))}
        record.update({"times": _samples(row.get("samples_ms")), "compile_time": _ms(row.get("compile_time_s")),
                       "verification_time": 0.0, "benchmark_time": _ms(row.get("device_s")),
                       "framework_time": _outside_samples_ms(row),
                       "strategy_time": 0.0, "timestamp": str(row.get("measured_at") or "")})
        if status != Status.OK.value:
            record["time"] = record["__error__"] = KERNEL_TUNER_ERRORS[status]
        found.append((params, record))
    for params, _ in kernel.rejected:
        found.append((params, {**params, "time": "InvalidConfig", "times": [], "compile_time": 0.0,
                               "verification_time": 0.0, "benchmark_time": 0.0, "framework_time": 0.0,
                               "strategy_time": 0.0, "timestamp": "", "__error__": "InvalidConfig"}))
    return found


# --- T4 ------------------------------------------------------------------------------------------------------


def t4_document(kernel: Kernel) -> dict[str, Any]:
    """The T4 results (``kernel_tuner/schema/T4/1.0.0``): per evaluation its configuration, its times as in the
    cache file (``validation`` and ``search_algorithm`` 0), its invalidity and correctness and its ``time``
    measurement in ms."""
    evaluations = []
    for row in kernel.rows:
        status = str(row["status"])
        evaluations.append({
            "timestamp": str(row.get("measured_at") or ""),
            "configuration": results.row_params(row),
            "times": {"compilation": _ms(row.get("compile_time_s")), "validation": 0.0,
                      "benchmark": _ms(row.get("device_s")), "framework": _outside_samples_ms(row),
                      "search_algorithm": 0.0,
                      "runtimes": _samples(row.get("samples_ms"))},
            "invalidity": T4_INVALIDITY[status],
            "correctness": 0 if status == Status.WRONG.value else 1,
            "measurements": ([{"name": "time", "value": _number(row.get("time_median_ms")), "unit": "ms"}]
                             if status == Status.OK.value else []),
            "objectives": ["time"],
        })
    for params, reason in kernel.rejected:
        evaluations.append({"timestamp": "", "configuration": params,
                            "times": {"compilation": 0.0, "validation": 0.0, "benchmark": 0.0, "framework": 0.0,
                                      "search_algorithm": 0.0, "runtimes": []},
                            "invalidity": "constraints", "correctness": 1, "measurements": [],
                            "objectives": ["time"], "reason": reason})
    return {"schema_version": "1.0.0", "metadata": {"timeunit": "milliseconds", "kernel": kernel.family,
                                                    "problem_size": kernel_tuner_problem_size(kernel.problem),
                                                    "problem": kernel.problem.as_dict(), "study": kernel.study},
            "results": evaluations}


def _number(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def _ms(seconds: Any) -> float:
    number = _number(seconds)
    return 0.0 if number is None or not math.isfinite(number) else number * 1000.0


def _outside_samples_ms(row: Any) -> float:
    """The evaluation's device time outside its timed samples (ms, at least 0)."""
    return max(0.0, _ms(row.get("device_s")) - sum(_samples(row.get("samples_ms"))))


def _samples(value: Any) -> list[float]:
    if isinstance(value, str):
        value = json.loads(value) if value.startswith("[") else []
    try:
        return [float(s) for s in value]
    except (TypeError, ValueError):
        return []
