"""A trial made in one write: its parameters, claim and the sampler's notes stored together.

Optuna's ``Study.ask`` creates a trial, then stores each parameter, and a sampler's notes about the trial, in a
write of its own: with a dozen parameters, a dozen transactions per evaluation. A process that alone uses its
storage knows the number the next trial gets, so it can propose the trial first, against a stand-in
(:class:`TrialInMaking`, number known, no id yet), and create it with everything at once
(``create_new_trial`` with a template). While the sampler proposes, the study's storage is
:class:`MakingStorage`: what the sampler writes about the trial in making is kept for that one write, and
everything else passes through.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import optuna
from optuna.storages import BaseStorage
from optuna.trial import FrozenTrial, TrialState

IN_MAKING = -1
"""The trial id of a trial being made (no stored trial has a negative id)."""


def trial_in_making(number: int) -> FrozenTrial:
    """A RUNNING trial with the number the next stored trial of the study gets, and no parameters yet."""
    return FrozenTrial(number=number, state=TrialState.RUNNING, value=None, datetime_start=datetime.now(),
                       datetime_complete=None, params={}, distributions={}, user_attrs={}, system_attrs={},
                       intermediate_values={}, trial_id=IN_MAKING)


class MakingStorage:
    """The study's storage while a trial is being made: writes about that trial go into it."""

    def __init__(self, storage: BaseStorage, made: FrozenTrial):
        self._storage, self._made = storage, made

    def set_trial_system_attr(self, trial_id: int, key: str, value: Any) -> None:
        if trial_id == IN_MAKING:
            self._made.system_attrs[key] = value
        else:
            self._storage.set_trial_system_attr(trial_id, key, value)

    def set_trial_user_attr(self, trial_id: int, key: str, value: Any) -> None:
        if trial_id == IN_MAKING:
            self._made.user_attrs[key] = value
        else:
            self._storage.set_trial_user_attr(trial_id, key, value)

    def get_trial(self, trial_id: int) -> FrozenTrial:
        return self._made if trial_id == IN_MAKING else self._storage.get_trial(trial_id)

    def __getattr__(self, name: str) -> Any:  # everything else is the storage's
        return getattr(self._storage, name)


@contextlib.contextmanager
def making(study: optuna.Study, made: FrozenTrial) -> Iterator[None]:
    """The study writes about ``made`` into it while the block runs."""
    storage = study._storage
    study._storage = MakingStorage(storage, made)  # type: ignore[assignment]
    try:
        yield
    finally:
        study._storage = storage
