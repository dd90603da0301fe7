"""The Optuna side of a run: one study per (problem, dtype), its search space, samplers, budget, dedupe, resume.

Search space. Each study is named ``<experiment>/<MxNxK>/<dtype>``. When the experiment lists more than one
kernel family for the dtype, the categorical parameter ``family`` picks one; each family's parameters are then
suggested conditionally as categorical ``<family>.<PARAM>`` over the values the experiment lists. The direction
is *maximize* and the value told is GFLOP/s for an ``ok`` evaluation, 0.0 for every other status (invalid,
compile_error, wrong, crashed), so that samplers learn to avoid them.

Samplers (``search.sampler``):

* ``tpe``: ``TPESampler(seed)``.
* ``random``: ``RandomSampler(seed)``.
* ``cmaes``: ``CmaEsSampler`` (needs the ``cmaes`` package). CMA-ES has no categorical search space, so on
  these all-categorical spaces every parameter comes from its independent fallback (random sampling).
* ``gp``: ``GPSampler`` (needs PyTorch). It models the parameters every trial shares (``family`` when there are
  several families, else the family's parameters); conditional ones come from its independent fallback.
* ``bruteforce``: Optuna's exhaustive ``BruteForceSampler``, which visits every combination (statically
  invalid ones included, which then count as evaluations) in random order.
* ``grid``: the exhaustive sweep in file order: every valid configuration of the study is enqueued
  (``study.enqueue_trial``) in deterministic enumeration order over a ``RandomSampler``, one at a time just
  before it is asked, so that a study continued with another sampler inherits no queue.

The seed of each study's sampler is derived from the run's seed, the study name and the number of trials
already in the study, so a resumed study does not replay the random draws of its first run.

Budget. ``trials`` is the number of distinct configurations evaluated per study at most (across resumes).
Statically invalid suggestions count as evaluations: they are recorded with status ``invalid`` and the rule's
text and never reach the backend. A study also stops when every valid configuration has been evaluated, when
its wall-time budget runs out and when the sampler repeats itself ``max_repeats`` times in a row. Small
discrete spaces make model-based samplers such as TPE repeat their favourite: after ``EXPLORE_AFTER`` repeats
in a row the study enqueues an unevaluated valid configuration drawn at random (seeded), so the budget buys
distinct evaluations and the sampler's model still sees every result. A repeated
suggestion is never measured again: it is told the recorded value and marked ``duplicate_of=<trial number>``;
duplicates are not rows of the results table.

Ask ahead. The next few valid configurations are asked before the current one is measured and handed to
``backend.prefetch`` so that the CPU compiles while the GPU measures.

Storage and resume. Each evaluated trial keeps in its user attribute ``record`` everything its results row
needs (:meth:`tuner.results.Record.attrs`: config key and values, ``Measurement.to_dict()``, metadata_id, wall
offset, measured_at, sampler, device time), so the table is rebuilt from storage. Opening an existing study continues
it: a trial left RUNNING by a dead process is completed from its attributes when it had been measured, and
otherwise marked FAIL; the configuration of every FAIL trial that was never evaluated is enqueued again.
One run at a time may use a study.
"""

from __future__ import annotations

import importlib.util
import random
import time
import warnings
import zlib
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import optuna
from optuna.distributions import CategoricalDistribution
from optuna.trial import FrozenTrial, Trial, TrialState

from tuner.backends.protocol import Backend
from tuner.config import Config, ParamValue, Problem
from tuner.errors import TunerError
from tuner.kernels.discovery import get_family
from tuner.kernels.targets import target
from tuner.measurement import Measurement, Status
from tuner.results import DUPLICATE_ATTR, RECORD_ATTR, Record, is_evaluation, objective_of
from tuner.settings import CompileSettings
from tuner.space import entry_space, violations
from tuner.space_configs import Rejections, union

if TYPE_CHECKING:
    from tuner.experiment import Experiment

LOOKAHEAD = 8
"""Valid configurations asked ahead of the one being measured (the current one included): enough to keep
the compile pool busy while the GPU measures, since a register-blocked kernel takes nvcc one to two seconds and
its measurement a fraction of one. TPE treats the asked-but-untold trials as constant liars."""
MAX_REPEATS = 50
EXPLORE_AFTER = 2
"""Repeated suggestions in a row after which an unevaluated configuration is enqueued."""
"""Duplicate suggestions in a row after which a study stops."""
FAMILY_PARAM = "family"
ENQUEUED_ATTR = "enqueued"
"""The user attribute of a trial this module enqueued: the configuration's key."""


