"""The progress line on a terminal: one line rewritten in place (tqdm), fitted to the terminal's width so that it
never wraps (a wrapped line leaves a cut-off copy per update), the best configuration's description shortened first;
in a log file whole lines without carriage returns; nothing when quiet; no time left promised before a pace."""

from __future__ import annotations

import io

import pytest

from tuner.config import Config, Problem
from tuner.tuning.progress import Progress, fitted_line, time_left

LONG_NAME = "an_experiment_with_a_long_name/4096x4096x4096/float32"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _config(**params: int) -> Config:
    return Config(Problem(4096, 4096, 4096), "regblock", "float32", tuple(params.items()))


@pytest.mark.parametrize("columns", [80, 120])
def test_every_update_fits_the_terminal_on_one_line(monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    stream = Terminal()
    progress = Progress(stream=stream)
    progress.study_started(LONG_NAME, 400, None)
    best = _config(BM=128, BN=128, BK=32, TM=8, TN=8, WM=64, WN=32, STAGES=3, PERSISTENT=1, SPLIT=2)
    for done in range(1, 6):
        progress.evaluated(done, done, (12345.6 * done, best))
    progress.study_finished("budget of 400 trials spent")
    text = stream.getvalue()
    line, reason = text.split("\n  [budget of 400 trials spent]") if columns == 80 else (text, "")
    assert line.count("\n") == (0 if columns == 80 else 1) and reason in ("", "\n")  # one line, then the reason
    updates = [part.rstrip(" \n") for part in line.split("\r") if part.strip()]
    assert len(updates) >= 6
    assert all(0 < len(update) <= columns - 1 for update in updates), [len(u) for u in updates]
    assert all("/4096x4096x4096/float32  " in update for update in updates)  # the study's problem and dtype
    shown = [update for update in updates if "best -" not in update]
    assert all(any(f"{done}/400  best {12345.6 * done:.1f} GFLOP/s" in u for u in shown) for done in range(1, 6))
    assert all("elapsed 0:00" in update for update in updates)
    if columns == 120:
        assert updates[-1].endswith("elapsed 0:00  [budget of 400 trials spent]")


def test_no_time_left_is_promised_before_the_first_evaluation_gives_a_pace():
    stream = io.StringIO()
    progress = Progress(stream=stream)
    progress.study_started("replayed/1x1x1/float32", 30, 120.0)
    progress.evaluated(0, 0, None)
    assert "left" not in stream.getvalue()
    assert time_left(30, 0, 0.5, 120.0) is None
    assert time_left(20, 10, 2.0, 120.0) == pytest.approx(4.0)  # the pace of the new evaluations
    assert time_left(20, 10, 100.0, 120.0) == pytest.approx(20.0)  # at most what the time budget leaves
    assert time_left(0, 0, 1.0, None) == 0.0


def test_quiet_shows_nothing(monkeypatch):
    stream = Terminal()
    progress = Progress(quiet=True, stream=stream)
    progress.study_started(LONG_NAME, 4, None)
    progress.evaluated(1, 1, None)
    progress.note("a note")
    progress.study_finished("done")
    assert stream.getvalue() == ""


def test_a_wide_terminal_shows_the_line_whole():
    line = fitted_line(["study", "3/40"], "best 1.0 GFLOP/s", "tiled TILE_WIDTH=16", ["elapsed 0:01"], 200)
    assert line == "study  3/40  best 1.0 GFLOP/s (tiled TILE_WIDTH=16)  elapsed 0:01"


def test_the_description_is_shortened_first():
    line = fitted_line(["study/1x1x1/float32", "3/40"], "best 1.0 GFLOP/s", "regblock BM=128 BN=128 BK=32 TM=8",
                       ["elapsed 0:01"], 70)
    assert line == "study/1x1x1/float32  3/40  best 1.0 GFLOP/s (regblock …)  elapsed 0:01"
    assert len(line) == 70


def test_a_very_narrow_terminal_cuts_the_line_with_an_ellipsis():
    line = fitted_line(["a_long_study_name/1x1x1/float32", "3/40"], "best 1.0 GFLOP/s", "tiled TILE_WIDTH=16",
                       ["elapsed 0:01"], 30)
    assert len(line) == 30 and line.endswith("…") and "tiled" not in line


def test_a_log_file_gets_whole_lines():
    stream = io.StringIO()
    progress = Progress(stream=stream)
    progress.study_started(LONG_NAME, 40, None)
    progress.evaluated(1, 1, (1.5, _config(BM=64, BN=64, BK=16, TM=4, TN=4, WM=32, WN=32, STAGES=2, PERSISTENT=0,
                                             SPLIT=1)))
    progress.study_finished("done")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and "SPLIT=1)" in lines[0] and "\r" not in stream.getvalue()
