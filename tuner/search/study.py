"""The Optuna side of a run: one study per (problem, dtype) searched within its valid configurations, the budget,
the storage, and what a run does with the trials an earlier run left unfinished.

Search. A study's candidates are its valid configurations (:mod:`tuner.search.study_space`); its sampler is a
:class:`~tuner.strategies.sampler.DomainSampler`, whatever the strategy, so every trial asks for a valid
configuration that no trial of the study has taken, and no budget is spent on a configuration the static rules
reject (a launch that the device refuses is still recorded, as ``invalid``). The direction is *maximize* and the
value told is GFLOP/s for an ``ok`` evaluation, 0.0 for every other status; under another objective
(:mod:`tuner.energy.objective`: energy, edp, or time and energy as two values of a multi-objective study) the
values :func:`tuner.search.energy_values.reported` gives.

Budget. ``trials`` is the number of distinct configurations evaluated per study at most (across resumes and
workers). A study also stops when every candidate is taken and when its wall-time budget runs out.

Ask ahead. The next few configurations (the backend's ``ask_ahead``, else LOOKAHEAD) are asked before the current
one is measured and handed to ``backend.prefetch`` so that the CPU compiles while the GPU measures. The schedule
is fixed: fill the queue, measure the oldest (where the backend says which are compiled: the oldest of those),
tell it, ask one more. A backend that can ``submit`` measures the
next configuration while the search records the one before, tells it and asks: the device waits on none of it.
Before a study's first measurement (and its baseline's), its first configurations are asked and handed to the
compilers (``prepare``); a run prepares the next study as soon as the current one has asked its last.

Storage and resume. Each evaluated trial keeps in its user attribute ``record`` everything its results row needs
(:meth:`tuner.results.table.Record.attrs`), so the table is rebuilt from storage. A trial asked but not yet measured is
RUNNING and claims its configuration (:mod:`tuner.search.claims`). When a run stops early (interrupted, killed, out of
time), its RUNNING trials stay: the next run over the same storage (which the run folder's lock keeps to one
process) takes them over as its queue, in order, completing first the ones measured before the stop. With the
sampler seeded per trial and strategies rebuilt from the storage, the resumed run then asks what the
uninterrupted one would have, and reaches the same end. On a storage shared by several processes a RUNNING trial
belongs to its worker while that worker lives; a dead worker's trials are failed and asked again.
"""

from __future__ import annotations

import contextlib
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import optuna
from optuna.trial import FrozenTrial, Trial, TrialState

from tuner.backends.protocol import LOOKAHEAD, Backend, Pending, ask_ahead, start_evaluation
from tuner.config import Config
from tuner.energy.objective import DEFAULT, Objective, label, metric_names, study_objective
from tuner.errors import TunerError
from tuner.measure.measurement import Measurement
from tuner.optuna_attrs import (
    ABANDONED_ATTR,
    AXES_ATTR,
    CLAIM_ATTR,
    DEAD_ATTR,
    DTYPE_ATTR,
    EXPERIMENT_ATTR,
    FIXED_PARAMS_ATTR,
    LOST_ATTR,
    OBJECTIVE_ATTR,
    PROBLEM_ATTR,
    RECORD_ATTR,
    RETRY_ATTR,
    STORED_ATTR,
    STRATEGY_ATTR,
    TRANSFER_ATTR,
    WORKER_ATTR,
)
from tuner.results.objective import objective_of
from tuner.results.record import Record
from tuner.search.callbacks import Callback, adapted
from tuner.search.claims import (
    Liveness,
    SoleWorker,
    claimed_key,
    owner,
    this_worker,
    unclaimed_too_long,
    within_budget,
)
from tuner.search.energy_values import reported
from tuner.search.storage import open_storage
from tuner.search.study_space import (
    FAMILY_PARAM,
    VALUES,
    StudySpace,
    stored_space,
    study_spaces,
)
from tuner.search.trial_making import making, trial_in_making
from tuner.strategies import catalog
from tuner.strategies.optuna_samplers import sampler_maker
from tuner.strategies.protocol import StrategyFactory
from tuner.strategies.sampler import DomainSampler, OptunaProposer, Proposer, StrategyProposer, trial_params
from tuner.strategies.user_samplers import copies_of, pristine_copy

