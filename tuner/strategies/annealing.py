"""Simulated annealing over the domain's neighbourhood (Kirkpatrick, Gelatt, Vecchi 1983; Kernel Tuner's
``simulated_annealing`` is one).

From the current candidate it proposes a random untried neighbour. A told value replaces the current one when
it is better, and when it is worse by a relative amount Δ with probability exp(-Δ / T). The temperature T falls
from ``start_temperature`` by the factor ``cooling`` per evaluation; below ``end_temperature`` it is raised
again and the search goes back to the best candidate. Where every neighbour is taken it jumps to a random
candidate.
"""

from __future__ import annotations

import math

import numpy as np

from tuner.strategies.base import DomainSearch
from tuner.strategies.domain import HAMMING, Domain


class SimulatedAnnealing(DomainSearch):
    name = "annealing"

    def __init__(self, domain: Domain, rng: np.random.Generator, start_temperature: float = 0.2,
                 end_temperature: float = 0.002, cooling: float = 0.98, neighbourhood: str = HAMMING):
        super().__init__(domain, rng)
        self.start, self.end, self.cooling = start_temperature, end_temperature, cooling
        self.temperature = start_temperature
        self.kind = neighbourhood
        self.current = -1
        self.current_value = math.inf

    def propose(self) -> int:
        if self.current < 0:
            return -1
        neighbours = self.free_neighbours(self.current, self.kind)
        return int(neighbours[self.rng.integers(len(neighbours))]) if len(neighbours) else -1

    def observe(self, candidate: int, value: float) -> None:
        if self.current < 0 or self._accepts(value):
            self.current, self.current_value = candidate, value
        self.temperature *= self.cooling
        if self.temperature < self.end:
            self.temperature = self.start
            self.current, self.current_value = self.best, self.best_value

    def _accepts(self, value: float) -> bool:
        if value <= self.current_value:
            return True
        if not math.isfinite(value):
            return False
        if not math.isfinite(self.current_value):
            return True
        worse = (value - self.current_value) / self.current_value
        return bool(self.rng.random() < math.exp(-worse / self.temperature))
