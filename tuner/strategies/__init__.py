"""Search strategies: one protocol (:mod:`tuner.strategies.protocol`), the domain they search
(:mod:`tuner.strategies.domain`), our own strategies, and Optuna's samplers by name."""

from tuner.strategies.annealing import SimulatedAnnealing
from tuner.strategies.domain import Domain
from tuner.strategies.genetic import GeneticAlgorithm
from tuner.strategies.local_search import IteratedLocalSearch
from tuner.strategies.protocol import Strategy, StrategyFactory
from tuner.strategies.uniform import RandomSearch, Sweep

__all__ = ["BayesianSearch", "DualAnnealing", "Domain", "GeneticAlgorithm", "IteratedLocalSearch", "RandomSearch",
           "SimulatedAnnealing", "Strategy", "StrategyFactory", "Sweep"]


def __getattr__(name: str) -> object:
    """BayesianSearch and DualAnnealing, imported when first named: they bring in SciPy, which the parser and the
    command line need not load."""
    if name == "BayesianSearch":
        from tuner.strategies.bayesian import BayesianSearch

        return BayesianSearch
    if name == "DualAnnealing":
        from tuner.strategies.dual_annealing import DualAnnealing

        return DualAnnealing
    raise AttributeError(f"module 'tuner.strategies' has no attribute '{name}'")