__all__ = ["FAMILY_PARAM", "LOOKAHEAD", "RECORD_ATTR", "Budget", "Evaluation", "StudySearch", "StudySpace",
           "ask_configuration", "check_same_strategy", "open_storage", "open_study", "stored_space", "strategy_name",
           "study_spaces"]

READY_POLL_S = 1.0
"""How long a search waits for one of its configurations to finish compiling before it looks at the others again
(configurations asked meanwhile, the next study's)."""
OTHERS_POLL_S = 0.5
"""How often a worker that has nothing left to ask looks whether the configurations other workers claimed are
measured (the study is done) or were left by a dead worker (it measures them)."""

Choice = str | optuna.samplers.BaseSampler | StrategyFactory
"""A strategy: a name (:mod:`tuner.strategies.catalog`), an Optuna sampler, or a factory of a Strategy."""


# --- strategies and storage -------------------------------------------------------------------------------


_asking_locks: dict[str, threading.Lock] = {}
_asking_guard = threading.Lock()


def asking(study_name: str) -> threading.Lock:
    """The lock that makes counting a study's budget and asking its next trial one step for the threads of this
    process (one per GPU): without it, two could both find one trial left and ask one each."""
    with _asking_guard:
        return _asking_locks.setdefault(study_name, threading.Lock())


def strategy_name(choice: Choice) -> str:
    """How a strategy is named in the results table (the ``sampler`` column)."""
    if isinstance(choice, str):
        return choice
    named = getattr(choice, "name", None)
    if isinstance(named, str) and not isinstance(choice, optuna.samplers.BaseSampler):
        return named
    return type(choice).__name__ if isinstance(choice, optuna.samplers.BaseSampler) else \
        getattr(choice, "__name__", type(choice).__name__)


def check_choice(choice: Choice) -> None:
    """TunerError for a name that names no strategy, a strategy whose package is missing, or a sampler object
    that cannot be copied for each study and trial."""
    if isinstance(choice, str):
        if choice not in catalog.NAMES:
            raise TunerError(f"unknown sampler '{choice}'; choose one of {', '.join(catalog.NAMES)}")
        if choice in catalog.OPTUNA:
            sampler_maker(choice)
    elif isinstance(choice, optuna.samplers.BaseSampler):
        pristine_copy(choice)
    elif not callable(choice):
        raise TunerError(f"a sampler is a name ({', '.join(catalog.NAMES)}), an Optuna sampler or a strategy "
                         f"factory (a callable taking a Domain and a numpy Generator), not {choice!r}")


def make_sampler(choice: Choice, space: StudySpace, seed: int) -> DomainSampler:
    """The study's sampler: proposals of the chosen strategy, each a free valid configuration."""
    name = strategy_name(choice)
    proposer: Proposer
    if isinstance(choice, optuna.samplers.BaseSampler):
        proposer = OptunaProposer(name, copies_of(choice), space, seed, space.name)
    elif isinstance(choice, str) and choice in catalog.OPTUNA:
        proposer = OptunaProposer(name, sampler_maker(choice), space, seed, space.name)
    else:
        factory = catalog.strategy_factory(choice) if isinstance(choice, str) else choice
        proposer = StrategyProposer(name, factory, space, seed, space.name)
    return DomainSampler(space, proposer, seed, space.name)


