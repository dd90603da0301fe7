"""What every strategy of this package keeps: which candidates are taken (told or asked), their values, the best.

A subclass proposes (``propose``) and learns (``observe``); this class makes sure no candidate is proposed
twice, falling back to a uniformly random free candidate when a proposal is taken or none is made.
"""

from __future__ import annotations

import math

import numpy as np

from tuner.strategies.domain import HAMMING, Domain

DENSE_AFTER = 0.5
"""Fraction of the domain taken after which a random free candidate is drawn from a list of the free ones rather
than by rejection."""


class DomainSearch:
    """Bookkeeping for a strategy over ``domain``: taken candidates, told values, the best so far."""

    name = "strategy"

    def __init__(self, domain: Domain, rng: np.random.Generator):
        self.domain = domain
        self.rng = rng
        self.taken = np.zeros(domain.size, dtype=bool)
        self.values: dict[int, float] = {}
        self.taken_count = 0
        self.best: int = -1
        self.best_value = math.inf

    # the protocol
    def ask(self) -> int:
        if self.taken_count >= self.domain.size:
            raise RuntimeError("every candidate of the domain has been asked or told")
        candidate = self.propose()
        if candidate < 0 or self.taken[candidate]:
            candidate = self.random_free()
        self._take(candidate)
        return candidate

    def tell(self, candidate: int, value: float) -> None:
        if candidate in self.values:
            return
        self._take(candidate)
        value = float(value)
        self.values[candidate] = value
        if value < self.best_value or self.best < 0:
            self.best, self.best_value = candidate, value
        self.observe(candidate, value)

    # what subclasses define
    def propose(self) -> int:
        """A free candidate, or -1 to leave the choice to chance."""
        return -1

    def observe(self, candidate: int, value: float) -> None:
        """Learn from a told value."""

    # helpers
    def _take(self, candidate: int) -> None:
        if not self.taken[candidate]:
            self.taken[candidate] = True
            self.taken_count += 1

    def free(self, candidate: int) -> bool:
        return candidate >= 0 and not self.taken[candidate]

    def random_free(self) -> int:
        size = self.domain.size
        if self.taken_count < DENSE_AFTER * size:
            while True:
                candidate = int(self.rng.integers(size))
                if not self.taken[candidate]:
                    return candidate
        return int(self.rng.choice(np.flatnonzero(~self.taken)))

    def free_neighbours(self, candidate: int, kind: str = HAMMING) -> np.ndarray:
        return self.free_of(self.domain.neighbours(candidate, kind))

    def nearest_free(self, point: np.ndarray, scan: bool = True) -> int:
        """A free candidate near a point of the index box: the point's own combination when it is a free candidate,
        else the nearest free one among that combination's neighbours (one parameter away), else the nearest free
        candidate of the whole domain (with ``scan``; without, -1). (The first two are what a step of the search
        means, and cost microseconds where a scan of a large domain costs milliseconds.)"""
        domain = self.domain
        point = np.asarray(point, dtype=float)
        digits = np.clip(np.rint(point), 0, domain.radices - 1).astype(np.int64)
        own = int(domain.candidates_of(digits[None, :])[0])
        if self.free(own):
            return own
        near = self.free_of(domain.neighbours_of_row(digits))
        if len(near):
            distance = domain.distances(point, near)
            ties = near[distance <= distance.min() + 1e-12]
            return int(ties[self.rng.integers(len(ties))] if len(ties) > 1 else ties[0])
        return domain.nearest(point, ~self.taken, self.rng) if scan else -1

    def free_of(self, candidates: np.ndarray) -> np.ndarray:
        return candidates[~self.taken[candidates]]

    def value(self, candidate: int) -> float:
        return self.values.get(candidate, math.nan)


def better(value: float, than: float) -> bool:
    """Whether ``value`` improves on ``than`` (a failure, ``inf``, never does; anything beats NaN)."""
    return value < than or (math.isnan(than) and not math.isnan(value))
