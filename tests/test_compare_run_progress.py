"""A comparison's progress: the time left from each strategy's pace and the pool's CPU seconds per second; in a
log, whole lines; nothing when quiet."""

from __future__ import annotations

import pytest

from tuner.compare.run_progress import RunProgress

RUNS = [("bo", 100.0), ("bo", 100.0), ("random", 100.0), ("random", 100.0)]


def test_the_time_left_follows_each_strategys_pace_and_the_pools_throughput():
    shown = RunProgress(RUNS, note=None)
    assert shown.time_left(1.0) is None  # no pace before the first run
    shown("bo", "space", 100.0, 10.0)
    # 0.1 CPU s per evaluation for bo, and for random (no run of its own yet): 30 CPU s left, at 2 CPU s per s
    assert shown.time_left(5.0) == pytest.approx(15.0)
    shown("random", "space", 100.0, 1.0)
    # bo 100 × 0.1 + random 100 × 0.01 = 11 CPU s left, at 1 CPU s per s
    assert shown.time_left(11.0) == pytest.approx(11.0)


def test_a_log_gets_whole_lines_with_the_time_left_and_the_cpu_time_by_strategy(capsys):
    notes: list[str] = []
    shown = RunProgress(RUNS, note=notes.append)
    for strategy, weight in RUNS:
        shown(strategy, "space", weight, 1.0)
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = err.splitlines()
    assert lines[0].startswith("runs: 1 of 4 done  elapsed 0:00  ~0:") and "left" in lines[0]
    assert lines[-1].startswith("runs: 4 of 4 done  elapsed 0:00  (4 s of CPU time; last random on space)")
    assert notes == ["CPU time by strategy: bo 2 s, random 2 s"]


def test_quiet_shows_nothing(capsys):
    shown = RunProgress(RUNS, note=None)
    for strategy, weight in RUNS:
        shown(strategy, "space", weight, 1.0)
    assert capsys.readouterr().err == ""
