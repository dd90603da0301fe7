"""This tuner's own recordings as recorded spaces: a run folder (or its results.parquet), one space per study.

A study (one problem and dtype of an experiment) becomes one space. Its parameters are every parameter its rows
give, in name order, and ``family`` first where the study searched several families; a parameter a family does
not have takes the value ``-`` in that family's rows. Each parameter's values are those the rows take, sorted
where they are all numbers, so the product of a space is that of the values its rows visited: an exhaustive
recording (every valid configuration measured) gives the space its experiment lists, valid ones recorded.

Per configuration (the first row of each configuration key; vendor baselines left out): its status and reason,
its median time where ok, its timed samples, and as cost its compile time plus its recorded device time.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tuner.errors import TunerError
from tuner.recorded.space import RecordedSpace, runs_matrix
from tuner.recorded.table_rows import check_table_rows
from tuner.results import table as results

MISSING = "-"
"""The value of a parameter in the rows of a family that does not have it."""


def is_run_folder(path: Path) -> bool:
    return (path.is_dir() and (path / results.RESULTS_PARQUET).is_file()) or path.name == results.RESULTS_PARQUET


def load_run_folder(path: str | Path) -> dict[str, RecordedSpace]:
    """Every study's recorded space, by study name."""
    try:
        df, metadata = results.load(path)
    except (OSError, ValueError) as exc:
        raise TunerError(f"{path}: the results table cannot be read ({exc})") from None
    missing = [c for c in ("study", "family", "config_key", "status") if c not in df.columns]
    if missing:
        raise TunerError(f"{path}: the results table lacks the column(s) {', '.join(missing)}")
    df = df[df["family"] != results.BASELINE_FAMILY].drop_duplicates("config_key")
    check_table_rows(df, path)
    devices = _devices(metadata)
    spaces = {}
    for study, rows in df.groupby("study", sort=False):
        spaces[str(study)] = _space(rows, f"{path}:{study}", devices)
    if not spaces:
        raise TunerError(f"{path}: the results table holds no tuned configuration")
    return spaces


def _space(rows: pd.DataFrame, source: str, devices: dict[str, str]) -> RecordedSpace:
    names = sorted(c for c in rows.columns if c.startswith("p_") and rows[c].notna().any())
    columns = {name.removeprefix("p_"): [_value(v) for v in rows[name]] for name in names}
    if rows["family"].nunique() > 1:
        columns = {"family": [str(f) for f in rows["family"]], **columns}
    values = {name: _ordered(column) for name, column in columns.items()}
    indices = np.array([[values[n].index(v) for v in column] for n, column in columns.items()],
                       dtype=np.int32).T.reshape(len(rows), len(columns))
    ok = (rows["status"] == "ok").to_numpy()
    time = pd.to_numeric(rows.get("time_median_ms"), errors="coerce").to_numpy(dtype=float)
    cost = sum((pd.to_numeric(rows[c], errors="coerce").fillna(0.0).to_numpy(dtype=float)
                for c in ("compile_time_s", "device_s") if c in rows), np.zeros(len(rows)))
    samples = rows["samples_ms"] if "samples_ms" in rows else pd.Series([None] * len(rows))
    used = rows["metadata_id"].map(devices).dropna() if "metadata_id" in rows else pd.Series(dtype=str)
    return RecordedSpace(
        source=source, device=str(used.mode().iloc[0]) if len(used) else "", kernel=",".join(rows["family"].unique()),
        problem_size=rows["problem"].iloc[0] if "problem" in rows else None, names=tuple(columns),
        values=tuple(tuple(values[n]) for n in columns), indices=indices,
        status=rows["status"].astype(str).to_numpy(), reason=tuple(rows.get("reason", pd.Series([""] * len(rows)))
                                                                     .fillna("").astype(str)),
        time_ms=np.where(ok, time, math.nan), runs_ms=runs_matrix([_samples(s) for s in samples], source), cost_s=cost,
    )


def _value(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return MISSING
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _ordered(column: list[Any]) -> list[Any]:
    distinct = list(dict.fromkeys(column))
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in distinct):
        return sorted(distinct)
    return distinct


def _samples(value: Any) -> list[float]:
    if isinstance(value, str):  # the table keeps a configuration's samples as a JSON list
        value = json.loads(value) if value.startswith("[") else []
    try:
        return [float(s) for s in value]
    except (TypeError, ValueError):  # nothing recorded (None, NA, NaN)
        return []


def _devices(metadata: dict[str, Any]) -> dict[str, str]:
    environments = metadata.get("environments") or {}
    return {key: str((env.get("device") or {}).get("name", "")) for key, env in environments.items()
            if isinstance(env, dict)}
