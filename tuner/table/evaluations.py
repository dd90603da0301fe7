"""Every ok evaluation some tuning runs recorded, as candidates for prediction: each configuration with the fastest
median time any of the runs measured for it, and the device they ran on."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from tuner.config import Config
from tuner.measure.measurement import Status
from tuner.results import table as results
from tuner.table.build import environment, read_run
from tuner.table.predict import Candidate, arch_of, candidates_of


@dataclass(frozen=True)
class Recorded:
    """Every ok evaluation of some runs: (configuration, fastest median time), with the device they ran on."""

    times: dict[Config, float]
    multiprocessors: int | None
    arch: str | None


def recorded(run_dirs: Sequence[Path]) -> Recorded:
    times: dict[Config, float] = {}
    device: dict[str, Any] = {}
    for run_dir in run_dirs:
        df, metadata = read_run(run_dir)
        ok = df[(df["status"] == Status.OK.value) & (df["family"] != results.BASELINE_FAMILY)
                & pd.to_numeric(df["time_median_ms"], errors="coerce").gt(0)]
        for _, row in ok.iterrows():
            config = results.config_of_row(row)
            times[config] = min(times.get(config, math.inf), float(row["time_median_ms"]))
            found = environment(metadata, row.get("metadata_id")).get("device")
            device = device or (dict(found) if isinstance(found, Mapping) else {})
    sms = device.get("multiprocessors")
    return Recorded(times, sms if isinstance(sms, int) and sms > 0 else None,
                    arch_of(device.get("compute_capability")) if isinstance(device.get("compute_capability"), str)
                    else None)


def evaluation_candidates(run_dirs: Sequence[Path]) -> list[Candidate]:
    runs = recorded(run_dirs)
    return candidates_of(list(runs.times.items()), runs.multiprocessors, runs.arch)
