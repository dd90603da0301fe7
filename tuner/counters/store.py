"""The counters of a run folder (``counters.parquet``) and the results columns made from them.

``counters.parquet`` holds one row per counted configuration and GPU model: the bytes at each level, the
operations, how they were counted and under which conditions (profiler version, clock and cache control, replay
passes). Each save of the results table joins these rows onto it by configuration key and GPU name, adding the
counters' columns and the measured/model ratios (the README lists them with the other columns).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow

from tuner import atomic_file

COUNTERS_PARQUET = "counters.parquet"
KEY = ("config_key", "gpu_name")
MEASURED = ("dram_bytes", "l2_bytes", "l1_bytes", "l1_requested_bytes", "shared_wavefronts", "flops_counted",
            "flops_counted_how", "tensor_instructions", "counters_time_ms")
"""The counted columns the results table takes."""
CONDITIONS = ("gpu_uuid", "counted_utc", "ncu_version", "clock_control", "cache_control", "replay_passes",
              "sm_clock_mhz", "metrics_missing", "raw_metrics")
"""What only counters.parquet keeps: where, when and how each configuration was counted."""
LEVEL_BYTES = {"dram": "dram_bytes", "l2": "l2_bytes", "l1": "l1_bytes"}
DERIVED = (*(f"intensity_{level}" for level in LEVEL_BYTES), *(f"{level}_vs_model" for level in LEVEL_BYTES),
           "requested_vs_model", "flops_vs_model")
RESULT_COLUMNS = (*MEASURED, *DERIVED)
TEXT = frozenset({"config_key", "gpu_name", "gpu_uuid", "counted_utc", "ncu_version", "clock_control",
                  "cache_control", "metrics_missing", "raw_metrics", "flops_counted_how"})


def counters_file(folder: str | Path) -> Path:
    return Path(folder) / COUNTERS_PARQUET


def empty() -> pd.DataFrame:
    return _typed(pd.DataFrame(columns=[*KEY, *MEASURED, *CONDITIONS]))


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    for column in [*KEY, *MEASURED, *CONDITIONS]:
        if column not in df:
            df[column] = pd.NA
        df[column] = df[column].astype("string") if column in TEXT else pd.to_numeric(df[column], errors="coerce")
    return df[[*KEY, *MEASURED, *CONDITIONS]].reset_index(drop=True)


def load(folder: str | Path) -> pd.DataFrame:
    """The folder's counters (none where it has no readable counters.parquet)."""
    path = counters_file(folder)
    if not path.is_file():
        return empty()
    try:
        return _typed(pd.read_parquet(path))
    except (OSError, ValueError, pyarrow.ArrowException):
        return empty()


def raw_json(metrics: dict[str, tuple[str, str]]) -> str:
    return json.dumps({name: list(value) for name, value in sorted(metrics.items())})


def merge(folder: str | Path, rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Add counted rows to the folder's counters (a configuration counted again on the same GPU model replaces
    its row); returns all of them."""
    new = _typed(pd.DataFrame(list(rows)))
    if new.empty:
        return load(folder)
    old = load(folder)
    if not old.empty:
        keys = set(zip(new["config_key"], new["gpu_name"], strict=True))
        old = old[[k not in keys for k in zip(old["config_key"], old["gpu_name"], strict=True)]]
    merged = new if old.empty else pd.concat([old, new], ignore_index=True)
    atomic_file.replace_with(counters_file(folder), lambda path: merged.to_parquet(path, index=False))
    return merged


def counted_keys(counters: pd.DataFrame) -> set[tuple[str, str]]:
    return set(zip(counters["config_key"].astype(str), counters["gpu_name"].astype(str), strict=True))


def _ratio(numerator: pd.Series, denominator: pd.Series) -> pd.Series:
    n = pd.to_numeric(numerator, errors="coerce").astype(float)
    d = pd.to_numeric(denominator, errors="coerce").astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (n / d.where(d > 0)).astype(float)


def join(df: pd.DataFrame, counters: pd.DataFrame) -> pd.DataFrame:
    """The results table with the counted columns and their ratios (empty where a row was not counted); columns
    of an earlier join are replaced."""
    base = df.drop(columns=[c for c in RESULT_COLUMNS if c in df.columns])
    if counters.empty or base.empty or "config_key" not in base:
        return base
    picked = _typed(counters.copy())[[*KEY, *MEASURED]].drop_duplicates(list(KEY), keep="last")
    keys = pd.DataFrame({"config_key": base["config_key"].astype("string"),
                         "gpu_name": base.get("gpu_name", pd.Series(pd.NA, index=base.index)).astype("string")})
    found = keys.merge(picked, on=list(KEY), how="left")
    found.index = base.index
    joined = pd.concat([base, found[list(MEASURED)]], axis=1)
    for level, column in LEVEL_BYTES.items():
        joined[f"intensity_{level}"] = _ratio(joined["flops_counted"], joined[column])
    model = joined.get("bytes_model", pd.Series(np.nan, index=joined.index))
    for level, column in LEVEL_BYTES.items():
        joined[f"{level}_vs_model"] = _ratio(joined[column], model)
    joined["requested_vs_model"] = _ratio(joined["l1_requested_bytes"], model)
    joined["flops_vs_model"] = _ratio(joined["flops_counted"], joined.get("flops", pd.Series(np.nan,
                                                                                             index=joined.index)))
    return joined


def join_folder(df: pd.DataFrame, folder: str | Path) -> pd.DataFrame:
    """``join`` with the folder's counters (the table as it is where the folder has none)."""
    counters = load(folder)
    return df if counters.empty and not any(c in df.columns for c in RESULT_COLUMNS) else join(df, counters)


def conditions(counters: pd.DataFrame) -> dict[str, Any]:
    """What metadata.json says of a folder's counters: how many, and under which conditions they were read."""
    if counters.empty:
        return {}

    def values(column: str) -> list[Any]:
        found = counters[column].dropna().unique().tolist()
        return sorted(v.item() if hasattr(v, "item") else v for v in found)

    missing = sorted({m for text in counters["metrics_missing"].dropna() for m in str(text).split(",") if m})
    return {"file": COUNTERS_PARQUET, "configurations": len(counters), "gpus": values("gpu_name"),
            "ncu_versions": values("ncu_version"), "clock_control": values("clock_control"),
            "cache_control": values("cache_control"), "replay_passes": values("replay_passes"),
            "metrics_missing": missing}
