"""Speed against energy in a results table: the rows an objective ranks first, the Pareto front, its knee.

Within one study (a problem and a dtype) a row is a point (median time, energy per launch), both to be made
small. The Pareto front is the set of ``ok`` rows that no other row beats in both (or equals in one and beats in
the other), from the fastest to the most efficient. Its knee is the point with the least sum of its time and
energy, each scaled to [0, 1] between the front's two ends: the point farthest below the straight line joining
the fastest and the most efficient, where giving up a little speed stops buying much energy. A front of one or
two points has no interior: its fastest point is then the knee.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pandas as pd

TIME_COLUMN, ENERGY_COLUMN = "time_median_ms", "energy_j"


def measured(rows: pd.DataFrame) -> pd.DataFrame:
    """The ok rows that have both a time and an energy."""
    if ENERGY_COLUMN not in rows:
        return rows.iloc[0:0]
    times = pd.to_numeric(rows[TIME_COLUMN], errors="coerce")
    joules = pd.to_numeric(rows[ENERGY_COLUMN], errors="coerce")
    return rows[(rows["status"] == "ok") & (times > 0) & (joules > 0)]


def pareto_front(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows (of one study) that no other beats in time and energy, fastest first; one row per configuration
    where a configuration appears twice."""
    points = measured(rows)
    points = points.assign(_t=pd.to_numeric(points[TIME_COLUMN]), _e=pd.to_numeric(points[ENERGY_COLUMN]))
    points = points.sort_values(["_t", "_e"], kind="stable")
    if "config_key" in points:
        points = points.drop_duplicates("config_key")
    keep, least = [], float("inf")
    for index, joules in zip(points.index, points["_e"], strict=True):
        if joules < least:
            keep.append(index)
            least = joules
    return points.loc[keep].drop(columns=["_t", "_e"])


def knee(front: pd.DataFrame) -> object:
    """The index of the front's knee (see the module text); the front must not be empty."""
    if len(front) <= 2:
        return front.index[0]
    times = pd.to_numeric(front[TIME_COLUMN])
    joules = pd.to_numeric(front[ENERGY_COLUMN])
    spread_t, spread_e = times.max() - times.min(), joules.max() - joules.min()
    scaled = (times - times.min()) / (spread_t or 1.0) + (joules - joules.min()) / (spread_e or 1.0)
    return scaled.idxmin()


@dataclass(frozen=True)
class StudyFront:
    """One study's front and its three named points (indices into the table)."""

    problem: str
    dtype: str
    front: pd.DataFrame
    fastest: object
    efficient: object
    knee: object
    points: int
    """Rows of the study with both a time and an energy."""


def study_fronts(df: pd.DataFrame, baseline_family: str) -> Iterator[StudyFront]:
    """The front of every study whose rows hold energy (the baseline rows aside), in the table's order."""
    tuned = df[df["family"] != baseline_family]
    for (problem, dtype), rows in tuned.groupby(["problem", "dtype"], sort=False):
        front = pareto_front(rows)
        if front.empty:
            continue
        yield StudyFront(str(problem), str(dtype), front, front.index[0], front.index[-1], knee(front),
                         len(measured(rows)))
