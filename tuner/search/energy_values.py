"""What a trial reports to its Optuna study under each objective: one value per objective, each maximised.

* ``time``: the speed, GFLOP/s at the median time (GB/s of compulsory traffic for a kernel without arithmetic),
  as :func:`tuner.results.objective.objective_of` has always told it.
* ``energy``: the work per joule, GFLOP/J (the same as GFLOP/s per watt; GB/J without arithmetic): on one
  problem the most of it is the least energy per launch.
* ``edp``: the product of the two, whose largest value on one problem is the least energy-delay product.

A failed evaluation reports 0.0 for each, as it always did; so does an ``ok`` one whose energy the objective
needs but which was not measured (:func:`missing_energy` tells those apart).
"""

from __future__ import annotations

from tuner.config import Config
from tuner.measure.measurement import Measurement, Status
from tuner.results.analytics import config_cost
from tuner.results.objective import objective_of
from tuner.results.objectives import EDP, ENERGY, TIME, Objective


def per_joule(config: Config, measurement: Measurement) -> float | None:
    """GFLOP (or GB without arithmetic) per joule of one launch; None unless ok with its energy measured."""
    energy = measurement.energy
    if measurement.status is not Status.OK or energy is None or energy.joules <= 0:
        return None
    work = config_cost(config)
    if work is None:
        return None
    return (work.flops if work.flops else work.compulsory_bytes) / energy.joules / 1e9


def value_of(name: str, config: Config, measurement: Measurement) -> float | None:
    """One objective's value (maximised); None where it cannot be given."""
    if name == TIME:
        return objective_of(config, measurement)
    efficiency = per_joule(config, measurement)
    if name == ENERGY or efficiency is None:
        return efficiency
    assert name == EDP, name
    speed = objective_of(config, measurement)
    return None if speed is None else speed * efficiency


def reported(objective: Objective, config: Config, measurement: Measurement) -> list[float]:
    """The values a trial reports, one per objective: 0.0 where there is none."""
    return [value_of(name, config, measurement) or 0.0 for name in objective]


def missing_energy(objective: Objective, measurement: Measurement) -> bool:
    """An ok evaluation whose energy the objective needs and that has none."""
    return measurement.status is Status.OK and measurement.energy is None and any(n != TIME for n in objective)
