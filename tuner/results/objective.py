"""How a table's rows compare: their performance (GFLOP/s, or GB/s for kernels without arithmetic) and unit, and
the best rows by an objective (a measurement's performance is :mod:`tuner.results.objectives`')."""

from __future__ import annotations

import pandas as pd

from tuner.measure.measurement import Status
from tuner.results.objectives import DEFAULT, OBJECTIVES, Objectives
from tuner.results.schema import BASELINE_FAMILY


def performance(df: pd.DataFrame) -> pd.Series:
    """Each row's performance: its ``performance`` column, or (tables recorded before it) its GFLOP/s."""
    if "performance" in df:
        return df["performance"].fillna(df["gflops"]).astype(float)
    return df["gflops"].astype(float)


def unit_of(df: pd.DataFrame) -> str:
    """The unit of the performance of these rows: GFLOP/s, or GB/s where none of them does arithmetic."""
    flops = pd.to_numeric(df.get("flops", pd.Series(dtype=float)), errors="coerce")
    return "GB/s" if len(flops) and (flops.fillna(0) == 0).all() else "GFLOP/s"


def best_rows(df: pd.DataFrame, objective: Objectives = DEFAULT) -> pd.DataFrame:
    """The best ``ok`` tuned configuration (baseline rows aside) of each problem and dtype: the fastest, or by the
    objective's first name (tuner.results.objectives) the one with the least energy or energy-delay product."""
    score = OBJECTIVES[objective[0]].score(df, performance(df))
    ok = df[(df["status"] == Status.OK.value) & (df["family"] != BASELINE_FAMILY) & score.notna()]
    if ok.empty:
        return ok.reset_index(drop=True)
    best = ok.loc[score[ok.index].groupby([ok["problem"], ok["dtype"]], sort=False).idxmax()]
    return best.sort_values(["M", "N", "K", "dtype"]).reset_index(drop=True)
