"""The objectives a search pursues, one :class:`Objective` record each (``time``, ``energy``, ``edp``: their
product, ``sustained``: the time per launch back to back, from the energy window), alone or as the pair
``[time, energy]``.

A single objective drives the strategy: its value is what each trial reports to the Optuna study (maximised) and its
score over a results table what "best" means in the summary and the report. Two objectives make a multi-objective
Optuna study (two values per trial, both maximised): its strategy is NSGA-II unless another one that handles several
objectives is named, and the summary and the report name the Pareto front's fastest point, its most efficient one
and its knee. A new objective is one record in ``OBJECTIVES``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from tuner.config import Config
from tuner.energy.front import ENERGY_COLUMN, TIME_COLUMN
from tuner.errors import did_you_mean
from tuner.kernels.model import Cost
from tuner.measure.measurement import Measurement, Status
from tuner.optuna_attrs import OBJECTIVE_ATTR
from tuner.results.analytics import config_cost

SUSTAINED_COLUMN = "energy_time_ms"
"""The energy window's time per launch (:mod:`tuner.energy.columns`)."""


def median_seconds(measurement: Measurement) -> float | None:
    """The median time of a timed ``ok`` measurement, in seconds."""
    if measurement.status is not Status.OK or measurement.timing is None or measurement.timing.median_ms <= 0:
        return None
    return measurement.timing.median_ms * 1e-3


def performance_of(work: Cost | None, measurement: Measurement) -> float | None:
    """What the search maximizes, from the configuration's cost: GFLOP/s at the median time for a kernel that
    computes, the effective bandwidth (compulsory bytes over the median time, GB/s) for one that only moves data;
    None unless ok (or where the cost model is not defined)."""
    seconds = median_seconds(measurement)
    if seconds is None or work is None:
        return None
    return (work.flops if work.flops else work.compulsory_bytes) / seconds / 1e9


def objective_of(config: Config, measurement: Measurement) -> float | None:
    """:func:`performance_of` a configuration, its cost derived here."""
    if median_seconds(measurement) is None:
        return None
    return performance_of(config_cost(config), measurement)


def per_joule(config: Config, measurement: Measurement) -> float | None:
    """GFLOP (or GB without arithmetic) per joule of one launch; None unless ok with its energy measured."""
    energy = measurement.energy
    if measurement.status is not Status.OK or energy is None or energy.joules <= 0:
        return None
    work = config_cost(config)
    if work is None:
        return None
    return (work.flops if work.flops else work.compulsory_bytes) / energy.joules / 1e9


def sustained_speed(config: Config, measurement: Measurement) -> float | None:
    """GFLOP/s (GB/s without arithmetic) at the energy window's time per launch: back to back, hot, at the clocks
    the board holds under sustained load; None unless ok with its window measured."""
    energy = measurement.energy
    if measurement.status is not Status.OK or energy is None or energy.launches <= 0 or energy.window_s <= 0:
        return None
    work = config_cost(config)
    if work is None:
        return None
    return (work.flops if work.flops else work.compulsory_bytes) / (energy.window_s / energy.launches) / 1e9


def _per_sustained_time(df: pd.DataFrame) -> pd.Series:
    if SUSTAINED_COLUMN not in df:
        return pd.Series(float("nan"), index=df.index)
    return 1.0 / pd.to_numeric(df[SUSTAINED_COLUMN], errors="coerce").where(lambda t: t > 0)


def _product(config: Config, measurement: Measurement) -> float | None:
    speed, efficiency = objective_of(config, measurement), per_joule(config, measurement)
    return None if speed is None or efficiency is None else speed * efficiency


def _joules(df: pd.DataFrame) -> pd.Series:
    if ENERGY_COLUMN not in df:
        return pd.Series(float("nan"), index=df.index)
    return pd.to_numeric(df[ENERGY_COLUMN], errors="coerce").where(lambda j: j > 0)


def _energy_delay(df: pd.DataFrame) -> pd.Series:
    joules = _joules(df)
    if ENERGY_COLUMN not in df:
        return joules
    seconds = pd.to_numeric(df[TIME_COLUMN], errors="coerce").where(lambda t: t > 0) * 1e-3
    return 1.0 / (joules * seconds)


