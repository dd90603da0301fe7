"""The run folder: its results table and metadata, the ledger of runs kept in the storage, and how a run joins
a folder without ever losing or replacing a recorded row.

A folder belongs to one experiment and one storage (both named in its ``metadata.json``). A run into a folder
of another experiment or storage is refused before anything is written (``previous_run``), also where its table
was moved aside and only its ``metadata.json`` or its own storage names the experiment. A run into its own folder
rebuilds the table from the storage; rows the storage lacks (its file deleted, emptied or moved aside) are
put back into their studies (``reseed``), so that they count as measured and are never measured again, and a
row that fits no study is kept in the table as it was.
"""

from __future__ import annotations

import math
import os
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import optuna
import pandas as pd
import pyarrow
from optuna.trial import TrialState

from tuner.backends.protocol import Backend
from tuner.config import Config
from tuner.counters import store as counters_store
from tuner.errors import Naming, TunerError, option_name
from tuner.experiment.schema import Experiment
from tuner.measure.measurement import Measurement
from tuner.names.file_names import path_refusal
from tuner.optuna_attrs import (
    BASELINE_ATTR,
    DTYPE_ATTR,
    ENVIRONMENT_PREFIX,
    FIRST_STARTED,
    LEDGER_PREFIX,
    RUN_PREFIX,
)
from tuner.results import table as results
from tuner.results.analytics import analytics_of
from tuner.results.environment import Environment
from tuner.results.record import Record, is_evaluation, trial_record
from tuner.results.schema import BASELINE, BASELINE_FAMILY
from tuner.search.storage import experiment_in_file
from tuner.search.study_space import StudySpace
from tuner.settings import STORAGE_FILE
from tuner.tuning.foreign_tables import BASELINES, foreign_table

SAVE_INTERVAL_S = 2.0
DEFAULT_STORAGE = "the folder's own storage"
EARLIER_STORAGE_FILE = "study.db"
"""Where a run folder kept its own storage before the journal: met, it is refused with what to do."""


def now() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds")



def refuse_earlier_ledger(storage: optuna.storages.BaseStorage, experiment: str) -> None:
    """TunerError where the storage keeps the experiment's run records in a study of their own, as an earlier
    version did; nothing is written."""
    if f"{experiment}/runs" in {frozen.study_name for frozen in storage.get_all_studies()}:
        raise TunerError(f"the Optuna storage was written by an earlier version of the tuner: it keeps the run "
                         f"records of experiment '{experiment}' in a study '{experiment}/runs', where they are now "
                         f"system attributes of the experiment's studies; it is left as it was: run into a new "
                         f"output folder or storage")


