"""The objectives a search pursues: ``time``, ``energy``, ``edp`` (their product), or ``[time, energy]`` at once.

A single objective drives the strategy: it is what each trial reports to the Optuna study (maximised, as
:mod:`tuner.search.energy_values` computes it) and what "best" means in the summary and the report. Two objectives make
a multi-objective Optuna study (two values per trial, both maximised): its strategy is NSGA-II unless another
one that handles several objectives is named, every evaluation is recorded with both, and the summary and the
report name the Pareto front's fastest point, its most efficient one and its knee.

"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from tuner.energy.front import ENERGY_COLUMN, TIME_COLUMN
from tuner.optuna_attrs import OBJECTIVE_ATTR

TIME, ENERGY, EDP = "time", "energy", "edp"
NAMES: tuple[str, ...] = (TIME, ENERGY, EDP)
PAIR: tuple[str, str] = (TIME, ENERGY)
Objective = tuple[str, ...]
"""One name of NAMES, or PAIR."""
DEFAULT: Objective = (TIME,)
PAIR_SAMPLER = "nsga2"
"""The strategy of a two-objective search unless one is named."""
PAIR_SAMPLERS: tuple[str, ...] = ("nsga2", "tpe", "qmc", "random", "grid", "bruteforce")
"""The named strategies a two-objective search can use: Optuna's multi-objective samplers, and ours that do not
look at values."""
ALLOWED = f"{', '.join(NAMES)} or [{', '.join(PAIR)}]"
MEANING = {
    TIME: "the shortest median time (the highest GFLOP/s)",
    ENERGY: "the least energy per launch (the highest GFLOP/J, i.e. GFLOP/s per watt)",
    EDP: "the least energy-delay product (energy per launch × median time)",
}


def metric_names(objective: Objective, unit: str = "GFLOP/s") -> list[str]:
    """What each value a trial reports is, with its unit (an Optuna study's metric names): ``unit`` is the speed's,
    GFLOP/s, or GB/s for kernels without arithmetic."""
    work = unit.split("/")[0]
    names = {TIME: f"speed [{unit}]", ENERGY: f"efficiency [{work}/J]", EDP: f"speed × efficiency [{work}²/(s·J)]"}
    return [names[name] for name in objective]


class ObjectiveError(ValueError):
    """Not an objective; the message says what is allowed."""


def parse_objective(value: Any) -> Objective:
    """An objective from an experiment file, the command line (``time,energy``) or Python; ObjectiveError
    otherwise."""
    names: Sequence[Any]
    if isinstance(value, str):
        names = [part.strip() for part in value.split(",")]
    elif isinstance(value, list | tuple):
        names = list(value)
    else:
        raise ObjectiveError(f"expected {ALLOWED}, found {value!r}")
    for name in names:
        if name not in NAMES:
            raise ObjectiveError(f"unknown objective {name!r}; expected {ALLOWED}")
    if len(names) == 1:
        return (str(names[0]),)
    if len(names) == 2 and set(names) == set(PAIR):
        return PAIR
    raise ObjectiveError(f"two objectives are searched together only as [{', '.join(PAIR)}] (the Pareto front of "
                         f"speed and energy), not {list(names)}; expected {ALLOWED}")


def needs_energy(objective: Objective) -> bool:
    return any(name != TIME for name in objective)


def is_pair(objective: Objective) -> bool:
    return len(objective) == 2


def label(objective: Objective) -> str:
    """``time``, ``energy``, ``edp`` or ``time+energy``."""
    return "+".join(objective)


def recorded_objective(metadata: Mapping[str, Any] | Any) -> Objective:
    """The objective of a run folder's last run (its metadata), ``time`` for runs recorded before objectives."""
    runs = metadata.get("runs") if isinstance(metadata, Mapping) else None
    last = runs[-1] if isinstance(runs, list) and runs and isinstance(runs[-1], Mapping) else {}
    try:
        return parse_objective(last.get("objective", list(DEFAULT)))
    except ObjectiveError:
        return DEFAULT




def study_objective(user_attrs: Mapping[str, Any]) -> Objective:
    """The objective a study was created for, from its user attributes."""
    try:
        return parse_objective(user_attrs.get(OBJECTIVE_ATTR, list(DEFAULT)))
    except ObjectiveError:
        return DEFAULT


def objective_score(df: pd.DataFrame, name: str, speed: pd.Series) -> pd.Series:
    """Each row's score under one objective, higher better (NaN where it has none); ``speed``: the rows'
    performance (GFLOP/s), the score of ``time``."""
    if name == TIME:
        return speed
    if ENERGY_COLUMN not in df:
        return pd.Series(float("nan"), index=df.index)
    joules = pd.to_numeric(df[ENERGY_COLUMN], errors="coerce").where(lambda j: j > 0)
    if name == ENERGY:
        return 1.0 / joules
    assert name == EDP, name
    seconds = pd.to_numeric(df[TIME_COLUMN], errors="coerce").where(lambda t: t > 0) * 1e-3
    return 1.0 / (joules * seconds)