@dataclass(frozen=True, eq=False)
class StudySpace:
    """The configurations one study searches: a problem, a dtype and the families listing that dtype."""

    experiment: str
    problem: Problem
    dtype: str
    choices: dict[str, dict[str, tuple[ParamValue, ...]]]
    """family -> parameter -> values, in file order."""
    valid: Sequence[Config]
    """Every valid configuration, in enumeration (file) order."""
    rejected: Mapping[str, str] = field(default_factory=dict)
    """Config key -> the static rules it breaks, for every listed but invalid combination."""
    arch: str = CompileSettings().arch
    """The target whose resource limits the configurations respect."""

    @property
    def baseline(self) -> str | None:
        """The vendor routine all the study's families compare with (``gemm``), or None."""
        kinds = {get_family(family).baseline for family in self.choices}
        return kinds.pop() if len(kinds) == 1 else None

    @property
    def name(self) -> str:
        return f"{self.experiment}/{self.problem.label}/{self.dtype}"

    @property
    def size(self) -> int:
        """Combinations listed by the experiment, valid or not."""
        return len(self.valid) + len(self.rejected)

    def suggest(self, trial: Trial) -> Config:
        try:
            family = (trial.suggest_categorical(FAMILY_PARAM, list(self.choices)) if len(self.choices) > 1
                      else next(iter(self.choices)))
            params = {name: _suggested(trial.suggest_categorical(f"{family}.{name}", list(values)))
                      for name, values in self.choices[family].items()}
        except ValueError as exc:
            raise TunerError(
                f"study '{self.name}' in the Optuna storage was created with other parameter values than the "
                f"experiment now lists ({exc}); restore the values, or run into a new output folder or storage"
            ) from None
        return Config.make(self.problem, str(family), self.dtype, params)

    def params(self, config: Config) -> dict[str, ParamValue]:
        """The Optuna parameters that stand for ``config`` (for ``enqueue_trial``)."""
        named = {f"{config.family}.{k}": v for k, v in config.params}
        return {FAMILY_PARAM: config.family, **named} if len(self.choices) > 1 else named

    def distributions(self, config: Config) -> dict[str, optuna.distributions.BaseDistribution]:
        """The distributions of the parameters that stand for ``config``."""
        listed = self.choices[config.family]
        named: dict[str, optuna.distributions.BaseDistribution] = {
            f"{config.family}.{n}": CategoricalDistribution(list(values)) for n, values in listed.items()}
        return {FAMILY_PARAM: CategoricalDistribution(list(self.choices)), **named} if len(self.choices) > 1 else named

    def add_recorded(self, study: optuna.Study, record: Record) -> bool:
        """Put a recorded evaluation into the study as a completed trial; False when the experiment no longer
        lists its configuration."""
        config = record.config
        listed = self.choices.get(config.family, {})
        if set(listed) != set(config.param_dict) or any(value not in listed[name] for name, value in config.params):
            return False
        study.add_trial(optuna.trial.create_trial(
            params=self.params(config), distributions=self.distributions(config),
            value=objective_of(config, record.measurement) or 0.0, user_attrs={RECORD_ATTR: record.attrs()}))
        return True

    def config_of(self, params: dict[str, Any]) -> Config | None:
        """The configuration a trial's parameters describe; None when they are incomplete."""
        family = params.get(FAMILY_PARAM) if len(self.choices) > 1 else next(iter(self.choices))
        if family not in self.choices or any(f"{family}.{n}" not in params for n in self.choices[family]):
            return None
        values = {n: params[f"{family}.{n}"] for n in self.choices[family]}
        return Config.make(self.problem, family, self.dtype, values)

    def rejection(self, config: Config) -> str | None:
        """Why the configuration is statically invalid, or None when it may be measured."""
        if config.key in self.rejected:
            return self.rejected[config.key]
        broken = violations(get_family(config.family), config.param_dict, config.dtype, target(self.arch))
        if broken:
            return "; ".join(broken)
        if config not in self.valid:
            return "this combination of values is not listed by any kernels entry of the experiment"
        return None


def _suggested(value: Any) -> ParamValue:
    """A categorical suggestion, which is one of the values listed (Optuna's type allows floats and None)."""
    assert isinstance(value, int | str), value
    return value