class Ledger:
    """The run records and environments of an experiment, kept in the storage beside its studies.

    Each environment and each run is a system attribute of its own (``tuner:environment <id>``, ``tuner:run <start>
    <host/pid>``, and ``tuner:first_started_utc``) of the run's first study, so that processes sharing the storage
    add theirs without overwriting another's, and Optuna's own tools, which show user attributes, list the
    experiment's studies alone. They are read from every study of the experiment. A storage that keeps them in a
    study ``<experiment>/runs``, as an earlier version did, is refused (:func:`refuse_earlier_ledger`).
    """

    def __init__(self, storage: optuna.storages.BaseStorage, experiment: str, home: optuna.Study):
        self.storage, self.experiment, self.home = storage, experiment, home._study_id
        self.environments: dict[str, dict[str, Any]] = {}
        self.runs: list[dict[str, Any]] = []
        self._run_key: str | None = None
        self.refresh()
        if self._first is None:
            self._set(FIRST_STARTED, iso(now()))
            self.refresh()

    def _set(self, key: str, value: Any) -> None:
        self.storage.set_study_system_attr(self.home, LEDGER_PREFIX + key, value)

    def _entries(self) -> list[dict[str, Any]]:
        """The ledger's attributes, as each study of the experiment holds them."""
        found = []
        for frozen in self.storage.get_all_studies():
            if frozen.study_name.startswith(f"{self.experiment}/"):
                found.append({key[len(LEDGER_PREFIX):]: value for key, value in frozen.system_attrs.items()
                              if key.startswith(LEDGER_PREFIX)})
        return found

    def refresh(self) -> None:
        """Read what every process has recorded so far."""
        environments: dict[str, dict[str, Any]] = {}
        runs: list[dict[str, Any]] = []
        starts: list[str] = []
        for attrs in self._entries():
            environments.update({key[len(ENVIRONMENT_PREFIX):]: value for key, value in attrs.items()
                                 if key.startswith(ENVIRONMENT_PREFIX)})
            runs += [value for key, value in attrs.items() if key.startswith(RUN_PREFIX)]
            if isinstance(attrs.get(FIRST_STARTED), str):
                starts.append(attrs[FIRST_STARTED])
        self._first = min(starts) if starts else None
        self.first_started = datetime.fromisoformat(self._first) if self._first else now()
        self.environments = environments
        self.runs = sorted(runs, key=lambda run: str(run.get("started_utc")))

    def add_environments(self, environments: Mapping[str, dict[str, Any]]) -> None:
        for key, value in environments.items():
            if key not in self.environments:
                self.environments[key] = value
                self._set(f"{ENVIRONMENT_PREFIX}{key}", value)

    def adopt(self, metadata: Mapping[str, Any]) -> None:
        """Take the environments and runs a folder's metadata.json holds that the storage lacks."""
        environments = metadata.get("environments")
        if isinstance(environments, dict):
            self.add_environments({str(k): v for k, v in environments.items() if isinstance(v, dict)})
        runs = metadata.get("runs")
        if isinstance(runs, list):
            known = {run.get("started_utc") for run in self.runs}
            for number, run in enumerate(runs):
                if isinstance(run, dict) and run.get("started_utc") not in known:
                    self._set(f"{RUN_PREFIX}{run.get('started_utc')} adopted {number}", run)
            starts = [str(run["started_utc"]) for run in runs if isinstance(run, dict) and run.get("started_utc")]
            if starts and min(starts) < iso(self.first_started):
                self._set(FIRST_STARTED, min(starts))
            self.refresh()

    def start_run(self, run: dict[str, Any]) -> None:
        self._run_key = f"{RUN_PREFIX}{run['started_utc']} {socket.gethostname()}/{os.getpid()}"
        self.update_run(run)

    def update_run(self, run: dict[str, Any]) -> None:
        assert self._run_key is not None, "start_run first"
        self._set(self._run_key, run)
        self.runs = [r for r in self.runs if r.get("started_utc") != run["started_utc"]] + [run]
        self.runs.sort(key=lambda r: str(r.get("started_utc")))


def stored_records(storage: optuna.storages.BaseStorage, experiment: str) -> list[Record]:
    """Every evaluation and baseline of the experiment's studies, rebuilt from their user attributes."""
    records = []
    for frozen in storage.get_all_studies():
        if not frozen.study_name.startswith(f"{experiment}/") or DTYPE_ATTR not in frozen.user_attrs:
            continue
        if BASELINE_ATTR in frozen.user_attrs:
            records.append(Record.from_attrs(experiment, BASELINE, -1, frozen.user_attrs[BASELINE_ATTR]))
        study_id = storage.get_study_id_from_name(frozen.study_name)
        for trial in storage.get_all_trials(study_id, deepcopy=False, states=(TrialState.COMPLETE,)):
            if is_evaluation(trial):
                records.append(trial_record(experiment, frozen.study_name, trial))
    return records


# --- joining a folder ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Previous:
    """What a folder already holds."""

    rows: pd.DataFrame
    metadata: dict[str, Any]


def storage_label(storage: str | None) -> str:
    return storage if storage else DEFAULT_STORAGE


