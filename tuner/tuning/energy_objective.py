"""A run's objective: the experiment's ``search.objective`` or the one the caller names, the strategy it can use,
and the energy measurements it needs."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from typing import TypeVar

from tuner.errors import Naming, TunerError
from tuner.experiment.schema import Experiment, pair_refusal
from tuner.results.objectives import (
    PAIR_SAMPLER,
    PAIR_SAMPLERS,
    ObjectiveError,
    Objectives,
    is_pair,
    needs_energy,
    parse_objective,
)

Choice = TypeVar("Choice")


def resolve_objective(experiment: Experiment, objective: str | Sequence[str] | None, strategy: Choice | None,
                      quiet: bool, name: Naming) -> tuple[Experiment, Choice | str | None, Objectives]:
    """The experiment as the run searches it (its objective set, energy measured where the objective needs it),
    the strategy (the caller's, or NSGA-II where the caller asks for time and energy of an experiment whose
    strategy was chosen for one objective) and the objective. TunerError for an objective that is none, or a
    named strategy that cannot search two objectives; ``name`` says how the caller names a setting (``--strategy``
    on the command line, ``strategy`` in Python)."""
    try:
        goal = parse_objective(objective if objective is not None else experiment.search.objective)
    except ObjectiveError as exc:
        raise TunerError(f"{name('objective')}: {exc}") from None
    if is_pair(goal):
        chosen = strategy if strategy is not None else experiment.search.strategy
        if isinstance(chosen, str) and chosen not in PAIR_SAMPLERS:
            if strategy is not None or is_pair(parse_objective(experiment.search.objective)):
                raise TunerError(f"{name('strategy')}: {pair_refusal(chosen)}")
            if not quiet:
                print(f"note: the experiment's strategy '{chosen}' searches for one value; time and energy are "
                      f"searched with {PAIR_SAMPLER} (name another with {name('strategy')}: "
                      f"{', '.join(PAIR_SAMPLERS)})",
                      file=sys.stderr)
            strategy = PAIR_SAMPLER  # type: ignore[assignment]
    measure = dataclasses.replace(experiment.measure, energy=True) if needs_energy(goal) else experiment.measure
    searched = dataclasses.replace(experiment, search=dataclasses.replace(experiment.search, objective=goal),
                                   measure=measure)
    return searched, strategy, goal
