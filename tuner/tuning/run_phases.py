"""A run in its phases, once its folder, storage and backends are open (:mod:`tuner.tuning.run` opens them).

``prepare``: the studies opened (or continued) in the storage, the ledger and the results table set up, the run's
record started. ``search``: for each study, its vendor baseline (:mod:`tuner.tuning.baseline`), its search
(:mod:`tuner.search.study`; on one device, each study hands the device to the next, :mod:`tuner.search.pipeline`;
on several GPUs, one search per GPU) and its baseline again where the load changed. ``counters``: the hardware
counters that ``measure.counters`` asks for. ``finish``: the run's record completed and the table saved, whatever
happened. ``report``: the figures and report.html.
"""

from __future__ import annotations

import contextlib
import logging
import shlex
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
import pandas as pd

from tuner.backends.protocol import Backend, Recording, counter_source, prepare_inputs
from tuner.errors import Interrupted
from tuner.results.metadata import metadata_id
from tuner.search.claims import Liveness, SoleWorker
from tuner.search.pipeline import StudyPipeline
from tuner.search.study import StudySearch, StudySpace, check_same_strategy, open_study, strategy_name
from tuner.search.transfer import transfer_best
from tuner.search.workers import WorkerRegistry
from tuner.tuning.baseline import measure_again_if_load_changed, measure_baseline
from tuner.tuning.compile_failures import compile_failure_warning
from tuner.tuning.folder import Ledger, Previous, Table, iso, now, refuse_earlier_ledger, reseed
from tuner.tuning.options import RunOptions, RunSettings
from tuner.tuning.parallel import search_on_each
from tuner.tuning.progress import Progress
from tuner.tuning.result_display import RunResult, print_summary

WORKER_SEED_STEP = 1000
"""The seeds of the workers sharing a storage lie this far apart (a worker's further GPUs take the seeds after its
own)."""


def worker_seed(seed: int, liveness: Liveness) -> int:
    """The seed of this process's samplers: the run's, offset by ``WORKER_SEED_STEP`` for each live worker that
    joined the shared storage before this one, so that workers sharing studies propose apart from one another and
    a worker alone in a storage proposes what it would without one (reproducibly, whatever its host or process)."""
    return seed + WORKER_SEED_STEP * liveness.rank if isinstance(liveness, WorkerRegistry) else seed


@dataclass(frozen=True)
class Place:
    """Where a run records: its folder, the storage it names (None: the folder's own), what the folder held
    before, and who else may be working in the storage."""

    out: Path
    storage: str | None
    previous: Previous | None
    liveness: Liveness


