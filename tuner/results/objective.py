"""What the search maximizes and how rows compare: a measurement's performance (GFLOP/s, or GB/s for a kernel
without arithmetic), a table's performance and unit, and its best rows by an objective."""

from __future__ import annotations

import pandas as pd

from tuner.config import Config
from tuner.kernels.model import Cost
from tuner.measure.measurement import Measurement, Status
from tuner.results.analytics import config_cost
from tuner.results.objectives import DEFAULT, Objective, objective_score
from tuner.results.schema import BASELINE_FAMILY


def median_seconds(measurement: Measurement) -> float | None:
    """The median time of a timed ``ok`` measurement, in seconds."""
    if measurement.status is not Status.OK or measurement.timing is None or measurement.timing.median_ms <= 0:
        return None
    return measurement.timing.median_ms * 1e-3


def performance_of(work: Cost | None, measurement: Measurement) -> float | None:
    """What the search maximizes, from the configuration's cost: GFLOP/s at the median time for a kernel that
    computes, the effective bandwidth (compulsory bytes over the median time, GB/s) for one that only moves data;
    None unless ok (or where the cost model is not defined)."""
    seconds = median_seconds(measurement)
    if seconds is None or work is None:
        return None
    return (work.flops if work.flops else work.compulsory_bytes) / seconds / 1e9


def objective_of(config: Config, measurement: Measurement) -> float | None:
    """:func:`performance_of` a configuration, its cost derived here."""
    if median_seconds(measurement) is None:
        return None
    return performance_of(config_cost(config), measurement)


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
    """The best ``ok`` tuned configuration (baseline rows aside) of each problem and dtype: the fastest, or by the
    objective's first name (tuner.results.objectives) the one with the least energy or energy-delay product."""
    score = objective_score(df, objective[0], performance(df))
    ok = df[(df["status"] == Status.OK.value) & (df["family"] != BASELINE_FAMILY) & score.notna()]
    if ok.empty:
        return ok.reset_index(drop=True)
    best = ok.loc[score[ok.index].groupby([ok["problem"], ok["dtype"]], sort=False).idxmax()]
    return best.sort_values(["M", "N", "K", "dtype"]).reset_index(drop=True)
