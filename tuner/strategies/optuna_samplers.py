"""Optuna's samplers by name, each made afresh from a seed.

A study makes its sampler again for every trial, seeded by the trial (:mod:`tuner.strategies.sampler`), so that a
proposal depends on the storage and the trial alone, never on what the process did before. QMC is the exception
in part: its points are numbered in the storage and scrambled by the study's seed, which must stay the same for
the whole study; only its fallback for categorical parameters is seeded by the trial.
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Callable

import optuna

from tuner.errors import Naming, TunerError, option_name
from tuner.strategies.catalog import OPTUNA

SamplerMaker = Callable[[int, int], optuna.samplers.BaseSampler]
"""Makes a sampler from (the study's seed, the trial's seed)."""

_NEEDS = {"cmaes": ("cmaes", "pip install cmaes"), "gp": ("torch", 'pip install -e ".[gp]" in the checkout')}


_MAKERS: dict[str, SamplerMaker] = {
    "tpe": lambda study, trial: optuna.samplers.TPESampler(seed=trial, multivariate=True, constant_liar=True,
                                                           warn_independent_sampling=False),
    "qmc": lambda study, trial: optuna.samplers.QMCSampler(
        seed=study, scramble=True, independent_sampler=optuna.samplers.RandomSampler(seed=trial),
        warn_independent_sampling=False),
    "cmaes": lambda study, trial: optuna.samplers.CmaEsSampler(seed=trial, warn_independent_sampling=False),
    "gp": lambda study, trial: optuna.samplers.GPSampler(seed=trial, warn_independent_sampling=False),
    "nsga2": lambda study, trial: optuna.samplers.NSGAIISampler(seed=trial),
}
assert set(_MAKERS) == set(OPTUNA)


def sampler_maker(name: str, called: Naming = option_name) -> SamplerMaker:
    """How to make the Optuna sampler called ``name``; TunerError when a package it needs is missing (naming the
    strategy's setting as ``called`` does)."""
    if name in _NEEDS and importlib.util.find_spec(_NEEDS[name][0]) is None:
        module, install = _NEEDS[name]
        raise TunerError(f"the '{name}' sampler needs the Python package '{module}', which is not installed "
                         f"({install}); or choose another strategy with {called('strategy')}")
    make = _MAKERS[name]

    def quietly(study: int, trial: int) -> optuna.samplers.BaseSampler:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            warnings.simplefilter("ignore", FutureWarning)  # warn_independent_sampling, deprecated in Optuna 4.9
            return make(study, trial)

    return quietly