@contextlib.contextmanager
def _optuna_warnings_only() -> Iterator[None]:
    logger = optuna.logging.get_logger("optuna")
    verbosity = logger.level
    optuna.logging.set_verbosity(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(verbosity)


class Run:
    """One run of an experiment's studies on open backends and an open storage, phase by phase."""

    def __init__(self, settings: RunSettings, options: RunOptions, backends: list[Backend],
                 store: optuna.storages.BaseStorage, place: Place, resume_command: str, spaces: list[StudySpace]):
        """``spaces``: the studies to search, in order (:func:`tuner.search.study_space.study_spaces`)."""
        self.settings, self.options, self.backends, self.store = settings, options, backends, store
        self.place, self.resume_command, self.spaces = place, resume_command, spaces
        self.experiment, self.budget = settings.experiment, settings.budget
        self.backend = backends[0]
        self.callbacks = tuple(options.callbacks)
        self.progress = Progress(quiet=options.quiet)
        self.started = now()
        self.own_seed = worker_seed(settings.seed, place.liveness)
        self.studies: dict[StudySpace, optuna.Study] = {}
        self.order: list[tuple[StudySpace, optuna.Study]] = []
        self.fresh: set[int] = set()
        """The positions of the studies this run started (the ones that take configurations transferred)."""
        self.recording: Recording | None = None
        self.environment_ids: list[str] = []
        self.record: dict[str, Any] = {}
        self.clock = time.monotonic()

    def execute(self) -> RunResult:
        """Every phase in turn; Ctrl-C saves everything, writes the report and re-raises KeyboardInterrupt after
        printing the command that continues."""
        interrupted = False
        with _optuna_warnings_only():
            self.prepare()
            self.clock = time.monotonic()  # the search's wall time: device setup and ceilings are not part of it
            searched: float | None = None
            counted: dict[str, Any] | None = None
            error: str | None = None
            try:
                self.search()
                searched = time.monotonic()
                counted = self.counters()
            except KeyboardInterrupt:
                interrupted = True
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
                raise
            finally:
                df = self.finish(searched, counted, interrupted, error)
                if self.options.report:
                    self.report()
        return self.result(df, interrupted)

    # --- prepare ------------------------------------------------------------------------------------------

    def prepare(self) -> None:
        """Open the studies, set up the ledger and the results table, and start the run's record."""
        self.recording = recording = self.backend.recording()
        environments = [b.metadata() for b in self.backends]
        self.environment_ids = [metadata_id(env) for env in environments]
        spaces = self.spaces
        for measuring in self.backends if spaces else ():  # each measuring process makes them meanwhile
            prepare_inputs(measuring, spaces[0].problem, spaces[0].dtype)
        self._open_studies(spaces)
        self.ledger = Ledger(self.store, self.experiment.name, next(iter(self.studies.values())))
        self.ledger.add_environments(recording.environments if recording else
                                     dict(zip(self.environment_ids, environments, strict=True)))
        self.table = Table(self.experiment, self.place.out, self.ledger, self.backend, self.environment_ids[0],
                           self.place.storage)
        if self.place.previous is not None:
            self.ledger.adopt(self.place.previous.metadata)
            self.table.keep(reseed(self.studies, self.place.previous))
        self.table.rebuild(self.store)
        self._start_record()

    def _open_studies(self, spaces: list[StudySpace]) -> None:
        """Open every study (a study of the folder's own storage only with the strategy it was searched with)."""
        strategy = self.settings.strategy
        refuse_earlier_ledger(self.store, self.experiment.name)
        for space in spaces if self.place.storage is None else ():  # before any study is opened: nothing written
            check_same_strategy(self.store, space.name, strategy, self.settings.name)
        for space in spaces:
            study = open_study(self.store, space, strategy, self.own_seed, self.place.liveness,
                               self.settings.objective)
            self.studies[space] = study
        self.order = list(self.studies.items())
        self.fresh = {at for at, (_, study) in enumerate(self.order) if not study.get_trials(deepcopy=False)}

    def _start_record(self) -> None:
        recording = self.recording
        self.record = {
            "started_utc": iso(self.started), "finished_utc": None, "backend": self.backend.name,
            "strategy": strategy_name(self.settings.strategy), "objective": list(self.settings.objective),
            "trials": self.budget.trials, "timeout_s": self.budget.timeout_s, "seed": self.settings.seed,
            "transfer": self.experiment.search.transfer,
            "recording": str(recording.path) if recording else None,
            "gpu_busy_fraction": None, "device_busy_s": None, "wall_s": None, "evaluations": 0,
            "interrupted": False, "error": None, "gpus": len(self.backends),
        }
        self.ledger.start_run(self.record)

    # --- search -------------------------------------------------------------------------------------------

    def search(self) -> None:
        """Each study in turn: its baseline, its search, its baseline again where the load changed."""
        pipeline = StudyPipeline(len(self.order), self._search_of, self._ready_ahead,
                                 ahead=isinstance(self.place.liveness, SoleWorker))
        for position in range(len(self.order)):
            if len(self.backends) == 1:
                self._search_on_one(pipeline, position)
            else:
                self._search_on_each(position)
            space, study = self.order[position]
            measure_again_if_load_changed(space, study, self.backend, self.table, self.progress)
            self.table.save()

    def _search_of(self, at: int) -> StudySearch:
        """The search of study ``at`` on the run's one backend."""
        self._transfer(at)
        space, study = self.order[at]
        return StudySearch(study, space, self.backend, self.budget, self.table, self.progress, self.place.liveness,
                           self.callbacks)

    def _ready_ahead(self, at: int) -> None:
        """Study ``at`` was prepared ahead: the backend makes its problem's inputs."""
        space = self.order[at][0]
        prepare_inputs(self.backend, space.problem, space.dtype)

    def _search_on_one(self, pipeline: StudyPipeline, position: int) -> None:
        space, study = self.order[position]
        search = pipeline.start(position)
        self._transfer(position)  # what the study before found since this one was prepared
        search.prepare()  # the compilers start while the baseline is measured
        measure_baseline(space, study, self.backend, self.table, self.progress)
        search.run()

    def _search_on_each(self, position: int) -> None:
        """The study searched on every GPU at once, each GPU's search asking through a study object of its own,
        with its own sampler."""
        space, study = self.order[position]
        self._transfer(position)
        measure_baseline(space, study, self.backend, self.table, self.progress)
        own = [study, *(open_study(self.store, space, self.settings.strategy, self.own_seed + index,
                                   self.place.liveness, self.settings.objective)
                        for index in range(1, len(self.backends)))]

        def search(index: int, measuring: Backend) -> None:
            recorder = self.table.on_device(measuring, self.environment_ids[index])
            StudySearch(own[index], space, measuring, self.budget, recorder,
                        self.progress if index == 0 else Progress(quiet=True), self.place.liveness,
                        self.callbacks).run()

        search_on_each(self.backends, search)

    def _transfer(self, at: int) -> None:
        """Give study ``at``, when this run started it, the best configurations of the studies before it
        (``search.transfer``), within its budget."""
        if at in self.fresh:
            space, study = self.order[at]
            transfer_best(study, space, [(earlier, earlier_space) for earlier_space, earlier in self.order[:at]],
                          self.experiment.search.transfer, self.budget.trials)

    # --- counters, finish, report -------------------------------------------------------------------------

    def counters(self) -> dict[str, Any]:
        """Read the hardware counters the experiment asks for (measure.counters), after the search and outside
        its timed samples; what was read, or why not, as the run records it."""
        from tuner.counters.collect import CountersNote, count_configurations

        setting = self.experiment.measure.counters
        try:
            note = count_configurations(self.table.frame(), self.table.out, counter_source(self.backend), setting,
                                        self.progress.note, f"the {self.backend.name} backend reads no hardware "
                                                            f"counters")
        except Exception as exc:  # counters are a reading beside the results: they must never cost them
            note = CountersNote(setting, reasons=(f"{type(exc).__name__}: {' '.join(str(exc).split())}",))
        if note.setting != "none":
            self.progress.note(f"counters: {note.text()}")
        return note.to_dict()

    def finish(self, searched: float | None, counted: dict[str, Any] | None, interrupted: bool,
               error: str | None) -> pd.DataFrame:
        """Complete the run's record and save the table (a storage that fails here still leaves the rows it
        holds saved); the saved table."""
        wall = (searched if searched is not None else time.monotonic()) - self.clock
        busy = sum(b.busy_seconds for b in self.backends)
        replayed = self.recording is not None
        self.record.update({
            "finished_utc": iso(now()), "wall_s": round(wall, 3), "evaluations": self.table.added,
            "counters": counted, "device_busy_s": round(busy, 3), "interrupted": interrupted, "error": error,
            "gpu_busy_fraction": None if replayed or wall <= 0 else round(busy / wall / len(self.backends), 4),
        })
        try:
            self.ledger.update_run(self.record)
            if not isinstance(self.place.liveness, SoleWorker):  # what the other workers measured meanwhile
                self.table.rebuild(self.store)
        finally:
            df = self.table.save()
        return df

    def report(self) -> None:
        """Write the figures and report.html; a failing report is a warning, never a loss of results."""
        from tuner.report import default_jobs, write_report

        out = self.place.out
        try:
            write_report(out, quiet=self.progress.quiet, jobs=default_jobs())
        except Exception as exc:  # the report must never cost the results
            print(f"warning: the report could not be written ({type(exc).__name__}: {exc}); the results are saved "
                  f"in {out}; retry with: python -m tuner report {shlex.quote(str(out))}", file=sys.stderr)
        else:
            self.progress.note(f"report written in {out}")

    def result(self, df: pd.DataFrame, interrupted: bool) -> RunResult:
        result = RunResult(df, self.place.out, self.table.metadata())
        if interrupted:
            print(f"interrupted: {len(df)} rows are saved in {self.place.out}; to continue, run:\n  "
                  f"{self.resume_command}", file=sys.stderr)
            raise Interrupted
        if self.settings.summary:
            print_summary(result)
        warning = compile_failure_warning(df, self.place.out)
        if warning:
            print(warning, file=sys.stderr)
        return result