def study_spaces(experiment: Experiment) -> list[StudySpace]:
    """One space per problem and dtype, in file order."""
    spaces = []
    for problem in experiment.problems:
        for dtype in experiment.dtypes:
            choices: dict[str, dict[str, tuple[ParamValue, ...]]] = {}
            specs = [spec for spec in experiment.kernels if dtype in spec.dtypes]
            for spec in specs:
                merged = choices.setdefault(spec.family, {})
                for name, values in spec.values.items():
                    merged[name] = tuple(dict.fromkeys((*merged.get(name, ()), *values)))
            entries = [entry_space(spec) for spec in specs]
            valid = union(problem, entries, dtype)
            rejected = Rejections(union(problem, entries, dtype, valid=False))
            spaces.append(StudySpace(experiment.name, problem, dtype, choices, valid, rejected,
                                     experiment.compile.arch))
    return spaces


# --- samplers and storage -------------------------------------------------------------------------------


class _ExhaustiveSampler(optuna.samplers.BruteForceSampler):
    """Optuna's BruteForceSampler for ask-and-tell: the search loop, not the sampler, decides when to stop.

    (BruteForceSampler.after_trial calls ``study.stop()``, which only works inside ``study.optimize``; the loop
    stops on its own once every valid configuration has been evaluated, before the sampler runs dry.)
    """

    def after_trial(self, study: optuna.Study, trial: FrozenTrial, state: TrialState,
                    values: Any) -> None:
        return None


_NEEDS = {"cmaes": ("cmaes", "pip install cmaes"), "gp": ("torch", 'pip install -e ".[gp]" in the checkout')}


