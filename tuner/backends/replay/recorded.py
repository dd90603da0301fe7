"""Replaying brute-force recordings: the backend of an experiment whose kernel entries name recorded spaces.

Each configuration is answered from the record of its recording (:mod:`tuner.recorded`): its outcome and
recorded failure, and for one that ran ok a timing whose median is the recorded time (the statistic the
recording ranked by: Kernel Tuner's ``time``, the mean of its runs) and whose samples are the recorded runs.
``busy_seconds`` adds each answer's recorded cost, the compile and benchmark time the recording spent on it,
so a replayed search reports what its choices would have cost on the recording's device.

Every recording is one environment: the device it names and the file, hashed.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from tuner.backends.protocol import BackendBase, Recording
from tuner.config import Config
from tuner.errors import TunerError
from tuner.kernels.discovery import template_hash
from tuner.kernels.family import Family
from tuner.measure.measurement import Measurement, Status, Timing
from tuner.recorded import RecordedSpace, load_recorded_once
from tuner.results.environment import RECORDED_BACKEND
from tuner.results.metadata import metadata_id, python_versions


class RecordedBackend(BackendBase):
    name = "replay"

    def __init__(self, families: tuple[Family, ...]):
        """``families``: those of the experiment's kernel entries, each a recording."""
        self._spaces: dict[str, RecordedSpace] = {}
        self._environments: dict[str, str] = {}
        self.environments: dict[str, dict[str, Any]] = {}
        for family in families:
            recording = family.recording
            if recording is None:
                raise TunerError(f"the kernel entry '{family.name}' is a template, not a recording: replay a "
                                 f"recorded run of it with --replay PATH")
            space = load_recorded_once(recording)
            environment = _environment(space, family.name, recording)
            identity = metadata_id(environment)
            self._spaces[family.name] = space
            self._environments[family.name] = identity
            self.environments[identity] = environment
        self.paths = tuple(dict.fromkeys(Path(space.source) for space in self._spaces.values()))
        self.busy_seconds = 0.0

    def evaluate(self, config: Config) -> Measurement:
        space = self._spaces.get(config.family)
        row = space.row_of(config.param_dict) if space is not None else None
        if space is None or row is None:
            raise TunerError(f"no recording holds the configuration '{config.key}'")
        cost = float(space.cost_s[row])
        if math.isfinite(cost):
            self.busy_seconds += cost
        return measurement(space, row)

    def recording(self) -> Recording:
        path = self.paths[0] if len(self.paths) == 1 else Path(*_common_parts(self.paths))
        return Recording(path, self.environments)

    def environment_id(self, config: Config) -> str:
        return self._environments[config.family]

    def metadata(self) -> dict[str, Any]:
        return next(iter(self.environments.values()))


def measurement(space: RecordedSpace, row: int) -> Measurement:
    """The recorded outcome of one configuration."""
    status = Status(str(space.status[row]))
    if status is not Status.OK:
        return Measurement(status, reason=f"recorded as {space.reason[row]}" if space.reason[row] else "recorded")
    runs = space.runs_ms[row]
    runs = tuple(float(r) for r in runs[~np.isnan(runs)]) if len(runs) else ()
    time_ms = float(space.time_ms[row])
    timing = Timing(median_ms=time_ms, mean_ms=float(np.mean(runs)) if runs else time_ms,
                    min_ms=min(runs) if runs else time_ms,
                    stdev_ms=float(np.std(runs, ddof=1)) if len(runs) > 1 else 0.0, samples_ms=runs)
    return Measurement(Status.OK, timing=timing)


def _environment(space: RecordedSpace, family: str, recording: Path) -> dict[str, Any]:
    created = datetime.fromtimestamp(recording.stat().st_mtime, UTC).isoformat(timespec="seconds")
    none = {"float32_gflops": None, "float64_gflops": None, "int32_gflops": None, "bandwidth_gbs": None}
    return {
        "backend": RECORDED_BACKEND,
        "device": {"name": space.device},
        "peaks": {"theoretical": dict(none), "measured": dict(none)},
        "versions": python_versions(),
        "measure": {"method": f"recorded in {recording.name}: the recorded time of each configuration"},
        "recording": {"file": str(recording), "kernel": space.kernel, "problem_size": space.problem_size,
                      "configurations": len(space), "statuses": space.status_counts()},
        "templates": {family: template_hash(family)},
        "created_utc": created,
    }


def _common_parts(paths: tuple[Path, ...]) -> tuple[str, ...]:
    parts = [p.parts for p in paths]
    common = []
    for level in zip(*parts, strict=False):
        if len(set(level)) > 1:
            break
        common.append(level[0])
    return tuple(common) or ("/",)