def storage_name(storage: str | optuna.storages.BaseStorage | None) -> str | None:
    """How the folder's metadata names a storage: its URL (None: the folder's own); a storage object given
    from Python is named by its URL where it has one, else by its kind."""
    if storage is None or isinstance(storage, str):
        return storage
    url = getattr(storage, "url", None)
    return url if isinstance(url, str) else f"a {type(storage).__name__} object"


def previous_run(out: Path, experiment: Experiment, storage: str | None,
                 name: Naming = option_name) -> Previous | None:
    """What the folder holds, when it holds a results table of this experiment and this storage; TunerError
    (nothing written) when its table belongs to another experiment or storage, naming the settings as ``name``
    does; None for a new folder."""
    too_long = path_refusal(out)
    if too_long is not None:
        raise TunerError(f"{too_long}; choose a shorter output folder with {name('out')}")
    if storage is None:
        _refuse_earlier_storage(out, name)
    table = out / results.RESULTS_PARQUET
    if not table.is_file():
        _refuse_without_table(out, experiment, storage, name)
        return None
    try:
        rows, metadata = results.load(out)
    except (OSError, ValueError, pyarrow.ArrowException) as exc:
        raise TunerError(f"{table} cannot be read ({exc}); it is left as it is: move it aside to start afresh, "
                         f"or choose another folder with {name('out')}") from None
    metadata = metadata if isinstance(metadata, dict) else {}
    recorded = metadata["experiment"] if isinstance(metadata.get("experiment"), dict) else {}
    names = {str(n) for n in rows.get("experiment", pd.Series(dtype=str)).dropna().unique()}
    owner = recorded.get("name") or (names.pop() if len(names) == 1 else None)
    if owner is not None and owner != experiment.name:
        raise TunerError(f"{out} holds the results of experiment '{owner}' ({len(rows)} rows), not of "
                         f"'{experiment.name}'; choose another folder with {name('out')}, so that they stay as they "
                         f"are")
    used = metadata.get("storage", None)
    if storage_label(used) != storage_label(storage):
        again = name("storage", str(used)) if used else f"no {name('storage')} (the folder's own storage)"
        raise TunerError(f"{out} holds {len(rows)} rows recorded in the storage {storage_label(used)}, not "
                         f"{storage_label(storage)}; to continue them run with {again}, or choose another folder "
                         f"with {name('out')}")
    return Previous(rows, metadata)


def _refuse_earlier_storage(out: Path, name: Naming) -> None:
    """A folder whose own storage is the SQLite file of an earlier version: TunerError naming the file it is now."""
    earlier = out / EARLIER_STORAGE_FILE
    if earlier.is_file() and not (out / STORAGE_FILE).exists():
        raise TunerError(f"{out} holds {EARLIER_STORAGE_FILE}, the SQLite storage a run folder kept before; its own "
                         f"storage is the journal {STORAGE_FILE} now, and the studies an earlier version wrote are "
                         f"not read: choose another folder with {name('out')}; the folder is left as it is")


def _refuse_without_table(out: Path, experiment: Experiment, storage: str | None, name: Naming) -> None:
    """A folder without a results table (moved aside, or never saved) may still hold another experiment's
    metadata.json or storage: TunerError rather than taking it over."""
    meta = out / results.METADATA_JSON
    if meta.exists():
        try:
            metadata = results.load_metadata(out)
        except (OSError, ValueError) as exc:
            raise TunerError(f"{meta} cannot be read ({exc}); it is left as it is: move it aside to start afresh, "
                             f"or choose another folder with {name('out')}") from None
        recorded = metadata.get("experiment") if isinstance(metadata, dict) else None
        owner = recorded.get("name") if isinstance(recorded, dict) else None
        if owner is not None and owner != experiment.name:
            raise TunerError(f"{out} holds the metadata of experiment '{owner}' (its {results.RESULTS_PARQUET} is "
                             f"not there), not of '{experiment.name}'; choose another folder with {name('out')}, so "
                             f"that what it holds stays as it is")
    foreign = foreign_table(out, experiment.name, {spec.family for spec in experiment.kernels} | BASELINES)
    if foreign is not None:
        raise TunerError(f"{out} holds the {foreign} (its {results.RESULTS_PARQUET} is not there), not of experiment "
                         f"'{experiment.name}'; choose another folder with {name('out')}, so that it stays as it is")
    if storage is not None:
        return
    file = STORAGE_FILE
    owner = experiment_in_file(out / file) if (out / file).is_file() else None
    if owner is not None and owner != experiment.name:
        raise TunerError(f"{out} holds the Optuna storage {file} of experiment '{owner}' (its "
                         f"{results.RESULTS_PARQUET} is not there), not of '{experiment.name}'; choose another "
                         f"folder with {name('out')}, so that it stays as it is")