def make_sampler(name: str, seed: int) -> optuna.samplers.BaseSampler:
    """The Optuna sampler behind a ``search.sampler`` name."""
    if name in _NEEDS and importlib.util.find_spec(_NEEDS[name][0]) is None:
        module, install = _NEEDS[name]
        raise TunerError(f"the '{name}' sampler needs the Python package '{module}', which is not installed "
                         f"({install}); or choose another sampler with --sampler")
    samplers: dict[str, Callable[[], optuna.samplers.BaseSampler]] = {
        "tpe": lambda: optuna.samplers.TPESampler(seed=seed, constant_liar=True),
        "random": lambda: optuna.samplers.RandomSampler(seed=seed),
        "grid": lambda: optuna.samplers.RandomSampler(seed=seed),
        "cmaes": lambda: optuna.samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False),
        "gp": lambda: optuna.samplers.GPSampler(seed=seed, warn_independent_sampling=False),
        "bruteforce": lambda: _ExhaustiveSampler(seed=seed),
    }
    if name not in samplers:
        raise TunerError(f"unknown sampler '{name}'; choose one of {', '.join(samplers)}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return samplers[name]()


def study_seed(seed: int, study_name: str, trials_so_far: int) -> int:
    return (seed * 1_000_003 + zlib.crc32(study_name.encode()) + trials_so_far * 7919) % 2**31


def open_study(storage: optuna.storages.BaseStorage, space: StudySpace, sampler_name: str,
               seed: int) -> optuna.Study:
    """Create the study or continue it (recovering what a dead run left), with a freshly seeded sampler."""
    study = optuna.create_study(storage=storage, study_name=space.name, direction="maximize",
                                load_if_exists=True)
    if "dtype" not in study.user_attrs:
        p = space.problem
        for key, value in {"experiment": space.experiment, "problem": p.label, **p.as_dict(),
                           "dtype": space.dtype}.items():
            study.set_user_attr(key, value)
    recover(study, space)
    existing = len(study.get_trials(deepcopy=False))
    study.sampler = make_sampler(sampler_name, study_seed(seed, space.name, existing))
    return study


def recover(study: optuna.Study, space: StudySpace) -> None:
    """Finish what a dead run left RUNNING and enqueue again every configuration that was asked, never measured."""
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        config = space.config_of(trial.params)
        if config is not None and RECORD_ATTR in trial.user_attrs:
            measurement = Measurement.from_dict(trial.user_attrs[RECORD_ATTR]["measurement"])
            study.tell(trial.number, objective_of(config, measurement) or 0.0)
        else:
            study.tell(trial.number, state=TrialState.FAIL)
    trials = study.get_trials(deepcopy=False)
    complete_keys = {t.user_attrs[RECORD_ATTR]["config_key"] for t in trials
                     if t.state == TrialState.COMPLETE and is_evaluation(t)}
    waiting = {t.user_attrs.get(ENQUEUED_ATTR) for t in trials if t.state == TrialState.WAITING}
    for trial in trials:
        if trial.state != TrialState.FAIL:
            continue
        config = space.config_of(trial.params)
        if config is not None and config.key not in complete_keys | waiting:
            enqueue(study, space, config)
            waiting.add(config.key)


def enqueue(study: optuna.Study, space: StudySpace, config: Config) -> None:
    """Make ``config`` the next suggestion of the study."""
    study.enqueue_trial(space.params(config), user_attrs={ENQUEUED_ATTR: config.key})


# --- the search loop --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Budget:
    trials: int
    """Distinct configurations evaluated per study at most."""
    timeout_s: float | None = None
    """Wall time per study and run."""
    max_repeats: int = MAX_REPEATS


class Reporter(Protocol):
    """Shows a study's progress (tuner.progress.Progress)."""

    def study_started(self, name: str, budget: int, timeout_s: float | None) -> None: ...

    def evaluated(self, done: int, new: int, best: tuple[float, Config] | None) -> None: ...

    def study_finished(self, reason: str) -> None: ...


class Recorder(Protocol):
    """Turns a measurement into a stamped Record (environment, clock) and keeps it once it is stored."""

    def record(self, study: str, trial: int, sampler: str, config: Config, measurement: Measurement,
               device_s: float | None) -> Record: ...

    def add(self, record: Record) -> None: ...


@dataclass(frozen=True)
class StudyOutcome:
    name: str
    evaluated: int
    """Distinct configurations the study holds, across runs."""
    new: int
    """Of which evaluated in this run."""
    duplicates: int
    """Repeated suggestions across runs (never measured, not rows)."""
    stopped: str
    """Why the search of this run ended."""


class StudySearch:
    """Searches one study until its budget is spent, asking ahead and never measuring a configuration twice."""

    def __init__(self, study: optuna.Study, space: StudySpace, backend: Backend, budget: Budget,
                 sampler_name: str, recorder: Recorder, progress: Reporter):
        self.study, self.space, self.backend, self.budget = study, space, backend, budget
        self.sampler_name, self.recorder, self.progress = sampler_name, recorder, progress
        self.done: dict[str, tuple[int, float]] = {}
        """Config key -> (trial number, value) of every evaluation in the study."""
        self.best: tuple[float, Config] | None = None
        self.duplicates = 0
        for trial in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
            if DUPLICATE_ATTR in trial.user_attrs:
                self.duplicates += 1
            elif is_evaluation(trial):
                self._remember(trial.user_attrs[RECORD_ATTR]["config_key"], trial.number, trial.value or 0.0,
                               space.config_of(trial.params))
        self.pending: deque[tuple[Trial, Config]] = deque()
        self.repeats_waiting: dict[str, list[Trial]] = {}
        self.remaining_valid = {c.key for c in space.valid} - set(self.done)
        self.repeats_in_a_row = 0
        self.explorer = random.Random(zlib.crc32(f"{space.name}/{len(self.done)}".encode()))
        self.new = 0
        self.started = time.monotonic()

    def _remember(self, key: str, number: int, value: float, config: Config | None) -> None:
        self.done[key] = (number, value)
        if config is not None and value > 0 and (self.best is None or value > self.best[0]):
            self.best = (value, config)

    # stopping rules, checked before every ask
    def _stop_reason(self) -> str | None:
        committed = len(self.done) + len(self.pending)
        if committed >= self.budget.trials:
            return f"{self.budget.trials} configurations evaluated"
        if not self.remaining_valid:
            return "every valid configuration evaluated"
        if self._timed_out():
            return f"time budget of {self.budget.timeout_s:g} s spent"
        if self.repeats_in_a_row >= self.budget.max_repeats:
            return f"the sampler repeated itself {self.repeats_in_a_row} times in a row"
        return None

    def _timed_out(self) -> bool:
        limit = self.budget.timeout_s
        return limit is not None and time.monotonic() - self.started >= limit

    def run(self) -> StudyOutcome:
        self.progress.study_started(self.space.name, min(self.budget.trials, self.space.size), self.budget.timeout_s)
        self._report_progress()
        try:
            stopped = self._search()
        except BaseException:
            self._abandon("interrupted")
            self.progress.study_finished("interrupted")
            raise
        self.progress.study_finished(stopped)
        return StudyOutcome(self.space.name, len(self.done), self.new, self.duplicates, stopped)

    def _search(self) -> str:
        while True:
            stopped = self._fill()
            if not self.pending:
                return stopped or "nothing left to ask"
            if self._timed_out():
                self._abandon("time budget spent")
                return f"time budget of {self.budget.timeout_s:g} s spent"
            self.backend.prefetch([config for _, config in self.pending])
            trial, config = self.pending[0]
            busy_before = self.backend.busy_seconds
            measurement = self.backend.evaluate(config)
            device_s = self.backend.busy_seconds - busy_before
            value = self._store(trial, config, measurement, device_s)
            self.pending.popleft()
            for repeat in self.repeats_waiting.pop(config.key, []):
                self._tell_duplicate(repeat, trial.number, value)

    def _fill(self) -> str | None:
        """Ask until LOOKAHEAD valid configurations wait; record invalid ones and tell duplicates at once."""
        while len(self.pending) < LOOKAHEAD:
            stopped = self._stop_reason()
            if stopped:
                return stopped
            if self.sampler_name == "grid":
                self._feed_grid()
            trial = self.study.ask()
            config = self.space.suggest(trial)
            key = config.key
            if key in self.done or any(key == c.key for _, c in self.pending):
                self._repeat(trial, key)
                continue
            self.repeats_in_a_row = 0
            reason = self.space.rejection(config)
            if reason is None:
                self.pending.append((trial, config))
                self.remaining_valid.discard(key)
            else:
                self._store(trial, config, Measurement(Status.INVALID, reason=reason), None)
        return None

    def _repeat(self, trial: Trial, key: str) -> None:
        """A suggestion already evaluated (told its value now) or waiting (told once it is measured)."""
        self.repeats_in_a_row += 1
        if key in self.done:
            number, value = self.done[key]
            self._tell_duplicate(trial, number, value)
        else:
            self.repeats_waiting.setdefault(key, []).append(trial)
        if self.repeats_in_a_row % EXPLORE_AFTER == 0:
            self._explore()

    def _explore(self) -> None:
        """Enqueue an unevaluated valid configuration, drawn at random, unless one is queued already."""
        if self.study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
            return
        candidates = sorted(self.remaining_valid)
        if candidates:
            key = self.explorer.choice(candidates)
            enqueue(self.study, self.space, next(c for c in self.space.valid if c.key == key))

    def _feed_grid(self) -> None:
        """Keep the next unevaluated valid configuration, in file order, enqueued."""
        if self.study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
            return
        asked = {c.key for _, c in self.pending}
        for config in self.space.valid:
            if config.key not in self.done and config.key not in asked:
                enqueue(self.study, self.space, config)
                return

    def _store(self, trial: Trial, config: Config, measurement: Measurement, device_s: float | None) -> float:
        record = self.recorder.record(self.space.name, trial.number, self.sampler_name, config, measurement,
                                      device_s)
        trial.set_user_attr(RECORD_ATTR, record.attrs())
        value = objective_of(config, measurement) or 0.0
        self.study.tell(trial, value)
        self._remember(config.key, trial.number, value, config)
        self.remaining_valid.discard(config.key)
        self.new += 1
        self.recorder.add(record)
        self._report_progress()
        return value

    def _tell_duplicate(self, trial: Trial, original: int, value: float) -> None:
        self.duplicates += 1
        trial.set_user_attr(DUPLICATE_ATTR, original)
        self.study.tell(trial, value)

    def _abandon(self, why: str) -> None:
        """Fail every asked but unmeasured trial; the next run enqueues their configurations again."""
        open_trials = [t for t, _ in self.pending] + [t for ts in self.repeats_waiting.values() for t in ts]
        self.pending.clear()
        self.repeats_waiting.clear()
        for trial in open_trials:
            try:
                trial.set_user_attr("abandoned", why)
                self.study.tell(trial, state=TrialState.FAIL)
            except (RuntimeError, ValueError):  # already finished
                continue

    def _report_progress(self) -> None:
        best = None if self.best is None else (self.best[0], self.best[1])
        self.progress.evaluated(len(self.done), self.new, best)
