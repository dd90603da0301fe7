"""Iterated local search over the domain's neighbourhood (Lourenço, Martin, Stützle, "Iterated local search",
2003; Kernel Tuner's ``greedy_ils`` is one).

A local search moves to the first neighbour found better than where it stands, the neighbours tried in random
order; where none is better it has reached a local optimum. It then kicks the best local optimum so far: a few
parameters (``perturbation`` of them, at least one) set to random values, the nearest free candidate taken, and
searches locally from there. After ``restart_after`` evaluations without a new best it starts afresh from a
random candidate. A failed candidate is no place to descend from (its neighbours mostly fail too, where the
domain is the full product): from there it kicks at once.

While results are awaited (a study asks ahead), it proposes the next untried neighbours; once all are asked it
kicks ahead, so no evaluation waits on another.
"""

from __future__ import annotations

import math

import numpy as np

from tuner.strategies.base import DomainSearch, better
from tuner.strategies.domain import HAMMING, Domain


class NeighbourScan:
    """The neighbours of one candidate, in random order, for a first-improvement local search."""

    def __init__(self, search: DomainSearch, centre: int, kind: str):
        self.centre = centre
        self.order = search.domain.neighbours(centre, kind)
        search.rng.shuffle(self.order)
        self.position = 0

    def next_free(self, taken: np.ndarray) -> int:
        """The next neighbour not taken yet, or -1 when every one is."""
        while self.position < len(self.order):
            candidate = int(self.order[self.position])
            self.position += 1
            if not taken[candidate]:
                return candidate
        return -1


class IteratedLocalSearch(DomainSearch):
    name = "ils"

    def __init__(self, domain: Domain, rng: np.random.Generator, neighbourhood: str = HAMMING,
                 perturbation: float = 0.25, restart_after: int = 100):
        super().__init__(domain, rng)
        self.kind = neighbourhood
        self.kick_axes = max(1, round(perturbation * int((domain.radices > 1).sum())))
        self.restart_after = restart_after
        self.current = -1
        self.current_value = math.nan
        self.scan: NeighbourScan | None = None
        self.anchor = -1
        """The best local optimum: where kicks start from."""
        self.anchor_value = math.inf
        self.kicks: set[int] = set()
        self.since_best = 0

    def propose(self) -> int:
        if self.current < 0:
            return -1
        if not math.isfinite(self.current_value):  # no descent from a failure: its neighbours mostly fail too
            return self._kick()
        if self.scan is None or self.scan.centre != self.current:
            self.scan = NeighbourScan(self, self.current, self.kind)
        candidate = self.scan.next_free(self.taken)
        if candidate >= 0:
            return candidate
        return self._kick()

    def _kick(self) -> int:
        """A new start near the best local optimum (or anywhere, after a long time without a new best)."""
        self._settle()
        if self.since_best >= self.restart_after or self.anchor < 0:
            self.since_best = 0
            candidate = self.random_free()
        else:
            point = self.domain.index_row(self.anchor).astype(float)
            movable = np.flatnonzero(self.domain.radices > 1)
            for axis in self.rng.choice(movable, size=min(self.kick_axes, len(movable)), replace=False):
                point[axis] = self.rng.integers(self.domain.radices[axis])
            candidate = self.nearest_free(point)
        self.kicks.add(candidate)
        return candidate

    def _settle(self) -> None:
        """The current candidate is a local optimum (as far as asked): keep it as the anchor if it is the best."""
        if self.current >= 0 and better(self.current_value, self.anchor_value):
            self.anchor, self.anchor_value = self.current, self.current_value

    def observe(self, candidate: int, value: float) -> None:
        self.since_best = 0 if candidate == self.best else self.since_best + 1
        if candidate in self.kicks:
            self.kicks.discard(candidate)
            if self._exhausted():
                self.current, self.current_value = candidate, value
                return
        if self.current < 0 or better(value, self.current_value):
            self.current, self.current_value = candidate, value

    def _exhausted(self) -> bool:
        return self.scan is not None and self.scan.centre == self.current and \
            self.scan.position >= len(self.scan.order)
