"""Every strategy inside an Optuna study: :class:`DomainSampler` proposes all of a study's parameters at once and
maps the proposal to the nearest free candidate (no trial COMPLETE, RUNNING or WAITING took it), so a proposal is
never repeated and never invalid. The proposal comes from an :class:`OptunaProposer` (an Optuna sampler made
afresh for every trial from the run's seed, the study and the trial; it sees the index view,
:mod:`tuner.strategies.index_view`) or a :class:`StrategyProposer` (our Strategy, told every completed evaluation
in trial order and rebuilt from the storage by the same calls). A strategy minimises: it is told the inverse of a
trial's value (``inf`` for a failure), of several objectives the product of their inverses."""

from __future__ import annotations

import copy
import math
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
from optuna.study import Study, StudyDirection
from optuna.trial import FrozenTrial, TrialState

from tuner.optuna_attrs import ASKED_ATTR, FIXED_PARAMS_ATTR
from tuner.strategies.domain import Domain
from tuner.strategies.index_view import Translation, index_view
from tuner.strategies.protocol import Strategy, StrategyFactory


class Parameters(Protocol):
    """What the sampler needs of a study's search space: its stored view (a trial's parameters in the storage) and
    its index view (what strategies and Optuna's samplers search: every axis, numbers as positions)."""

    @property
    def domain(self) -> Domain: ...

    def distributions(self) -> dict[str, BaseDistribution]:
        """The stored distribution of every parameter a trial may hold."""
        ...

    def params_of(self, candidate: int) -> dict[str, Any]:
        """The stored parameters of a candidate."""
        ...

    def point_of(self, params: Mapping[str, Any]) -> np.ndarray | None:
        """The value indices stored parameters stand for (None where they do not name listed values)."""
        ...

    def index_distributions(self) -> dict[str, BaseDistribution]:
        """Every axis in the index view (the same for every trial)."""
        ...

    def index_params(self, point: np.ndarray) -> dict[str, Any]: ...

    def index_point(self, params: Mapping[str, Any]) -> np.ndarray | None: ...


def trial_seed(seed: int, study_name: str, number: int) -> int:
    return (seed * 1_000_003 + zlib.crc32(study_name.encode()) + number * 7919) % 2**31


def study_seed(seed: int, study_name: str) -> int:
    return (seed * 1_000_003 + zlib.crc32(study_name.encode())) % 2**31


class History:
    """What a study's trials say about the domain: which candidates are taken, and the told results in order."""

    def __init__(self, parameters: Parameters, trials: Sequence[FrozenTrial], directions: Sequence[StudyDirection],
                 asking: int, known: dict[int, int] | None = None):
        """``known``: the candidates of trials seen before, by trial number (filled in as trials are read)."""
        domain = parameters.domain
        self.trials = trials
        self.taken = np.zeros(domain.size, dtype=bool)
        self.completed: list[tuple[FrozenTrial, int, float]] = []
        """(trial, candidate, value to minimise) of every completed trial, in trial order."""
        known = {} if known is None else known
        for trial in trials:
            if trial.number == asking or trial.state not in (TrialState.COMPLETE, TrialState.RUNNING,
                                                             TrialState.WAITING):
                continue
            candidate = known.get(trial.number, -2)
            if candidate == -2:
                candidate = _candidate(parameters, trial_params(trial))
                if candidate >= 0 and trial.params:  # a trial's parameters are set once
                    known[trial.number] = candidate
            if candidate < 0:
                continue
            self.taken[candidate] = True
            if trial.state == TrialState.COMPLETE and trial.values is not None:
                self.completed.append((trial, candidate, scalar_cost(trial.values, directions)))


def trial_params(trial: FrozenTrial) -> dict[str, Any]:
    """A trial's parameters, also while it waits in the study's queue (where Optuna keeps them apart)."""
    return trial.params or dict(trial.system_attrs.get(FIXED_PARAMS_ATTR, {}))


def _candidate(parameters: Parameters, params: Mapping[str, Any]) -> int:
    point = parameters.point_of(params)
    return -1 if point is None else int(parameters.domain.candidates_of(point[None, :].astype(np.int64))[0])


def cost(value: float, direction: StudyDirection) -> float:
    """A study's value as a strategy minimises it: the inverse of a maximised value (``inf`` for 0, a failure)."""
    if direction == StudyDirection.MINIMIZE:
        return value if math.isfinite(value) else math.inf
    return 1.0 / value if value > 0 and math.isfinite(value) else math.inf


def scalar_cost(values: Sequence[float], directions: Sequence[StudyDirection]) -> float:
    """A trial's values as one cost to minimise: the product of each one's :func:`cost`."""
    return math.prod(cost(value, direction) for value, direction in zip(values, directions, strict=True))


class Proposer(Protocol):
    name: str

    def before_trial(self, study: Study, trial: FrozenTrial) -> None: ...

    def propose(self, study: Study, trial: FrozenTrial, history: History) -> np.ndarray:
        """A point of the index box (value indices, possibly fractional) for the trial."""
        ...

    def after_trial(self, study: Study, trial: FrozenTrial, state: TrialState,
                    values: Sequence[float] | None) -> None: ...


