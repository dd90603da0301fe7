"""What a trial reports to its Optuna study: one value per objective, each maximised (each objective's ``value``,
:mod:`tuner.results.objectives`). A failed evaluation reports 0.0 for each, as does an ``ok`` one whose energy the
objectives need but which was not measured (:func:`missing_energy` tells those apart)."""

from __future__ import annotations

from tuner.config import Config
from tuner.measure.measurement import Measurement, Status
from tuner.results.objectives import OBJECTIVES, Objectives, needs_energy


def reported(objectives: Objectives, config: Config, measurement: Measurement) -> list[float]:
    """The values a trial reports, one per objective: 0.0 where there is none."""
    return [OBJECTIVES[name].value(config, measurement) or 0.0 for name in objectives]


def missing_energy(objectives: Objectives, measurement: Measurement) -> bool:
    """An ok evaluation whose energy the objectives need and that has none."""
    return measurement.status is Status.OK and measurement.energy is None and needs_energy(objectives)