def record_of_row(row: Mapping[str, Any]) -> Record:
    """The Record a results row was made from (the inverse of :func:`tuner.results.record.row`)."""
    def number(name: str) -> float | None:
        value = row.get(name)
        return None if value is None or pd.isna(value) else float(value)

    return Record(
        experiment=str(row["experiment"]), study=str(row["study"]), strategy=str(row["strategy"]),
        trial=int(row["trial"]), config=results.config_of_row(row), measurement=results.measurement_from_row(row),
        metadata_id=str(row["metadata_id"]), wall_offset_s=float(number("wall_offset_s") or 0.0),
        measured_at=str(row["measured_at"]), device_s=number("device_s"),
        transferred_from=None if pd.isna(source := row.get("transferred_from", pd.NA)) else str(source),
    )


def reseed(studies: Mapping[StudySpace, optuna.Study], previous: Previous) -> list[dict[str, Any]]:
    """Put every row of the folder's table that the studies lack back into them (as completed trials holding
    the row's record, or as a study's baseline); return the rows that fit no study, to keep as they are."""
    by_name = {space.name: (space, study) for space, study in studies.items()}
    held: dict[str, set[str]] = {
        space.name: {trial_record(space.experiment, space.name, t).config.key
                     for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)) if is_evaluation(t)}
        for space, study in studies.items()
    }
    kept = []
    for row in previous.rows.to_dict("records"):
        try:
            record = record_of_row(row)
        except (KeyError, TypeError, ValueError):
            kept.append(row)
            continue
        if record.config.family == BASELINE_FAMILY:
            name = f"{record.experiment}/{record.config.problem.label}/{record.config.dtype}"
            if name in by_name and BASELINE_ATTR not in by_name[name][1].user_attrs:
                by_name[name][1].set_user_attr(BASELINE_ATTR, record.attrs())
            elif name not in by_name:
                kept.append(row)
            continue
        if record.study not in by_name:
            kept.append(row)
            continue
        space, study = by_name[record.study]
        if record.config.key in held[record.study]:
            continue
        if space.add_recorded(study, record):
            held[record.study].add(record.config.key)
        else:
            kept.append(row)
    return kept


# --- the table ----------------------------------------------------------------------------------------------


