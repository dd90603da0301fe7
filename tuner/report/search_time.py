"""The time axis of a search: the wall time of a measured run, the recorded device time of a replayed one.

A replay answers each evaluation from a recording in a fraction of the time the recording took: its wall seconds
are the replay's speed, not the search's cost. For the rows a replay answered (measured while a run into the folder
that replayed a recording ran), the time of an evaluation is the recording's device time of the evaluations the
search made up to it, counted from 0.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

WALL_LABEL = "wall time since the run started (s)"
RECORDED_LABEL = "recorded device time so far (s), not the replay's own"
MIXED_LABEL = "wall time since the run started (s); replayed: recorded device time (s)"
TIME_COLUMN = "search_time_s"


def replayed(rows: pd.DataFrame, runs: list[dict[str, Any]]) -> pd.Series:
    """Whether each row was answered by a replay: measured between the start and the end of a run that replayed
    (the end of an unfinished run is open)."""
    found = pd.Series(False, index=rows.index)
    if "measured_at" not in rows or not runs:
        return found
    at = pd.to_datetime(rows["measured_at"], utc=True, errors="coerce", format="ISO8601")
    for entry in runs:
        if entry.get("backend") != "replay" or not entry.get("started_utc"):
            continue
        start = pd.to_datetime(entry["started_utc"], utc=True, errors="coerce", format="ISO8601")
        end = pd.to_datetime(entry.get("finished_utc"), utc=True, errors="coerce", format="ISO8601")
        inside = at >= start if pd.isna(end) else (at >= start) & (at <= end)
        found |= inside.fillna(False).astype(bool)
    return found


def with_search_time(rows: pd.DataFrame, runs: list[dict[str, Any]]) -> tuple[pd.DataFrame, str]:
    """``rows`` (one study's or several) with ``search_time_s``: ``wall_offset_s`` where measured; where every row of
    a (study, strategy) line was replayed, the recorded ``device_s`` summed in the order the replay answered them.
    Also the axis' label."""
    rows = rows.copy()
    rows[TIME_COLUMN] = rows["wall_offset_s"] if "wall_offset_s" in rows else float("nan")
    by_replay = replayed(rows, runs)
    rows["replayed"] = by_replay
    if not by_replay.any() or "device_s" not in rows:
        return rows, WALL_LABEL
    for _, line in rows.groupby(["study", "strategy"], dropna=False, sort=False):
        if not by_replay[line.index].all():
            continue
        ordered = line.sort_values(["wall_offset_s", "trial"]) if "wall_offset_s" in line else line
        rows.loc[ordered.index, TIME_COLUMN] = pd.to_numeric(ordered["device_s"], errors="coerce").fillna(0.0).cumsum()
    return rows, RECORDED_LABEL if by_replay.all() else MIXED_LABEL
