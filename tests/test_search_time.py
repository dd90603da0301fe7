"""The convergence figure's time axis: a measured run's wall time; for a replayed run the recording's device time,
not the seconds the replay took."""

from __future__ import annotations

import pandas as pd
import pytest

from tuner.report.search_time import MIXED_LABEL, RECORDED_LABEL, WALL_LABEL, replayed, with_search_time

REPLAY = {"backend": "replay", "started_utc": "2026-01-01T00:00:00+00:00", "finished_utc": "2026-01-01T00:00:02+00:00"}
MEASURED = {"backend": "cpu", "started_utc": "2026-01-01T01:00:00+00:00", "finished_utc": "2026-01-01T01:10:00+00:00"}


def rows(at: list[str], study: str = "s") -> pd.DataFrame:
    return pd.DataFrame({"study": study, "strategy": "tpe", "trial": range(len(at)), "measured_at": at,
                         "wall_offset_s": [0.1 * (i + 1) for i in range(len(at))],
                         "device_s": [3.0 + i for i in range(len(at))]})


def test_a_replayed_search_is_timed_by_the_recorded_device_time():
    replay = rows(["2026-01-01T00:00:00.500+00:00", "2026-01-01T00:00:00.600+00:00", "2026-01-01T00:00:01+00:00"])
    timed, label = with_search_time(replay, [REPLAY])
    assert label == RECORDED_LABEL
    assert list(timed["search_time_s"]) == pytest.approx([3.0, 7.0, 12.0])  # 3, 3 + 4, 3 + 4 + 5


def test_a_measured_search_keeps_its_wall_time():
    measured = rows(["2026-01-01T01:00:01+00:00", "2026-01-01T01:00:02+00:00"])
    timed, label = with_search_time(measured, [REPLAY, MEASURED])
    assert label == WALL_LABEL and list(timed["search_time_s"]) == pytest.approx([0.1, 0.2])


def test_a_folder_of_both_times_each_line_its_own_way():
    both = pd.concat([rows(["2026-01-01T00:00:01+00:00"], "replayed"),
                      rows(["2026-01-01T01:00:01+00:00"], "measured")], ignore_index=True)
    timed, label = with_search_time(both, [REPLAY, MEASURED])
    assert label == MIXED_LABEL
    assert list(timed["replayed"]) == [True, False]
    assert list(timed["search_time_s"]) == pytest.approx([3.0, 0.1])


def test_an_unfinished_replay_runs_on_and_a_folder_without_runs_is_measured():
    at = rows(["2026-01-01T05:00:00+00:00"])
    assert list(replayed(at, [{**REPLAY, "finished_utc": None}])) == [True]
    assert list(replayed(at, [])) == [False]
    assert list(replayed(at.drop(columns="measured_at"), [REPLAY])) == [False]
