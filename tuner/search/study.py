"""The Optuna side of a run: one study per (problem, dtype), searched within its valid configurations
(:mod:`tuner.search.study_space`) by a :class:`~tuner.strategies.sampler.DomainSampler` whatever the strategy; its
budget (distinct configurations across resumes and workers, and wall time); asking a few configurations ahead so
that they compile while the device measures (:mod:`tuner.search.pipeline`); and each trial's ``record``, from
which the results table is rebuilt and an interrupted run resumed (its RUNNING trials taken over in order). The
opening of a study is :mod:`tuner.search.opening`'s, the worker's part :mod:`tuner.search.worker_policy`'s."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import optuna
from optuna.trial import FrozenTrial, Trial, TrialState

from tuner.backends.protocol import LOOKAHEAD, Backend, Pending, ask_ahead, compiling_ahead, start_evaluation
from tuner.config import Config
from tuner.measure.measurement import Measurement
from tuner.optuna_attrs import CLAIM_ATTR, LOST_ATTR, RECORD_ATTR, TRANSFER_ATTR, WORKER_ATTR
from tuner.results.objectives import DEFAULT, study_objective
from tuner.results.table import Record, objective_of
from tuner.search.callbacks import Callback, adapted
from tuner.search.claims import Liveness, SoleWorker, claimed_key, this_worker
from tuner.search.energy_values import reported
from tuner.search.opening import (
    Choice,
    ask_configuration,
    check_same_strategy,
    check_strategy,
    open_study,
    strategy_name,
    suggest_configuration,
)
from tuner.search.storage import open_storage
from tuner.search.study_space import FAMILY_PARAM, StudySpace, study_spaces
from tuner.search.trial_attrs import scalar_attrs, stored_record
from tuner.search.trial_clock import restart_clock
from tuner.search.worker_policy import Entry, WorkerPolicy, policy_for
from tuner.strategies.sampler import DomainSampler

__all__ = ["FAMILY_PARAM", "LOOKAHEAD", "RECORD_ATTR", "Budget", "Choice", "Evaluation", "StudySearch", "StudySpace",
           "ask_configuration", "check_strategy", "check_same_strategy", "open_storage", "open_study",
           "strategy_name", "study_spaces", "suggest_configuration"]

READY_POLL_S = 1.0
"""How long a search waits for one of its configurations to finish compiling before it looks at the others again
(configurations asked meanwhile, the next study's)."""
OTHERS_POLL_S = 0.5
"""How often a worker that has nothing left to ask looks whether the configurations other workers claimed are
measured (the study is done) or were left by a dead worker (it measures them)."""


# --- the search loop --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Budget:
    trials: int
    """Distinct configurations evaluated per study at most."""
    timeout_s: float | None = None
    """Wall time per study and run."""


class Reporter(Protocol):
    """Shows a study's progress (tuner.tuning.progress.Progress)."""

    def study_started(self, name: str, budget: int, timeout_s: float | None) -> None: ...

    def evaluated(self, done: int, new: int, best: tuple[float, Config] | None) -> None: ...

    def study_finished(self, reason: str) -> None: ...


class Recorder(Protocol):
    """Turns a measurement into a stamped Record (environment, clock) and keeps it once it is stored."""

    def record(self, study: str, trial: int, strategy: str, config: Config, measurement: Measurement,
               device_s: float | None) -> Record: ...

    def add(self, record: Record) -> None: ...


@dataclass(frozen=True)
class Evaluation:
    """What a callback is given after each evaluation."""

    study: str
    trial: int
    config: Config
    measurement: Measurement
    value: float | None
    """GFLOP/s (or GB/s for a kernel that only moves data) when ok, else None."""
    record: Record
    """Everything the evaluation's results row holds (``tuner.results.table.row(record)`` makes the row)."""
    best: tuple[float, Config] | None
    """The study's best configuration so far (by its objective; the fastest under time and energy) and its
    GFLOP/s (or GB/s)."""
    evaluated: int
    """Distinct configurations the study holds now."""
    budget: int



@dataclass(frozen=True)
class StudyOutcome:
    name: str
    evaluated: int
    """Distinct configurations the study holds, across runs."""
    new: int
    """Of which evaluated in this run."""
    stopped: str
    """Why the search of this run ended."""


@dataclass
class Flight:
    """An evaluation the device is at: its trial, configuration, when it was asked, and the device time counted
    before it started."""

    trial: Trial
    config: Config
    asked: float
    pending: Pending
    busy_before: float
    search: StudySearch
    """The search whose study the evaluation belongs to: the one searching, or the next study's."""


class Handover(Protocol):
    """The next study's search, to which a search hands the device once it has asked its last configuration
    (:class:`tuner.search.pipeline.Handover`)."""

    def asked_all(self) -> None:
        """This study has asked its last configuration: make the next study's search ready."""
        ...

    def waiting(self, flying: Trial | None) -> list[tuple[StudySearch, Entry]]:
        """The next study's configurations waiting to be measured (none before ``asked_all``)."""
        ...


class StudySearch:
    """Searches one study until its budget is spent, asking ahead and never measuring a configuration twice."""

    def __init__(self, study: optuna.Study, space: StudySpace, backend: Backend, budget: Budget,
                 recorder: Recorder, progress: Reporter, liveness: Liveness | None = None,
                 callbacks: Sequence[Callback] = ()):
        self.study, self.space, self.backend, self.budget = study, space, backend, budget
        self.recorder, self.progress = recorder, progress
        self.callbacks = tuple(adapted(callback) for callback in callbacks)
        self.liveness = liveness or SoleWorker()
        self.policy: WorkerPolicy = policy_for(study, self.space, self.liveness, budget.trials)
        self.lookahead = ask_ahead(backend)
        self.sampler_name = study.sampler.name if isinstance(study.sampler, DomainSampler) else \
            type(study.sampler).__name__
        self.done: set[str] = set()
        """Keys of every evaluation in the study."""
        self.elsewhere: set[str] = set()
        """Keys claimed by RUNNING trials of other live workers (a shared study)."""
        self.objective = study_objective(study.user_attrs)
        self.best: tuple[float, Config] | None = None
        """The best configuration by the objective's first value, with its speed (what progress shows)."""
        self._best_value = 0.0
        self.pending: deque[Entry] = deque()
        """(trial, configuration, time.monotonic() when asked), oldest first; the one the device is at first."""
        self.flight: Flight | None = None
        self.new = 0
        self.started = time.monotonic()
        self.prepared = False
        self.handover: Handover | None = None
        """Where the device goes once this study has asked its last configuration (a run sets it)."""
        self.transferred: dict[int, str] = {}
        """Trial number -> the study its queued configuration was transferred from (read when it was asked)."""
        self.running = False
        """Whether this search's study is the one being searched (another search may measure for it before)."""
        self.refresh()

    def refresh(self) -> None:
        """Read the study's evaluations, and the claims of other live workers."""
        mine = {trial.number for trial, _, _ in self.pending}
        self.elsewhere.clear()
        for trial in self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.RUNNING)):
            key = claimed_key(trial)
            if key is None:
                continue
            if trial.state == TrialState.COMPLETE:
                if key not in self.done:
                    self._remember_trial(key, trial)
            elif self.policy.claimed_elsewhere(trial, mine):
                self.elsewhere.add(key)

    def _taken(self) -> set[str]:
        return self.done | {config.key for _, config, _ in self.pending} | self.elsewhere

    def _remember(self, key: str, value: float, speed: float | None, config: Config | None) -> None:
        """Count an evaluation; ``value``: its objective's first value, ``speed``: its GFLOP/s (or GB/s)."""
        self.done.add(key)
        if config is not None and value > 0 and (self.best is None or value > self._best_value):
            self.best, self._best_value = (value if speed is None else speed, config), value

    def _remember_trial(self, key: str, trial: FrozenTrial) -> None:
        """Count a completed trial of the storage (another worker's, or an earlier run's)."""
        value = trial.values[0] if trial.values else 0.0
        config = self.space.config_of(trial.params)
        speed = value if self.objective == DEFAULT else None
        record = trial.user_attrs.get(RECORD_ATTR)
        if speed is None and config is not None and record is not None:
            speed = objective_of(config, Measurement.from_dict(record["measurement"]))
        self._remember(key, value, speed, config)

    @property
    def _limit(self) -> int:
        return min(self.budget.trials, self.space.domain.size)

    def _stop_reason(self) -> str | None:
        taken = len(self._taken())
        if taken >= self.budget.trials:
            return f"{self.budget.trials} configurations evaluated"
        if taken >= self.space.domain.size:
            return "every valid configuration evaluated" if not self.elsewhere else \
                "every valid configuration evaluated or being evaluated"
        if self._timed_out():
            return f"time budget of {self.budget.timeout_s:g} s spent"
        return None

    def _timed_out(self) -> bool:
        limit = self.budget.timeout_s
        return limit is not None and time.monotonic() - self.started >= limit

    def prepare(self) -> None:
        """Take over what an earlier run left, ask the first configurations and hand them to the compilers."""
        if self.prepared:
            return
        self.prepared = True
        self.policy.take_over(self._queue, self.pending)
        self.fill()

    def run(self) -> StudyOutcome:
        self.started = time.monotonic()
        self.running = True
        self.progress.study_started(self.space.name, self._limit, self.budget.timeout_s)
        self._report_progress()
        try:
            self.prepare()
            stopped = self._search()
        except BaseException:
            self.policy.release(self.pending, "interrupted")
            self.progress.study_finished("interrupted")
            raise
        self.progress.study_finished(stopped)
        return StudyOutcome(self.space.name, len(self.done), self.new, stopped)

    def _search(self) -> str:
        while True:
            stopped = self.fill()
            queued = self.waiting(self.flight.trial if self.flight else None)
            if not queued:
                if self.flight:
                    self._land(None)
                    continue
                if self.elsewhere and not self._timed_out():
                    time.sleep(OTHERS_POLL_S)  # stay until the others' claims are measured, or freed by their death
                    continue
                return stopped or "nothing left to ask"
            if self._timed_out():
                if self.flight:
                    self._land(None)
                self.policy.release(self.pending, "time budget spent")
                return f"time budget of {self.budget.timeout_s:g} s spent"
            search, chosen = self._next(queued)
            if not search.owns(chosen):
                search.drop(chosen)
                continue
            self._land((search, chosen))

    def waiting(self, flying: Trial | None) -> list[Entry]:
        """This search's configurations waiting to be measured: all it asked but ``flying``, the one the device
        is at."""
        return [entry for entry in self.pending if entry[0] is not flying]

    def owns(self, entry: Entry) -> bool:
        """Whether the queued ``entry`` may be measured now (its trial failed where it may not)."""
        return self.policy.owns(*entry)

    def drop(self, entry: Entry) -> None:
        """Forget a queued configuration that will not be measured."""
        self.pending.remove(entry)

    def _next(self, queued: list[Entry]) -> tuple[StudySearch, Entry]:
        """The oldest queued configuration the backend can start at once (compiled), so that a configuration
        that compiles long does not hold up the ones compiled after it; when none of this study's can, one of the
        next study's (once this study has asked its last); when none of those can either, the first that
        finishes compiling, or the oldest where the backend cannot tell."""
        compiling = compiling_ahead(self.backend)
        if compiling is None:
            return self, queued[0]
        while True:
            candidates: list[tuple[StudySearch, Entry]] = [(self, entry) for entry in queued]
            if self.handover is not None:
                candidates += self.handover.waiting(self.flight.trial if self.flight else None)
            found = next(((search, entry) for search, entry in candidates if compiling.ready(entry[1])), None)
            if found is not None:
                return found
            if self.flight:  # record it while the compilers work
                self._land(None)
            compiling.wait_compiled([entry[1] for _, entry in candidates], READY_POLL_S)

    def _land(self, start: tuple[StudySearch, Entry] | None) -> None:
        """Wait for the evaluation in flight, start ``start`` (an entry of this study's search, or of the next
        study's) on the device, then record the one that came back (while the device measures the new one)."""
        landed, measurement, device_s = self.flight, None, None
        if landed is not None:
            measurement = landed.pending.wait()
            device_s = self.backend.busy_seconds - landed.busy_before
        self.flight = None
        try:
            if start is not None:
                search, (trial, config, asked) = start
                if not search.policy.shared:
                    restart_clock(search.study, trial)
                busy = self.backend.busy_seconds
                self.flight = Flight(trial, config, asked, start_evaluation(self.backend, config), busy, search)
        finally:  # what came back is kept, even when the next one fails to start
            if landed is not None and measurement is not None:
                landed.search.measured(landed.trial, landed.config, measurement, device_s)

    # asking
    def fill(self) -> str | None:
        """Ask until ``lookahead`` configurations wait to be measured (the one in flight included)."""
        while len(self.pending) < self.lookahead:
            with self.policy.asking(self.refresh, self.pending):
                stopped = self._stop_reason()
                if stopped:
                    if self.handover is not None:
                        self.handover.asked_all()
                    return stopped
                self._queue(self.policy.ask())
        return None

    def _queue(self, trial: Trial) -> None:
        """Claim the trial's configuration and queue it, or fail the trial when its configuration is not valid, or
        evaluated already, or queued by this search. Whether another worker's claim of it wins is decided when the
        trial is about to be measured (:meth:`owns`): a claim seen in an earlier reading may have lost since."""
        config = self.space.config_of(trial.params)
        if config is None or self.space.candidate(config) < 0:
            trial.set_user_attr(LOST_ATTR, "not a valid configuration of the study")
            self.study.tell(trial, state=TrialState.FAIL)
        elif config.key in self.done or any(config.key == queued.key for _, queued, _ in self.pending):
            trial.set_user_attr(LOST_ATTR, "taken")
            self.study.tell(trial, state=TrialState.FAIL)
        else:
            attrs = trial.user_attrs  # a read of the storage
            if attrs.get(CLAIM_ATTR) != config.key:
                trial.set_user_attr(CLAIM_ATTR, config.key)
            if attrs.get(WORKER_ATTR) != this_worker():
                trial.set_user_attr(WORKER_ATTR, this_worker())
            if TRANSFER_ATTR in attrs:
                self.transferred[trial.number] = str(attrs[TRANSFER_ATTR])
            self.pending.append((trial, config, time.monotonic()))
            self.backend.prefetch([config])  # its compile starts now, not once the queue is full

    # recording
    def measured(self, trial: Trial, config: Config, measurement: Measurement, device_s: float | None) -> None:
        """Record the measurement of a queued trial of this study (measured by this search, or by the search of
        the study before) and take it off the queue."""
        self._store(trial, config, measurement, device_s)
        self.pending.remove(next(entry for entry in self.pending if entry[0] is trial))

    def _store(self, trial: Trial, config: Config, measurement: Measurement, device_s: float | None) -> None:
        record = self.recorder.record(self.space.name, trial.number, self.sampler_name, config, measurement,
                                      device_s)
        source = self.transferred.pop(trial.number, None)
        if source is not None:
            record = replace(record, transferred_from=source)
        trial.set_user_attr(RECORD_ATTR, stored_record(record))
        value = objective_of(config, measurement)
        for key, item in scalar_attrs(record, value).items():
            trial.set_user_attr(key, item)
        values = reported(self.objective, config, measurement)
        self.study.tell(trial, values)
        self._remember(config.key, values[0], value, config)
        self.new += 1
        self.recorder.add(record)
        self._report_progress()
        evaluation = Evaluation(self.space.name, trial.number, config, measurement, value, record, self.best,
                                len(self.done), self._limit)
        for callback in self.callbacks:
            callback(evaluation, self.study, trial)

    def _report_progress(self) -> None:
        if self.running:
            self.progress.evaluated(len(self.done), self.new, self.best)
