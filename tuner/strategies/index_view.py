"""A study as Optuna's samplers see it: every trial's parameters in the index view, whatever the storage holds.

The storage holds each trial's own parameters by value (:mod:`tuner.search.study_space`: the family and that family's
parameters, a tile width of 32 as 32), so that Optuna's own tools show the real study. A sampler models the
index view instead: every axis in every trial, a number as the position of its value in the listed values, so
that TPE, CMA-ES, GP and QMC see ordered integers over one fixed search space. :func:`index_view` gives a sampler
the study with its trials translated on the way out of the storage; whatever the sampler writes (its system
attributes) goes to the storage as it is.
"""

from __future__ import annotations

import copy
from collections.abc import Container, Mapping
from typing import Any, Protocol

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
from optuna.storages import BaseStorage
from optuna.trial import FrozenTrial, TrialState


class Views(Protocol):
    """What the translation needs of a study's space."""

    def point_of(self, params: Mapping[str, Any]) -> np.ndarray | None:
        """The value indices stored parameters stand for (None where they name no listed configuration)."""
        ...

    def index_params(self, point: np.ndarray) -> dict[str, Any]: ...

    def index_distributions(self) -> dict[str, BaseDistribution]: ...


class Translation:
    """Stored trials to index-view trials, remembering the parameters of every trial that holds a whole
    configuration (a trial's parameters are set once)."""

    def __init__(self, views: Views):
        self.views = views
        self.distributions = views.index_distributions()
        self._known: dict[int, dict[str, Any]] = {}

    def __call__(self, trial: FrozenTrial) -> FrozenTrial:
        params = self._known.get(trial._trial_id)
        if params is None:
            point = self.views.point_of(trial.params) if trial.params else None
            if point is None:  # not sampled yet (or no listed configuration): no parameters to show
                params = {}
            else:
                params = self._known[trial._trial_id] = self.views.index_params(point)
        seen = copy.copy(trial)
        seen.params = dict(params)
        seen.distributions = {name: self.distributions[name] for name in params}
        return seen


class IndexStorage:
    """A storage whose trials come out translated; everything else is the storage's."""

    def __init__(self, storage: BaseStorage, translate: Translation):
        self._storage, self._translate = storage, translate

    def get_all_trials(self, study_id: int, deepcopy: bool = True,
                       states: Container[TrialState] | None = None) -> list[FrozenTrial]:
        trials = [self._translate(t) for t in self._storage.get_all_trials(study_id, deepcopy=False, states=states)]
        return copy.deepcopy(trials) if deepcopy else trials

    def get_trial(self, trial_id: int) -> FrozenTrial:
        return self._translate(self._storage.get_trial(trial_id))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._storage, name)


def index_view(study: optuna.Study, translate: Translation) -> optuna.Study:
    """The study as a sampler sees it (see the module text)."""
    view = copy.copy(study)  # Optuna's Study copies without its per-thread cache of trials
    view._storage = IndexStorage(study._storage, translate)  # type: ignore[assignment]
    return view
