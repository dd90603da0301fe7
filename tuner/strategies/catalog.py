"""The strategies by name: what ``search.strategy`` and ``--strategy`` take, each in one line.

This module imports nothing heavy, so that the experiment parser and the command line can list the names.
:func:`strategy_factory` gives our own strategies' factories; Optuna's samplers are made by
:mod:`tuner.strategies.optuna_samplers`.
"""

from __future__ import annotations

import importlib

from tuner.strategies.protocol import StrategyFactory

DEFAULT = "bo"

OURS: dict[str, tuple[str, str]] = {
    "bo": ("tuner.strategies.bayesian:BayesianSearch",
           "Bayesian optimisation: a Gaussian process on the value indices picks among the best configurations' "
           "neighbours and farther candidates by a widening confidence bound; every third proposal an iterated "
           "local search's"),
    "ils": ("tuner.strategies.local_search:IteratedLocalSearch",
            "iterated local search: first-improvement descent over one-step neighbours, kicks from the best local "
            "optimum that reach farther while they fail"),
    "annealing": ("tuner.strategies.annealing:SimulatedAnnealing",
                  "simulated annealing over the neighbourhood, reheated from the best"),
    "dual_annealing": ("tuner.strategies.dual_annealing:DualAnnealing",
                       "dual annealing: heavy-tailed jumps across the space, local search from every new best"),
    "genetic": ("tuner.strategies.genetic:GeneticAlgorithm",
                "steady-state genetic algorithm: tournaments, uniform crossover, step mutations"),
    "random": ("tuner.strategies.uniform:RandomSearch", "uniformly random valid configurations"),
    "grid": ("tuner.strategies.uniform:Sweep", "every valid configuration in the experiment's order"),
    "bruteforce": ("tuner.strategies.uniform:BruteForce", "every valid configuration once, in random order"),
}
OPTUNA: dict[str, str] = {
    "tpe": "Optuna's TPESampler (multivariate, constant liar)",
    "qmc": "Optuna's QMCSampler (scrambled Sobol points)",
    "cmaes": "Optuna's CmaEsSampler (CMA-ES over the ordered parameters)",
    "gp": "Optuna's GPSampler (Gaussian-process Bayesian optimisation; needs PyTorch)",
    "nsga2": "Optuna's NSGAIISampler (genetic algorithm)",
}
NAMES: tuple[str, ...] = (*OURS, *OPTUNA)


def strategy_factory(name: str) -> StrategyFactory:
    """The factory of one of our strategies, by name (KeyError for another name)."""
    module, _, attribute = OURS[name][0].partition(":")
    factory: StrategyFactory = getattr(importlib.import_module(module), attribute)
    return factory
