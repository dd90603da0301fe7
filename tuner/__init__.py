"""tuner: autotuning performance experiments for tiled matrix multiplication on CUDA GPUs (and the CPU).

Public API::

    import tuner
    experiment = tuner.load_experiment("experiments/fermi_like.yaml")
    result = tuner.run(experiment, backend="replay", replay="experiments/data/fermi_like_h100")
    result.df      # every evaluation, one row each
    result.best    # the best configuration per problem

    ``strategy=`` takes a strategy's name, an Optuna sampler or a Strategy factory (``tuner.Strategy``, over a
    ``tuner.Domain``); ``storage=`` a URL or an Optuna storage; ``callbacks=`` functions given a
    ``tuner.Evaluation`` after each measurement. ``tuner.Experiment(name, problems, kernels=(tuner.KernelSpec(...),))``
    builds an experiment in Python, validated as a file is. ``tuner.tune(source=..., parameters=...,
    restrictions=[...], problem=...)`` tunes a kernel given as source text, as ``kernel_tuner.tune_kernel`` does.

The names are imported when first used, so that a measuring process importing one module of the package does
not pay for the whole of it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tuner.backends.abilities import Ability
    from tuner.backends.protocol import Backend, BackendBase
    from tuner.config import Config, Problem
    from tuner.experiment.schema import Experiment, load_experiment
    from tuner.measure.measurement import Measurement, Status
    from tuner.search.study import Evaluation
    from tuner.settings import MeasureSettings
    from tuner.space.entry_space import KernelSpec
    from tuner.strategies import Domain, Strategy
    from tuner.table.call import load_table
    from tuner.tuning.result_display import RunResult
    from tuner.tuning.run import run
    from tuner.tuning.tune_source import tune

_EXPORTS = {
    "Ability": "tuner.backends.abilities",
    "Backend": "tuner.backends.protocol",
    "BackendBase": "tuner.backends.protocol",
    "Config": "tuner.config",
    "Domain": "tuner.strategies",
    "Evaluation": "tuner.search.study",
    "KernelSpec": "tuner.space.entry_space",
    "Strategy": "tuner.strategies",
    "Experiment": "tuner.experiment.schema",
    "Measurement": "tuner.measure.measurement",
    "MeasureSettings": "tuner.settings",
    "Problem": "tuner.config",
    "RunResult": "tuner.tuning.result_display",
    "Status": "tuner.measure.measurement",
    "load_experiment": "tuner.experiment.schema",
    "load_table": "tuner.table.call",
    "run": "tuner.tuning.run",
    "tune": "tuner.tuning.tune_source",
}
__all__ = ["Ability", "Backend", "BackendBase", "Config", "Domain", "Evaluation", "Experiment", "KernelSpec",
           "MeasureSettings", "Measurement", "Problem", "RunResult", "Status", "Strategy", "load_experiment",
           "load_table", "run", "tune"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'tuner' has no attribute '{name}'")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
