"""The benchmarks' machine-usage sampler and the search window they average it over."""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest

from benchmarks.machine_usage import MachineUsage
from benchmarks.overhead_vs_kernel_tuner import _search_window
from tests.patience import patient


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="needs Linux's /proc/stat")
@pytest.mark.slow
def test_a_busy_core_shows_in_the_cpu_share_and_samples_outside_the_window_are_left_out():
    start = time.time()
    with MachineUsage() as usage:
        deadline = time.monotonic() + patient(1.2)
        while len(usage.samples) < 3 and time.monotonic() < deadline:  # a busy core until three samples are in
            pass
    end = time.time()
    cpu, _ = usage.mean(start, end)
    assert len(usage.samples) >= 3 and cpu is not None and 0 < cpu <= 100
    assert usage.mean(end + 1, end + 2) == (None, None)


def test_the_search_window_runs_from_the_search_start_to_the_last_evaluation(tmp_path):
    rows = pd.DataFrame({"measured_at": ["2026-01-01T00:00:10.000+00:00", "2026-01-01T00:00:12.500+00:00"],
                         "wall_offset_s": [2.0, 4.5]})
    rows.to_parquet(tmp_path / "results.parquet")
    start, end = _search_window(tmp_path)
    origin = pd.Timestamp("2026-01-01T00:00:00Z").timestamp()
    assert (start - origin, end - origin) == pytest.approx((8.0, 12.5))
