"""A steady-state genetic algorithm over value indices (as Kernel Tuner's ``genetic_algorithm`` and the
genetic algorithm of Schoonhoven et al. 2022, evaluation by evaluation rather than generation by generation).

The population is the ``population`` best candidates told so far. A child takes each parameter from one of two
parents (uniform crossover), each parent the better of ``tournament`` members drawn at random; each parameter
then mutates with probability ``mutation``: an ordered one a step up or down, a categorical one to another value.
The child is that combination where it is a free candidate, else its nearest free neighbour; where the
combination and all its neighbours are taken, another child is bred, and after a few a random candidate is drawn.
Until the population is full, candidates are drawn at random.
"""

from __future__ import annotations

import bisect

import numpy as np

from tuner.strategies.base import DomainSearch
from tuner.strategies.domain import Domain

BREEDING_TRIES = 4
"""Children bred before giving up on one near the population (every one and its neighbours taken) for a random
candidate."""


class GeneticAlgorithm(DomainSearch):
    name = "genetic"

    def __init__(self, domain: Domain, rng: np.random.Generator, population: int = 20, mutation: float = 0.1,
                 tournament: int = 2):
        super().__init__(domain, rng)
        self.size = population
        self.mutation = mutation
        self.tournament = tournament
        self.ranked: list[tuple[float, int]] = []
        """(value, candidate) of the population, best first."""

    def propose(self) -> int:
        if len(self.ranked) < self.size:
            return -1
        for _ in range(BREEDING_TRIES):
            first, second = self._parent(), self._parent()
            take_first = self.rng.random(self.domain.axes) < 0.5
            child = self._mutate(np.where(take_first, first, second))
            candidate = self.nearest_free(child, scan=False)
            if candidate >= 0:
                return candidate
        return -1

    def _parent(self) -> np.ndarray:
        drawn = self.rng.integers(len(self.ranked), size=self.tournament)
        return self.domain.index_row(self.ranked[int(drawn.min())][1])

    def _mutate(self, child: np.ndarray) -> np.ndarray:
        moving = (self.rng.random(self.domain.axes) < self.mutation) & (self.domain.radices > 1)
        return self.domain.steps(child[None, :], moving[None, :], self.rng)[0]

    def observe(self, candidate: int, value: float) -> None:
        if len(self.ranked) < self.size or value < self.ranked[-1][0]:
            bisect.insort(self.ranked, (value, candidate))
            del self.ranked[self.size:]
