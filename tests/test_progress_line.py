"""The progress line on a terminal: one line rewritten in place, fitted to the terminal's width so that it never
wraps (a wrapped line leaves a cut-off copy per update), the best configuration's description shortened first."""

from __future__ import annotations

import io
import re

import pytest

from tuner.config import Config, Problem
from tuner.tuning.progress import Progress, fitted_line

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
    text, reason = text.split("\x1b[K\n  [budget of 400 trials spent]") if columns == 80 else (text, "")
    assert text.count("\n") == (0 if columns == 80 else 1) and "\n" not in reason.rstrip("\n")
    updates = [re.sub(r"\x1b\[K\n?$", "", part) for part in text.split("\r") if part]
    assert len(updates) == 6  # one line, rewritten in place
    assert all(0 < len(update) <= columns - 1 for update in updates), [len(u) for u in updates]
    assert all("/4096x4096x4096/float32  " in update for update in updates)  # the study's problem and dtype
    assert all(f"{done}/400  best {12345.6 * done:.1f} GFLOP/s" in updates[done - 1] for done in range(1, 6))
    assert all("elapsed 0:00" in update for update in updates)
    if columns == 120:
        assert updates[-1].endswith("elapsed 0:00  [budget of 400 trials spent]")


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
