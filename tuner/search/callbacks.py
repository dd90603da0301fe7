"""What a run calls after each evaluation: ``f(evaluation)``, or Optuna's ``f(study, trial)``.

* ``f(evaluation)`` gets a :class:`tuner.search.study.Evaluation`: the study's name, the trial number, the
  configuration, the :class:`~tuner.measure.measurement.Measurement` (status, timing, energy), the speed, the
  results row's record, the study's best so far and its budget.
* ``f(study, trial)``, as ``study.optimize(callbacks=...)`` calls Optuna's callbacks, gets the ``optuna.Study`` and
  the evaluation's completed ``FrozenTrial``: ``trial.values`` are what the study was told (GFLOP/s, 0 for a
  failure; one value per objective), ``trial.params`` the configuration's parameter values, and
  ``trial.user_attrs["record"]`` the whole measurement, as the results row holds it.

Which one a function is, is read from its signature: two required positional parameters make it Optuna's kind.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import optuna
from optuna.trial import Trial

from tuner.errors import TunerError

Callback = Callable[..., Any]
"""``f(evaluation)`` or ``f(study, trial)`` (see the module text)."""
Called = Callable[[Any, optuna.Study, Trial], None]
"""A callback as the search loop calls it: with the evaluation, the study and the trial just told."""


def adapted(callback: Callback) -> Called:
    """The callback as the search loop calls it; TunerError for a callable that takes neither form."""
    if not callable(callback):
        raise TunerError(f"a callback must be a function, not {callback!r}")
    kind = _takes(callback)
    if kind == 1:
        return lambda evaluation, study, trial: callback(evaluation)
    if kind == 2:
        return lambda evaluation, study, trial: callback(study, study._storage.get_trial(trial._trial_id))
    raise TunerError(f"the callback {getattr(callback, '__name__', repr(callback))} takes neither one argument "
                     f"(a tuner.Evaluation) nor two (an optuna.Study and a FrozenTrial, as Optuna's callbacks do)")


def _takes(callback: Callback) -> int:
    """1 or 2: how many positional arguments the callback wants; 0 where it takes neither form."""
    try:
        parameters = list(inspect.signature(callback).parameters.values())
    except (TypeError, ValueError):  # a callable whose signature cannot be read: the evaluation
        return 1
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = sum(1 for p in positional if p.default is p.empty)
    keyword_only = [p for p in parameters if p.kind == p.KEYWORD_ONLY and p.default is p.empty]
    spread = any(p.kind == p.VAR_POSITIONAL for p in parameters)
    if keyword_only or required > 2:
        return 0
    if required == 2:
        return 2
    return 1 if positional or spread else 0