def open_study(storage: optuna.storages.BaseStorage, space: StudySpace, choice: Choice, seed: int,
               liveness: Liveness | None = None, objective: Objective = DEFAULT) -> optuna.Study:
    """Create the study or continue it: with the chosen strategy's sampler, and every trial a dead worker measured
    but did not finish completed from its record. ``objective``: one value per name, each maximised."""
    study = optuna.create_study(storage=storage, study_name=space.name, directions=["maximize"] * len(objective),
                                load_if_exists=True)
    attrs = study.user_attrs
    if (OBJECTIVE_ATTR in attrs or AXES_ATTR in attrs) and study_objective(attrs) != objective:
        raise TunerError(f"study '{space.name}' in the Optuna storage searched for {label(study_objective(attrs))}, "
                         f"not {label(objective)}; run into a new output folder or storage, or search for "
                         f"{label(study_objective(attrs))} again")
    if AXES_ATTR not in attrs:
        if study.get_trials(deepcopy=False):
            raise TunerError(f"study '{space.name}' in the Optuna storage was recorded with an earlier "
                             f"representation of its parameters; move the storage aside (a run folder's results "
                             f"table fills a new one) or run into a new output folder or storage")
        p = space.problem
        for key, value in {EXPERIMENT_ATTR: space.experiment, PROBLEM_ATTR: p.label, **p.as_dict(),
                           DTYPE_ATTR: space.dtype, OBJECTIVE_ATTR: list(objective),
                           STRATEGY_ATTR: strategy_name(choice), STORED_ATTR: VALUES,
                           AXES_ATTR: space.axes_attr()}.items():
            study.set_user_attr(key, value)
        attrs = study.user_attrs
    elif attrs[AXES_ATTR] != space.axes_attr():
        raise TunerError(f"study '{space.name}' in the Optuna storage was created with other parameter values than "
                         f"the experiment now lists; restore the values, or run into a new output folder or storage")
    names = metric_names(objective, space.unit)
    if study.metric_names != names:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names(names)
    space = stored_space(study, space)
    complete_measured(study, space, liveness or SoleWorker())
    study.sampler = make_sampler(choice, space, seed)
    return study


def check_same_strategy(storage: optuna.storages.BaseStorage, name: str, choice: Choice) -> None:
    """TunerError where the study ``name`` exists and was searched with another strategy than ``choice`` (a study
    written before the strategy was kept names it in its evaluations' records); nothing is written. A run into a
    folder's own storage calls it: continuing a study with another strategy would mix the two, so that the results
    would say nothing about either (workers sharing a storage may each bring their own strategy; each row names
    its strategy)."""
    try:
        study_id = storage.get_study_id_from_name(name)
    except KeyError:
        return
    searched = storage.get_study_user_attrs(study_id).get(STRATEGY_ATTR)
    if searched is None:
        records = [t.user_attrs[RECORD_ATTR] for t in storage.get_all_trials(study_id, deepcopy=False,
                                                                             states=(TrialState.COMPLETE,))
                   if isinstance(t.user_attrs.get(RECORD_ATTR), dict)]
        searched = records[-1].get("sampler") if records else None
    chosen = strategy_name(choice)
    if searched is not None and searched != chosen:
        raise TunerError(f"study '{name}' in the Optuna storage was searched with the sampler '{searched}', not "
                         f"'{chosen}': continuing it with another strategy would mix the two, so that the results "
                         f"say nothing about either; run with --sampler {searched} to continue it, or into a new "
                         f"output folder (--out) or storage to search with '{chosen}'")


def ask_configuration(study: optuna.Study, space: StudySpace) -> Trial:
    """A new trial of the study (the first of its queue, if any) with its configuration's parameters set."""
    trial = study.ask()
    suggest_configuration(trial, space)
    return trial


def suggest_configuration(trial: Trial, space: StudySpace) -> None:
    """Set a trial's parameters: those it was queued with, else its sampler's proposal (each trial holds its
    family's parameters only, so the search space is not fixed in advance)."""
    frozen = trial.study._storage.get_trial(trial._trial_id)
    queued = dict(frozen.system_attrs.get(FIXED_PARAMS_ATTR) or {})
    params = queued if space.point_of(queued) is not None else trial.relative_params
    distributions = space.distributions()
    for name in params:
        trial._suggest(name, distributions[name])