class DomainSampler(optuna.samplers.BaseSampler):
    """The sampler of a study: proposals from ``proposer``, each mapped to the nearest free candidate."""

    def __init__(self, parameters: Parameters, proposer: Proposer, seed: int, study_name: str):
        self.parameters, self.proposer = parameters, proposer
        self.seed, self.study_name = seed, study_name
        self._known: dict[int, int] = {}

    @property
    def name(self) -> str:
        return self.proposer.name

    def infer_relative_search_space(self, study: Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return self.parameters.distributions()

    def sample_relative(self, study: Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        domain = self.parameters.domain
        history = History(self.parameters, study.get_trials(deepcopy=False), study.directions, trial.number,
                          self._known)
        point = self.proposer.propose(study, trial, history)
        rng = np.random.default_rng(trial_seed(self.seed, self.study_name, trial.number))
        candidate = domain.nearest(point, ~history.taken, rng)
        if candidate < 0:  # every candidate is taken: the search loop sees the claim lost and stops
            candidate = domain.nearest(point)
        return self.parameters.params_of(candidate)

    def sample_independent(self, study: Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        """A parameter outside the study's own (none of the search loop's): drawn at random."""
        seed = trial_seed(self.seed, self.study_name, trial.number)
        return optuna.samplers.RandomSampler(seed=seed).sample_independent(study, trial, param_name,
                                                                           param_distribution)

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        self.proposer.before_trial(study, trial)

    def after_trial(self, study: Study, trial: FrozenTrial, state: TrialState,
                    values: Sequence[float] | None) -> None:
        self.proposer.after_trial(study, trial, state, values)


class OptunaProposer:
    """Proposals of an Optuna sampler, made for each trial by ``make(study seed, trial seed)``."""

    def __init__(self, name: str, make: Callable[[int, int], optuna.samplers.BaseSampler],
                 parameters: Parameters, seed: int, study_name: str):
        self.name, self.make, self.parameters = name, make, parameters
        self.seed, self.study_name = seed, study_name
        self._made: tuple[int, optuna.samplers.BaseSampler] | None = None
        self._translate = Translation(parameters)

    def _sampler(self, trial: FrozenTrial) -> optuna.samplers.BaseSampler:
        if self._made is None or self._made[0] != trial.number:
            sampler = self.make(study_seed(self.seed, self.study_name),
                                trial_seed(self.seed, self.study_name, trial.number))
            self._made = (trial.number, sampler)
        return self._made[1]

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        self._sampler(trial).before_trial(index_view(study, self._translate), self._translate(trial))

    def propose(self, study: Study, trial: FrozenTrial, history: History) -> np.ndarray:
        sampler = self._sampler(trial)
        study, trial = index_view(study, self._translate), self._translate(trial)
        space = self.parameters.index_distributions()
        relative = {name: distribution for name, distribution in
                    sampler.infer_relative_search_space(study, trial).items()
                    if name in space and not distribution.single()}
        params = dict(sampler.sample_relative(study, trial, relative)) if relative else {}
        partial = copy.copy(trial)
        partial.params, partial.distributions = dict(trial.params), dict(trial.distributions)
        for name, distribution in space.items():
            if name not in params:
                params[name] = (_single_value(distribution) if distribution.single() else
                                sampler.sample_independent(study, partial, name, distribution))
            partial.params[name], partial.distributions[name] = params[name], distribution
        point = self.parameters.index_point(params)
        assert point is not None, params
        return point

    def after_trial(self, study: Study, trial: FrozenTrial, state: TrialState,
                    values: Sequence[float] | None) -> None:
        self._sampler(trial).after_trial(index_view(study, self._translate), self._translate(trial), state, values)


class StrategyProposer:
    """Proposals of one of our strategies, told every completed evaluation before each ask."""

    def __init__(self, name: str, factory: StrategyFactory, parameters: Parameters, seed: int, study_name: str):
        self.name, self.factory, self.parameters = name, factory, parameters
        self.seed = study_seed(seed, study_name)
        self.identity = f"{name}/{self.seed}"
        self.strategy: Strategy | None = None
        self.told: set[int] = set()

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        return None

    def after_trial(self, study: Study, trial: FrozenTrial, state: TrialState,
                    values: Sequence[float] | None) -> None:
        return None

    def propose(self, study: Study, trial: FrozenTrial, history: History) -> np.ndarray:
        if self.strategy is None:
            self.strategy = self._rebuild(history, trial)
        self._tell(history.completed)
        try:
            candidate = self.strategy.ask()
        except RuntimeError:  # it has asked every candidate, yet one came free again (a dead worker's claim):
            candidate = 0  # any point will do, the sampler takes the nearest free candidate
        study._storage.set_trial_system_attr(trial._trial_id, ASKED_ATTR,
                                             {"by": self.identity, "told": len(self.told)})
        return self.parameters.domain.index_row(candidate).astype(float)

    def _rebuild(self, history: History, asking: FrozenTrial) -> Strategy:
        """The strategy as the earlier asks of this study left it: the same tells and asks, in the same order."""
        strategy = self.strategy = self.factory(self.parameters.domain, np.random.default_rng(self.seed))
        own = [t for t in history.trials if t.number != asking.number
               and (t.system_attrs.get(ASKED_ATTR) or {}).get("by") == self.identity]
        for trial in own:  # in trial order, as the storage lists them
            self._tell(history.completed[:int(trial.system_attrs[ASKED_ATTR]["told"])])
            strategy.ask()
        return strategy

    def _tell(self, completed: Sequence[tuple[FrozenTrial, int, float]]) -> None:
        assert self.strategy is not None
        for trial, candidate, value in completed:
            if trial.number not in self.told:
                self.told.add(trial.number)
                self.strategy.tell(candidate, value)


def _single_value(distribution: BaseDistribution) -> Any:
    """The one value of a distribution that has one (its ``single()``): the lower bound, or the only choice."""
    if isinstance(distribution, optuna.distributions.CategoricalDistribution):
        return distribution.choices[0]
    return distribution.low  # type: ignore[attr-defined]