class Table:
    """The results rows of the run folder, saved every few seconds; also the studies' Recorder."""

    def __init__(self, experiment: Experiment, out: Path, ledger: Ledger, backend: Backend, environment_id: str,
                 storage: str | None):
        self.experiment, self.out, self.ledger, self.backend = experiment, out, ledger, backend
        self.environment_id = environment_id
        self.storage = storage
        self.rows: list[dict[str, Any]] = []
        self.kept: list[dict[str, Any]] = []
        """Rows of the folder's earlier table that fit no study: kept as they were."""
        self.added = 0
        """Evaluations this process added."""
        self.lock = threading.Lock()
        self.last_save = 0.0
        try:
            self.source = Path(experiment.path).read_text(encoding="utf-8") if experiment.path else ""
        except OSError:
            self.source = ""

    def record(self, study: str, trial: int, strategy: str, config: Config, measurement: Measurement,
               device_s: float | None) -> Record:
        return self.record_from(self.backend, self.environment_id, study, trial, strategy, config, measurement,
                                device_s)

    def on_device(self, backend: Backend, environment_id: str) -> DeviceTable:
        """The Recorder of the searches that measure with ``backend`` (one of several GPUs)."""
        return DeviceTable(self, backend, environment_id)

    def record_from(self, backend: Backend, environment_id: str, study: str, trial: int, strategy: str,
                    config: Config, measurement: Measurement, device_s: float | None) -> Record:
        """The record of an evaluation by ``backend``, whose own environment is ``environment_id``."""
        recorded_id = backend.environment_id(config)
        moment = now()
        return Record(
            experiment=self.experiment.name, study=study, strategy=strategy, trial=trial, config=config,
            measurement=measurement,
            metadata_id=recorded_id or environment_id,
            wall_offset_s=round((moment - self.ledger.first_started).total_seconds(), 3),
            measured_at=iso(moment), device_s=device_s,
        )

    def add(self, record: Record) -> None:
        with self.lock:
            self.rows.append(self._row(record))
            self.added += 1
            if time.monotonic() - self.last_save >= SAVE_INTERVAL_S:
                self.save()

    def replace_baseline(self, record: Record) -> None:
        """Add a baseline's row in place of an earlier one of the same problem and dtype."""
        with self.lock:
            self.rows = [row for row in self.rows
                         if not (row.get("study") == BASELINE and row.get("config_key") == record.config.key)]
        self.add(record)

    def rows_of(self, study: str) -> list[dict[str, Any]]:
        """The rows of one study, as they are now."""
        with self.lock:
            return [row for row in self.rows if row.get("study") == study]

    def keep(self, rows: list[dict[str, Any]]) -> None:
        self.kept.extend(rows)
        self.rows.extend(rows)

    def rebuild(self, storage: optuna.storages.BaseStorage) -> None:
        """The table from the storage: every evaluation of every process that shares it, and the kept rows."""
        with self.lock:
            self.ledger.refresh()
            self.rows = [*self.kept, *(self._row(r) for r in stored_records(storage, self.experiment.name))]

    def _row(self, record: Record) -> dict[str, Any]:
        """The row of ``record``, with its configuration's cost and launch geometry on its environment's device."""
        environment = self.ledger.environments.get(record.metadata_id)
        analytics = analytics_of(record.config, Environment.from_dict(environment).multiprocessors)
        return results.row(record, analytics, environment)

    def frame(self) -> pd.DataFrame:
        df = results.to_frame(self.rows)
        order = df["wall_offset_s"].fillna(-math.inf)
        return counters_store.join_folder(df.iloc[order.argsort(kind="stable")].reset_index(drop=True), self.out)

    def metadata(self) -> dict[str, Any]:
        return {
            "experiment": {"name": self.experiment.name, "path": self.experiment.path, "source": self.source,
                           "machine_models": [asdict(m) for m in self.experiment.machine_models],
                           "template_dirs": [str(d) for d in self.experiment.template_dirs]},
            "storage": self.storage,
            "environments": self.ledger.environments,
            "runs": self.ledger.runs,
            "counters": counters_store.conditions(counters_store.load(self.out)),
        }

    def save(self) -> pd.DataFrame:
        df = self.frame()
        results.save(df, self.metadata(), self.out)
        self.last_save = time.monotonic()
        return df


@dataclass(frozen=True)
class DeviceTable:
    """The table as the Recorder of one GPU's searches: each record names that GPU's environment."""

    table: Table
    backend: Backend
    environment_id: str

    def record(self, study: str, trial: int, strategy: str, config: Config, measurement: Measurement,
               device_s: float | None) -> Record:
        return self.table.record_from(self.backend, self.environment_id, study, trial, strategy, config,
                                      measurement, device_s)

    def add(self, record: Record) -> None:
        self.table.add(record)
