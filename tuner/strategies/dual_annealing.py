"""Dual annealing on the domain's index box: generalized simulated annealing with local search (Xiang, Sun, Fan,
Gong, "Generalized simulated annealing algorithm and its application to the Thomson model", 1997; the scheme of
``scipy.optimize.dual_annealing``, which Kernel Tuner's ``dual_annealing`` wraps), made discrete.

The search keeps a point of the box ``[0, radix)`` per parameter. A *visit* draws a step from the heavy-tailed
Tsallis distribution of the visiting temperature (``visiting`` q_v) for every parameter, or for one parameter at a
time, in the chain of 2 × (parameters) visits per temperature step that scipy's strategy chain makes; steps wrap
around the box, and the candidate visited is the nearest free one to the point. A worse candidate is accepted
with the generalized Metropolis probability of the acceptance parameter q_a at temperature T / (step + 1), the
energy being the logarithm of the value times ``energy_scale``. Whenever a visit finds a new best, a greedy local
search (first improvement over the neighbourhood) descends from it before the visits go on from where it ended.
The visiting temperature falls as T₀ (2^(q_v-1) - 1) / ((1 + t)^(q_v-1) - 1); below ``restart_ratio`` × T₀ the
search restarts from a random point.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from tuner.strategies.base import DomainSearch
from tuner.strategies.domain import HAMMING, Domain
from tuner.strategies.local_search import NeighbourScan

TAIL_LIMIT = 1e8


class TsallisSteps:
    """Steps drawn from the visiting distribution of generalized simulated annealing."""

    def __init__(self, visiting: float):
        self.qv = visiting
        factor2 = math.exp((4.0 - visiting) * math.log(visiting - 1.0))
        factor3 = math.exp((2.0 - visiting) * math.log(2.0) / (visiting - 1.0))
        self.factor4 = math.sqrt(math.pi) * factor2 / (factor3 * (3.0 - visiting))
        factor5 = 1.0 / (visiting - 1.0) - 0.5
        self.factor6 = (math.pi * (1.0 - factor5) / math.sin(math.pi * (1.0 - factor5))
                        / math.exp(float(gammaln(2.0 - factor5))))

    def draw(self, temperature: float, count: int, rng: np.random.Generator) -> np.ndarray:
        x, y = rng.normal(size=(2, count))
        factor4 = self.factor4 * math.exp(math.log(temperature) / (self.qv - 1.0))
        x *= math.exp(-(self.qv - 1.0) * math.log(self.factor6 / factor4) / (3.0 - self.qv))
        steps = x / np.exp((self.qv - 1.0) * np.log(np.abs(y)) / (3.0 - self.qv))
        beyond = np.abs(steps) > TAIL_LIMIT  # as scipy does: a step past the limit lands anywhere below it
        steps[beyond] = np.sign(steps[beyond]) * TAIL_LIMIT * rng.random(int(beyond.sum()))
        return steps


class DualAnnealing(DomainSearch):
    name = "dual_annealing"

    def __init__(self, domain: Domain, rng: np.random.Generator, initial_temperature: float = 5230.0,
                 visiting: float = 2.62, acceptance: float = -5.0, restart_ratio: float = 2e-5,
                 energy_scale: float = 1.0, neighbourhood: str = HAMMING):
        super().__init__(domain, rng)
        self.steps = TsallisSteps(visiting)
        self.t0, self.qv, self.qa = initial_temperature, visiting, acceptance
        self.restart_ratio, self.energy_scale, self.kind = restart_ratio, energy_scale, neighbourhood
        self.movable = np.flatnonzero(domain.radices > 1)
        self.width = domain.radices.astype(float)
        self.point = np.zeros(domain.axes)
        self.current = -1
        self.energy = math.inf
        self.iteration = 0
        self.chain = 0
        self.local: NeighbourScan | None = None
        self.local_value = math.inf
        self.visits: set[int] = set()

    # temperatures
    def _temperature(self) -> float:
        numerator = math.exp((self.qv - 1) * math.log(2.0)) - 1.0
        denominator = math.exp((self.qv - 1) * math.log(self.iteration + 2.0)) - 1.0
        return self.t0 * numerator / denominator

    def _advance_chain(self) -> None:
        self.chain += 1
        if self.chain >= 2 * max(len(self.movable), 1):
            self.chain = 0
            self.iteration += 1
            if self._temperature() < self.restart_ratio * self.t0:
                self.iteration = 0
                self.current, self.energy = -1, math.inf

    # proposals
    def propose(self) -> int:
        if self.local is not None:
            candidate = self.local.next_free(self.taken)
            if candidate >= 0:
                return candidate
            self._end_local_search()
        if self.current < 0:
            candidate = self.random_free()
        else:
            candidate = self.nearest_free(self._visit())
            self._advance_chain()
        self.visits.add(candidate)
        return candidate

    def _visit(self) -> np.ndarray:
        point = self.point.copy()
        temperature = self._temperature()
        dimensions = len(self.movable)
        if self.chain < dimensions:
            axes = self.movable
            steps = self.steps.draw(temperature, dimensions, self.rng)
        else:
            axes = self.movable[self.chain - dimensions:self.chain - dimensions + 1]
            steps = self.steps.draw(temperature, 1, self.rng)
        point[axes] = np.fmod(np.fmod(point[axes] + 0.5 + steps, self.width[axes]) + self.width[axes],
                              self.width[axes]) - 0.5
        return np.clip(point, 0, self.width - 1)

    def _end_local_search(self) -> None:
        assert self.local is not None
        self._move(self.local.centre, self.local_value)
        self.local = None

    def _move(self, candidate: int, value: float) -> None:
        self.current, self.energy = candidate, self._energy(value)
        self.point = self.domain.index_row(candidate).astype(float)

    def _energy(self, value: float) -> float:
        return self.energy_scale * math.log(value) if 0 < value < math.inf else math.inf

    # learning
    def observe(self, candidate: int, value: float) -> None:
        if self.local is not None and value < self.local_value:
            self.local = NeighbourScan(self, candidate, self.kind)
            self.local_value = value
            return
        if candidate not in self.visits:
            return
        self.visits.discard(candidate)
        if self.current < 0 or self._accepts(self._energy(value)):
            self._move(candidate, value)
        if candidate == self.best and self.local is None and math.isfinite(value):
            self.local = NeighbourScan(self, candidate, self.kind)
            self.local_value = value

    def _accepts(self, energy: float) -> bool:
        if energy < self.energy:
            return True
        if not math.isfinite(energy):
            return False
        step_temperature = self._temperature() / (self.iteration + 1)
        base = 1.0 - (1.0 - self.qa) * (energy - self.energy) / step_temperature
        chance = math.exp(math.log(base) / (1.0 - self.qa)) if base > 0 else 0.0
        return bool(self.rng.random() <= chance)
