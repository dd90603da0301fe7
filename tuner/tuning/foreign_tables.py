"""Whose tables a folder without a results table holds: a ``results.csv`` names its experiment in a column, and a
``counters.parquet`` its families in its configuration keys. A run does not take over a folder holding another
experiment's tables (saving its own would replace them)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from tuner.counters.store import counters_file
from tuner.results import table as results

BASELINES = frozenset({results.BASELINE_FAMILY, "cublas"})
"""The family of the vendor baseline's rows (``cublas`` in tables written before)."""
READ_ROWS = 1_000
"""Rows of results.csv read to find its experiment."""


def foreign_table(out: Path, experiment: str, families: set[str]) -> str | None:
    """How a table in ``out`` shows another experiment's results (a phrase naming the file), or None."""
    table = out / results.RESULTS_CSV
    if table.is_file() and not table.is_symlink():
        try:
            names = set(pd.read_csv(table, usecols=["experiment"], nrows=READ_ROWS)["experiment"].dropna().astype(str))
        except (OSError, ValueError):
            names = set()
        others = sorted(names - {experiment})
        if others:
            return f"{results.RESULTS_CSV} of experiment '{others[0]}'"
    counters = counters_file(out)
    if counters.is_file() and not counters.is_symlink():
        try:
            keys = pq.read_table(counters, columns=["config_key"]).column("config_key").to_pylist()
        except (OSError, ValueError, KeyError):
            keys = []
        strangers = sorted({str(key).split("/")[1] for key in keys if str(key).count("/") >= 3} - families)
        if strangers:
            return f"{counters.name} of the kernel famil{'ies' if len(strangers) > 1 else 'y'} {', '.join(strangers)}"
    return None
