"""The replay backend: answers every evaluation from a recorded results table, never inventing a number.

A recording is a previous run's output folder (or its results.parquet); each configuration is answered with the
row recorded for its key, in the environment it was measured in, with its counters, device time and, under a
pace, that device time in wall time. The default recordings of shipped experiments are named here. What a user
sees of it: the README's section on replaying a recorded run.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow

from tuner.backends.abilities import Ability
from tuner.backends.gpus import parse_gpus
from tuner.backends.protocol import Backend, BackendBase, Opening, Recording
from tuner.backends.replay.later_parameters import CompletedCounters, completed
from tuner.backends.replay.recorded import RecordedBackend
from tuner.config import Config, Problem
from tuner.counters.sources import RecordedCounters
from tuner.energy.columns import energy_from_row
from tuner.errors import TunerError
from tuner.measure.measurement import Measurement
from tuner.recorded import is_recorded
from tuner.recorded.table_rows import check_table_rows
from tuner.results import table as results
from tuner.space.entry_space import entry_families

if TYPE_CHECKING:
    from tuner.experiment.schema import Experiment

PROJECT_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_RECORDINGS: dict[str, Path] = {
    "fermi_like": PROJECT_ROOT / "experiments" / "data" / "fermi_like_h100",
}


def default_recording(experiment_name: str) -> Path | None:
    """The recording shipped for an experiment, where there is one."""
    return DEFAULT_RECORDINGS.get(experiment_name)


class ReplayBackend(BackendBase):
    name = "replay"
    abilities = frozenset({Ability.MEASURES_ENERGY, Ability.READS_COUNTERS})
    on_gpus = True

    @classmethod
    def serves(cls, experiment: Experiment) -> bool:
        """The default of an experiment whose kernel entries are recordings (their only backend)."""
        return is_recorded(experiment)

    @classmethod
    def open(cls, experiment: Experiment, opening: Opening) -> Backend:
        """The recording named (``replay``), else the one shipped for the experiment; kernel entries that are
        recordings are replayed from them (:class:`RecordedBackend`)."""
        if opening.replay is None and is_recorded(experiment):
            return RecordedBackend(tuple(entry_families(experiment).values()))
        recording = opening.replay if opening.replay is not None else default_recording(experiment.name)
        if recording is None:
            raise TunerError(f"{opening.name('backend', 'replay')} needs {opening.name('replay', 'PATH')}: a recorded "
                             f"run folder or results.parquet (experiment '{experiment.name}' has no shipped "
                             f"recording)")
        return cls(Path(recording), pace=0.0 if opening.pace is None else opening.pace)

    @classmethod
    def open_on_gpus(cls, experiment: Experiment, gpus: str, opening: Opening) -> list[Backend]:
        """One replay per GPU index ``gpus`` names (``all``: one), each answering from the same recording."""
        count = len(parse_gpus(gpus, [str(i) for i in range(max(_indices(gpus), default=0) + 1)], opening.name))
        return [cls.open(experiment, opening) for _ in range(count)]

    def __init__(self, recording: str | Path, pace: float = 0.0):
        self.path = Path(recording)
        self.pace = pace
        if not self.path.exists():
            raise TunerError(f"{self.path}: no such recording (give a run folder holding "
                             f"{results.RESULTS_PARQUET}, or the file itself)")
        try:
            df, metadata = results.load(self.path)
        except (OSError, ValueError, pyarrow.ArrowException) as exc:
            raise TunerError(f"{self.path}: the recording cannot be read ({exc})") from None
        missing = [c for c in ("config_key", "status", "metadata_id") if c not in df.columns]
        if missing:
            raise TunerError(f"{self.path}: the recording lacks the column(s) {', '.join(missing)} of the "
                             f"results table")
        check_table_rows(df, self.path)
        self._rows: dict[str, dict[str, Any]] = {}
        for data in df.to_dict("records"):
            self._rows.setdefault(str(data["config_key"]), data)
        self._rows = {**_completed_keys(self._rows), **self._rows}
        recorded = metadata.get("environments") or {}
        used = Counter(str(d["metadata_id"]) for d in self._rows.values() if pd.notna(d["metadata_id"]))
        self.environments: dict[str, dict[str, Any]] = {i: recorded[i] for i in used if i in recorded}
        self._main_id = next((i for i, _ in used.most_common() if i in recorded), None)
        self.busy_seconds = 0.0
        self._configs: list[Config] | None = None

    def _recorded_row(self, config: Config) -> dict[str, Any] | None:
        """The row of ``config``, asked as given or completed with its family's defaults (a configuration written
        before its family gained a parameter, asked of a recording made after, or the other way round)."""
        data = self._rows.get(config.key)
        return data if data is not None else self._rows.get(completed(config).key)

    def _row(self, config: Config, what: str) -> dict[str, Any]:
        data = self._recorded_row(config)
        if data is None:
            raise TunerError(f"the recording {self.path} has no measurement of {what} '{config.key}'; replay only "
                             f"the configurations it holds (record them on the GPU with --backend pycuda)")
        return data

    def prefetch(self, configs: list[Config]) -> None:
        """Nothing to compile: every answer is recorded."""

    def evaluate(self, config: Config) -> Measurement:
        data = self._row(config, "the configuration")
        device_s = data.get("device_s")
        if device_s is not None and pd.notna(device_s):
            self.busy_seconds += float(device_s)
            if self.pace > 0:
                time.sleep(self.pace * float(device_s))
        return results.measurement_from_row(data)

    def baseline(self, problem: Problem, dtype: str) -> Measurement | None:
        key = results.baseline_config(problem, dtype).key
        return self.evaluate(results.baseline_config(problem, dtype)) if key in self._rows else None

    def recording(self) -> Recording:
        return Recording(self.path, self.environments)

    def recorded_configs(self) -> list[Config]:
        """Every configuration the recording answers (a replayed search keeps to them)."""
        if self._configs is None:
            configs: dict[str, Config] = {}
            for data in self._rows.values():
                try:
                    config = completed(results.config_of_row(data))
                except (KeyError, TypeError, ValueError):  # a row of a family no longer known, say
                    continue
                configs.setdefault(config.key, config)
            self._configs = list(configs.values())
        return self._configs

    def counters(self) -> CompletedCounters:
        """The recording's counters (its counters.parquet), replayed as they were read."""
        recorded = {key: results.config_of_row(data) for key, data in self._rows.items()
                    if key != str(data["config_key"])}
        return CompletedCounters(RecordedCounters(self.path), recorded)

    def environment_id(self, config: Config) -> str:
        """The environment of the recorded row (the main one for what never reached a device)."""
        data = self._recorded_row(config)
        if data is not None and pd.notna(data["metadata_id"]):
            return str(data["metadata_id"])
        self.metadata()
        return str(self._main_id)

    def metadata(self) -> dict[str, Any]:
        if self._main_id is None:
            raise TunerError(f"{self.path}: the recording has no {results.METADATA_JSON} describing the "
                             f"environment of its rows, so its numbers cannot be replayed with their origin")
        return self.environments[self._main_id]

    def energy_unavailable(self) -> str | None:
        """None where some recorded row holds an energy measurement (rows without one report no energy)."""
        if any(energy_from_row(data) is not None for data in self._rows.values()):
            return None
        return (f"energy not recorded: the recording {self.path} holds no energy measurement (it was measured "
                f"without measure.energy); replay it with --objective time, or record it again on the GPU with an "
                f"energy objective")

    def close(self) -> None:
        """Nothing to release."""


def _completed_keys(rows: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The rows under the keys of their configurations completed with their families' default values, where that
    changes the key."""
    keyed: dict[str, dict[str, Any]] = {}
    for key, data in rows.items():
        try:
            config = completed(results.config_of_row(data))
        except (KeyError, TypeError, ValueError):  # a baseline's or an unknown family's row keeps its own key
            continue
        if config.key != key:
            keyed.setdefault(config.key, data)
    return keyed


def _indices(spec: str) -> list[int]:
    """The indices ``spec`` lists (none for ``all``, which a replay reads as one GPU: the recording's)."""
    parts = [] if spec.strip() == "all" else spec.split(",")
    return [int(part) for part in parts if part.strip().lstrip("-").isdigit()]