@dataclass(frozen=True)
class Objective:
    """One objective: its ``name`` (as files and options give it), its ``meaning`` (what best is), the ``metric``
    its trials report for a speed's unit (GFLOP/s, or GB/s), their ``value`` from a measurement and the ``score``
    of a results table's rows given their speed (NaN where a row has none). ``direction``: Optuna's, for both;
    ``needs_energy``: whether the measurements need their energy."""

    name: str
    meaning: str
    metric: Callable[[str], str]
    value: Callable[[Config, Measurement], float | None]
    score: Callable[[pd.DataFrame, pd.Series], pd.Series]
    needs_energy: bool
    direction: str = "maximize"


OBJECTIVES: dict[str, Objective] = {objective.name: objective for objective in (
    Objective("time", "the shortest median time (the highest GFLOP/s)", lambda unit: f"speed [{unit}]",
              objective_of, lambda df, speed: speed, needs_energy=False),
    Objective("energy", "the least energy per launch (the highest GFLOP/J, i.e. GFLOP/s per watt)",
              lambda unit: f"efficiency [{unit.split('/')[0]}/J]", per_joule, lambda df, speed: 1.0 / _joules(df),
              needs_energy=True),
    Objective("edp", "the least energy-delay product (energy per launch × median time)",
              lambda unit: f"speed × efficiency [{unit.split('/')[0]}²/(s·J)]", _product,
              lambda df, speed: _energy_delay(df), needs_energy=True),
    Objective("sustained", "the shortest time per launch back to back (hot, at the clocks sustained load settles "
              "to)", lambda unit: f"sustained speed [{unit}]", sustained_speed,
              lambda df, speed: _per_sustained_time(df), needs_energy=True),
)}
TIME, ENERGY, EDP, SUSTAINED = OBJECTIVES
NAMES: tuple[str, ...] = tuple(OBJECTIVES)
PAIR: tuple[str, str] = (TIME, ENERGY)
Objectives = tuple[str, ...]
"""What a search pursues: one name of NAMES, or PAIR."""
DEFAULT: Objectives = (TIME,)
PAIR_SAMPLER = "nsga2"
"""The strategy of a two-objective search unless one is named."""
PAIR_SAMPLERS: tuple[str, ...] = ("nsga2", "tpe", "qmc", "random", "grid", "bruteforce")
"""The named strategies a two-objective search can use: Optuna's multi-objective samplers, and ours that do not
look at values."""
ALLOWED = f"{', '.join(NAMES)} or [{', '.join(PAIR)}]"


def metric_names(objectives: Objectives, unit: str = "GFLOP/s") -> list[str]:
    """What each value a trial reports is, with its unit (an Optuna study's metric names): ``unit`` is the speed's,
    GFLOP/s, or GB/s for kernels without arithmetic."""
    return [OBJECTIVES[name].metric(unit) for name in objectives]


class ObjectiveError(ValueError):
    """Not an objective; the message says what is allowed."""


def parse_objective(value: Any) -> Objectives:
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
            raise ObjectiveError(f"unknown objective {name!r}{did_you_mean(name, OBJECTIVES)}; expected {ALLOWED}")
    if len(names) == 1:
        return (str(names[0]),)
    if len(names) == 2 and set(names) == set(PAIR):
        return PAIR
    raise ObjectiveError(f"two objectives are searched together only as [{', '.join(PAIR)}] (the Pareto front of "
                         f"speed and energy), not {list(names)}; expected {ALLOWED}")


def needs_energy(objectives: Objectives) -> bool:
    return any(OBJECTIVES[name].needs_energy for name in objectives)


def is_pair(objective: Objectives) -> bool:
    return len(objective) == 2


def label(objective: Objectives) -> str:
    """``time``, ``energy``, ``edp`` or ``time+energy``."""
    return "+".join(objective)


def recorded_objective(metadata: Mapping[str, Any] | Any) -> Objectives:
    """The objective of a run folder's last run (its metadata), ``time`` for runs recorded before objectives."""
    runs = metadata.get("runs") if isinstance(metadata, Mapping) else None
    last = runs[-1] if isinstance(runs, list) and runs and isinstance(runs[-1], Mapping) else {}
    try:
        return parse_objective(last.get("objective", list(DEFAULT)))
    except ObjectiveError:
        return DEFAULT




def study_objective(user_attrs: Mapping[str, Any]) -> Objectives:
    """The objective a study was created for, from its user attributes."""
    try:
        return parse_objective(user_attrs.get(OBJECTIVE_ATTR, list(DEFAULT)))
    except ObjectiveError:
        return DEFAULT