def complete_measured(study: optuna.Study, space: StudySpace, liveness: Liveness) -> None:
    """Tell every RUNNING trial of a dead worker that holds its measurement (the worker died between recording
    and telling it)."""
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        record = trial.user_attrs.get(RECORD_ATTR)
        config = space.config_of(trial.params)
        if record is None or config is None or liveness.alive(trial.user_attrs.get(WORKER_ATTR)):
            continue
        try:
            study.tell(trial.number, reported(study_objective(study.user_attrs), config,
                                              Measurement.from_dict(record["measurement"])))
        except (RuntimeError, ValueError):  # told meanwhile by another worker
            continue


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

    def record(self, study: str, trial: int, sampler: str, config: Config, measurement: Measurement,
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
    """The search whose study the evaluation belongs to: this one, or the next study's."""


class StudySearch:
    """Searches one study until its budget is spent, asking ahead and never measuring a configuration twice."""

    def __init__(self, study: optuna.Study, space: StudySpace, backend: Backend, budget: Budget,
                 recorder: Recorder, progress: Reporter, liveness: Liveness | None = None,
                 callbacks: Sequence[Callback] = ()):
        self.study, self.space, self.backend, self.budget = study, stored_space(study, space), backend, budget
        self.recorder, self.progress = recorder, progress
        self.callbacks = tuple(adapted(callback) for callback in callbacks)
        self.liveness = liveness or SoleWorker()
        self.sole = isinstance(self.liveness, SoleWorker)
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
        self.pending: deque[tuple[Trial, Config, float]] = deque()
        """(trial, configuration, time.monotonic() when asked), oldest first; the one the device is at first."""
        self.flight: Flight | None = None
        self.new = 0
        self.started = time.monotonic()
        self.prepared = False
        self.then: Callable[[], StudySearch | None] | None = None
        """Called once when the study has asked its last configuration: a run prepares the next study's search
        and answers it, so that the device measures its compiled configurations while the last ones of this study
        still compile."""
        self.successor: StudySearch | None = None
        self.transferred: dict[int, str] = {}
        """Trial number -> the study its queued configuration was transferred from (read when it was asked)."""
        self.running = False
        """Whether this search's study is the one being searched (another search may measure for it before)."""
        self._refresh()

    def _refresh(self) -> None:
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
            elif not self.sole and trial.number not in mine and \
                    self.liveness.alive(trial.user_attrs.get(WORKER_ATTR)):
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
        self._take_over()
        self._fill()

    def run(self) -> StudyOutcome:
        self.started = time.monotonic()
        self.running = True
        self.progress.study_started(self.space.name, self._limit, self.budget.timeout_s)
        self._report_progress()
        try:
            self.prepare()
            stopped = self._search()
        except BaseException:
            self._release("interrupted")
            self.progress.study_finished("interrupted")
            raise
        self.progress.study_finished(stopped)
        return StudyOutcome(self.space.name, len(self.done), self.new, stopped)

    def _search(self) -> str:
        while True:
            stopped = self._fill()
            queued = self._queued()
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
                self._release("time budget spent")
                return f"time budget of {self.budget.timeout_s:g} s spent"
            search, chosen = self._next(queued)
            trial, config, asked = chosen
            if not search._owns(trial, config, asked):
                search.pending.remove(chosen)
                continue
            self._land(chosen, search)

    def _queued(self) -> list[tuple[Trial, Config, float]]:
        """This search's configurations waiting to be measured: all it asked but the one the device is at."""
        flying = self.flight.trial if self.flight else None
        return [entry for entry in self.pending if entry[0] is not flying]

    def _next(self, queued: list[tuple[Trial, Config, float]]) -> tuple[StudySearch, tuple[Trial, Config, float]]:
        """The oldest queued configuration the backend can start at once (compiled), so that a configuration
        that compiles long does not hold up the ones compiled after it; when none of this study's can, one of the
        next study's (once this study has asked its last); when none of those can either, the first that
        finishes compiling, or the oldest where the backend cannot tell."""
        ready = getattr(self.backend, "ready", None)
        if ready is None:
            return self, queued[0]
        wait_compiled = getattr(self.backend, "wait_compiled", None)
        while True:
            candidates = [(self, entry) for entry in queued]
            successor, flying = self.successor, self.flight.trial if self.flight else None
            if successor is not None:
                candidates += [(successor, entry) for entry in successor.pending if entry[0] is not flying]
            found = next(((search, entry) for search, entry in candidates if ready(entry[1])), None)
            if found is not None:
                return found
            if wait_compiled is None:
                return self, queued[0]
            if self.flight:  # record it while the compilers work
                self._land(None)
            wait_compiled([entry[1] for _, entry in candidates], READY_POLL_S)

    def _land(self, start: tuple[Trial, Config, float] | None, search: StudySearch | None = None) -> None:
        """Wait for the evaluation in flight, start ``start`` (of ``search``'s study, this one's by default) on
        the device, then record the one that came back (while the device measures the new one)."""
        landed, measurement, device_s = self.flight, None, None
        if landed is not None:
            measurement = landed.pending.wait()
            device_s = self.backend.busy_seconds - landed.busy_before
        self.flight = None
        try:
            if start is not None:
                busy = self.backend.busy_seconds
                self.flight = Flight(*start, start_evaluation(self.backend, start[1]), busy, search or self)
        finally:  # what came back is kept, even when the next one fails to start
            if landed is not None and measurement is not None:
                owner = landed.search
                owner._store(landed.trial, landed.config, measurement, device_s)
                owner.pending.remove(next(entry for entry in owner.pending if entry[0] is landed.trial))

    # asking
    def _fill(self) -> str | None:
        """Ask until ``lookahead`` configurations wait to be measured (the one in flight included)."""
        while len(self.pending) < self.lookahead:
            with contextlib.nullcontext() if self.sole else asking(self.study.study_name):
                if not self.sole:
                    self._refresh()
                    self._fail_dead()
                stopped = self._stop_reason()
                if stopped:
                    self._asked_all()
                    return stopped
                self._queue(self._ask())
        return None

    def _ask(self) -> Trial:
        """A new trial with its configuration. The sole worker makes it in one write, parameters and claim
        included (:mod:`tuner.search.trial_making`), where the study's queue is empty; otherwise Optuna's ``ask``
        makes it and stores each parameter in a write of its own."""
        sampler = self.study.sampler
        if not self.sole or not isinstance(sampler, DomainSampler):
            return ask_configuration(self.study, self.space)
        trials = self.study.get_trials(deepcopy=False)
        if any(t.state == TrialState.WAITING for t in trials):
            return ask_configuration(self.study, self.space)
        made = trial_in_making(len(trials))
        with making(self.study, made):
            sampler.before_trial(self.study, made)
            made.params = sampler.sample_relative(self.study, made, self.space.distributions())
        made.distributions = self.space.distributions_of(made.params)
        config = self.space.config_of(made.params)
        if config is not None:
            made.user_attrs.update({CLAIM_ATTR: config.key, WORKER_ATTR: this_worker()})
        trial = Trial(self.study, self.study._storage.create_new_trial(self.study._study_id, template_trial=made))
        assert trial.number == made.number, "a sole worker's trials are numbered in the order it makes them"
        return trial

    def _asked_all(self) -> None:
        then, self.then = self.then, None
        if then is not None:
            self.successor = then()

    def _queue(self, trial: Trial) -> None:
        """Claim the trial's configuration and queue it, or fail the trial when its configuration is not valid, or
        evaluated already, or queued by this search. Whether another worker's claim of it wins is decided when the
        trial is about to be measured (:meth:`_owns`): a claim seen in an earlier reading may have lost since."""
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

    def _owns(self, trial: Trial, config: Config, asked: float) -> bool:
        """Whether this trial owns its configuration (always, for the sole worker); False after failing it."""
        if self.sole:
            return True
        while True:
            trials = self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING, TrialState.COMPLETE,
                                                                   TrialState.WAITING))
            found = owner(trials, trial.number, config.key, self.liveness, asked, self._held_key)
            if found is not None:
                break
            time.sleep(0.05)
        if found == trial.number and within_budget(trials, trial.number, self.budget.trials, self.liveness,
                                                   self._held_key):
            return True
        trial.set_user_attr(LOST_ATTR, found if found != trial.number else "budget")
        self.study.tell(trial, state=TrialState.FAIL)
        return False

    def _held_key(self, trial: FrozenTrial) -> str | None:
        """The configuration a trial holds: its record's or claim's, or, for a trial waiting in the queue, its
        parameters'."""
        key = claimed_key(trial)
        if key is None and trial.state == TrialState.WAITING:
            config = self.space.config_of(trial_params(trial))
            key = config.key if config is not None else None
        return key

    # trials left by an earlier run or a dead worker
    def _take_over(self) -> None:
        """The RUNNING trials of dead workers: the sole worker makes them its queue, in order; a worker sharing
        the study fails them, so that their configurations are asked again."""
        if not self.sole:
            self._fail_dead()
            return
        for frozen in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            trial = Trial(self.study, frozen._trial_id)
            if self.space.point_of(frozen.params) is None:  # asked, never sampled: sample now
                suggest_configuration(trial, self.space)
            self._queue(trial)

    def _fail_dead(self) -> None:
        """Fail the RUNNING trials of dead workers and put their configurations first in the study's queue."""
        for frozen in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            worker = frozen.user_attrs.get(WORKER_ATTR)
            if self.liveness.alive(worker) or any(t.number == frozen.number for t, _, _ in self.pending) or \
                    (worker is None and not unclaimed_too_long(frozen)):
                continue
            try:
                self.study._storage.set_trial_user_attr(frozen._trial_id, DEAD_ATTR, worker)
                self.study.tell(frozen.number, state=TrialState.FAIL)
            except (RuntimeError, ValueError):  # finished meanwhile, or failed by another worker
                continue
            config = self.space.config_of(frozen.params)
            if config is not None and self.space.candidate(config) >= 0:
                source = {TRANSFER_ATTR: frozen.user_attrs[TRANSFER_ATTR]} if TRANSFER_ATTR in frozen.user_attrs else {}
                self.study.enqueue_trial(frozen.params, user_attrs={RETRY_ATTR: frozen.number, **source})

    def _release(self, why: str) -> None:
        """A study stopping early: the sole worker leaves its queue RUNNING for the next run to take over; a worker
        sharing the study fails it, so that other workers may take the configurations."""
        if self.sole:
            return
        for trial, _, _ in self.pending:
            try:
                trial.set_user_attr(ABANDONED_ATTR, why)
                self.study.tell(trial, state=TrialState.FAIL)
            except (RuntimeError, ValueError):  # already finished
                continue
        self.pending.clear()

    # recording
    def _store(self, trial: Trial, config: Config, measurement: Measurement, device_s: float | None) -> None:
        record = self.recorder.record(self.space.name, trial.number, self.sampler_name, config, measurement,
                                      device_s)
        source = self.transferred.pop(trial.number, None)
        if source is not None:
            record = replace(record, transferred_from=source)
        trial.set_user_attr(RECORD_ATTR, record.attrs())
        values = reported(self.objective, config, measurement)
        self.study.tell(trial, values)
        value = objective_of(config, measurement)
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
