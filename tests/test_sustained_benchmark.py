"""benchmarks/sustained.py's arithmetic: the top rows by burst time, both ranks, and the rank correlations."""

from __future__ import annotations

import pandas as pd
import pytest

from benchmarks.sustained import agreement, ranked
from tuner.errors import TunerError


def _rows(burst: list[float], sustained: list[float | None]) -> pd.DataFrame:
    return pd.DataFrame({"family": "wgmma", "status": ["ok"] * len(burst), "time_median_ms": burst,
                         "energy_time_ms": sustained})


def test_the_top_rows_are_ranked_both_ways_and_compared():
    df = _rows([1.0, 1.1, 1.2, 1.3, 5.0], [1.5, 1.4, 1.6, 1.7, None])
    rows = ranked(df, top=4)
    assert rows["burst_rank"].tolist() == [1, 2, 3, 4] and rows["sustained_rank"].tolist() == [2, 1, 3, 4]
    summary = agreement(rows)
    assert summary["spearman"] == pytest.approx(0.8) and summary["kendall"] == pytest.approx(4 / 6)
    assert summary["fastest_changes"] and summary["burst_fastest_sustained_rank"] == 2
    assert summary["sustained_over_burst_median"] == pytest.approx((1.7 / 1.3 + 1.6 / 1.2) / 2)


def test_a_run_without_sustained_times_is_refused():
    with pytest.raises(TunerError, match="measure.energy on"):
        ranked(_rows([1.0, 2.0, 3.0], [None, None, None]), top=20)
