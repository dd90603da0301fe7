"""Optuna's samplers behind the strategy protocol, so that the comparison harness runs them as it runs ours.

Each strategy keeps an Optuna study in memory whose sampler is the one a tuning study uses
(:class:`tuner.strategies.sampler.DomainSampler` around the named Optuna sampler): its parameters are the domain's
axes, an ordered axis as the integer position of its value, any other as a categorical of positions
(:class:`IndexParameters`), and every proposal is mapped to the nearest candidate no trial has taken. ``ask`` asks
the study for a trial and answers its candidate; ``tell`` completes that trial with the value (``inf`` for a
failure, as Optuna keeps it). A value told for a candidate the study did not ask is added as a finished trial.
The samplers' seeds come from the strategy's generator, so a run is a function of its seed.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, IntDistribution
from optuna.trial import Trial, TrialState

from tuner.strategies.domain import Domain
from tuner.strategies.optuna_samplers import sampler_maker
from tuner.strategies.protocol import StrategyFactory
from tuner.strategies.sampler import DomainSampler, OptunaProposer


class IndexParameters:
    """A domain as Optuna parameters: one per axis, its value the position of the axis' value."""

    def __init__(self, domain: Domain):
        self.domain = domain
        self._distributions: dict[str, BaseDistribution] = {
            name: IntDistribution(0, max(int(radix) - 1, 0)) if ordered else
            CategoricalDistribution(list(range(int(radix))))
            for name, radix, ordered in zip(domain.names, domain.radices, domain.ordered, strict=True)}

    def distributions(self) -> dict[str, BaseDistribution]:
        return self._distributions

    def params_of(self, candidate: int) -> dict[str, Any]:
        return {name: int(index) for name, index in zip(self.domain.names, self.domain.index_row(candidate),
                                                        strict=True)}

    def point_of(self, params: Mapping[str, Any]) -> np.ndarray | None:
        try:
            point = np.array([int(params[name]) for name in self.domain.names], dtype=float)
        except (KeyError, TypeError, ValueError):
            return None
        return point if np.all((point >= 0) & (point < self.domain.radices)) else None

    # the study in memory stores the index view itself
    def index_distributions(self) -> dict[str, BaseDistribution]:
        return self._distributions

    def index_params(self, point: np.ndarray) -> dict[str, Any]:
        return {name: int(index) for name, index in zip(self.domain.names, point, strict=True)}

    def index_point(self, params: Mapping[str, Any]) -> np.ndarray | None:
        return self.point_of(params)


class OptunaStrategy:
    """One of Optuna's samplers, by name (:data:`tuner.strategies.catalog.OPTUNA`), searching a domain."""

    def __init__(self, sampler: str, domain: Domain, rng: np.random.Generator):
        self.name = sampler
        self.parameters = IndexParameters(domain)
        seed = int(rng.integers(2**31))
        proposer = OptunaProposer(sampler, sampler_maker(sampler), self.parameters, seed, sampler)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.study = optuna.create_study(sampler=DomainSampler(self.parameters, proposer, seed, sampler),
                                         direction="minimize")
        self.pending: dict[int, Trial] = {}
        self.told: set[int] = set()

    def ask(self) -> int:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trial = self.study.ask(self.parameters.distributions())
        point = self.parameters.point_of(trial.params)
        assert point is not None, trial.params
        candidate = int(self.parameters.domain.candidates_of(point[None, :].astype(np.int64))[0])
        self.pending[candidate] = trial
        return candidate

    def tell(self, candidate: int, value: float) -> None:
        if candidate in self.told:
            return
        self.told.add(candidate)
        value = float(value) if not math.isnan(value) else math.inf
        trial = self.pending.pop(candidate, None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if trial is not None:
                self.study.tell(trial, value)
            else:
                self.study.add_trial(optuna.trial.create_trial(
                    params=self.parameters.params_of(candidate), distributions=self.parameters.distributions(),
                    value=value, state=TrialState.COMPLETE))


def optuna_factory(sampler: str) -> StrategyFactory:
    """The strategy factory of an Optuna sampler (picklable, for the harness' worker processes)."""
    sampler_maker(sampler)  # a missing package is told now, in one line
    return partial(OptunaStrategy, sampler)
