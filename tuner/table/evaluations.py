"""Every ok evaluation some tuning runs recorded, as candidates for prediction: each configuration with the fastest
median time any of the runs measured for it, and the device they ran on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner.config import Config
from tuner.table.build import environment, ok_times, read_run
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
        ok_times(df, times)
        for metadata_id in df["metadata_id"].unique() if "metadata_id" in df else ():
            found = environment(metadata, metadata_id).get("device")
            device = device or (dict(found) if isinstance(found, Mapping) else {})
    sms = device.get("multiprocessors")
    return Recorded(times, sms if isinstance(sms, int) and sms > 0 else None,
                    arch_of(device.get("compute_capability")) if isinstance(device.get("compute_capability"), str)
                    else None)


def evaluation_candidates(run_dirs: Sequence[Path]) -> list[Candidate]:
    runs = recorded(run_dirs)
    return candidates_of(list(runs.times.items()), runs.multiprocessors, runs.arch)
