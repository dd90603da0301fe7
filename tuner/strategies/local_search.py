"""Iterated local search (``ils``; Lourenço, Martin, Stützle, 2003) with kicks that widen as in variable
neighbourhood search (Mladenović, Hansen, 1997): first-improvement descent over the one-step neighbours (known
ones first, they cost nothing), kicks ``ring`` steps from the best local optimum, a fresh start after
``restart_after`` evaluations without a new best. Why: the README, "How `bo` and `ils` search"."""

from __future__ import annotations

import math

import numpy as np

from tuner.strategies.base import DomainSearch, better
from tuner.strategies.domain import ADJACENT, Domain

FIRST_RING = 2
"""Steps of the first kicks: one step is the neighbourhood a local search has tried."""
KICK_DRAWS = 20
"""Candidates drawn in the ring for one kick before taking the free candidate nearest one of them."""


class NeighbourScan:
    """The neighbours of one candidate for a first-improvement local search: those one step away on an ordered
    parameter (or another value of a categorical one) first, then the farther ones, each group in random order."""

    def __init__(self, search: DomainSearch, centre: int, kind: str):
        self.centre = centre
        near = search.domain.neighbours(centre, ADJACENT)
        far = np.setdiff1d(search.domain.neighbours(centre, kind), near) if kind != ADJACENT else near[:0]
        search.rng.shuffle(near)
        search.rng.shuffle(far)
        self.order = np.concatenate((near, far))
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

    def __init__(self, domain: Domain, rng: np.random.Generator, neighbourhood: str = ADJACENT,
                 initial: int = 15, patience: int = 40, restart_after: int = 300):
        super().__init__(domain, rng)
        self.initial = initial
        self.kind = neighbourhood
        self.patience = patience
        self.restart_after = restart_after
        self.movable = np.flatnonzero(domain.radices > 1)
        self.current = -1
        self.current_value = math.nan
        self.scan: NeighbourScan | None = None
        self.anchor = -1
        """The best local optimum: where kicks start from."""
        self.anchor_value = math.inf
        self.kicks: set[int] = set()
        self.last_kick = -1
        self.since_best = 0
        self.ring = FIRST_RING
        self.failed_kicks = 0
        """Kicks in a row, at the current ring, that landed on a working candidate and found no new anchor."""
        self.kicked_anchor_value = math.inf
        """The anchor's value at the last kick."""

    def propose(self) -> int:
        if self.current < 0 or len(self.values) < self.initial:
            return -1
        if not math.isfinite(self.current_value):  # no descent from a failure: its neighbours mostly fail too
            return self._kick()
        if self.scan is None or self.scan.centre != self.current:
            self._move_to_known_better()
            if self.scan is None or self.scan.centre != self.current:
                self.scan = NeighbourScan(self, self.current, self.kind)
        candidate = self.scan.next_free(self.taken)
        if candidate >= 0:
            return candidate
        return self._kick()

    def _move_to_known_better(self) -> None:
        """Move, as long as there is one, to the best evaluated neighbour better than the current candidate."""
        while True:
            neighbours = self.domain.neighbours(self.current, self.kind)
            known = [(self.values[c], c) for c in neighbours[self.taken[neighbours]].tolist() if c in self.values]
            value, candidate = min(known, default=(math.inf, -1))
            if not value < self.current_value:
                return
            self.current, self.current_value = candidate, value

    def _kick(self) -> int:
        """A new start near the best local optimum (or anywhere, after a long time without a new best)."""
        self._settle()
        self._widen_or_narrow()
        if self.since_best >= self.restart_after or self.anchor < 0 or not len(self.movable):
            self.since_best = 0
            candidate = self.random_free()
        else:
            candidate = self._ring_candidate()
        self.kicks.add(candidate)
        self.last_kick = candidate
        return candidate

    def _settle(self) -> None:
        """The current candidate is a local optimum (as far as asked): keep it as the anchor if it is the best."""
        if self.current >= 0 and better(self.current_value, self.anchor_value):
            self.anchor, self.anchor_value = self.current, self.current_value

    def _widen_or_narrow(self) -> None:
        """The ring of the next kick: back to the first on a new anchor, one wider after ``patience`` kicks that
        found none (a kick that landed on a failure, or whose value is awaited, searched nothing and does not
        count)."""
        if self.anchor_value < self.kicked_anchor_value:
            self.ring, self.failed_kicks = FIRST_RING, 0
        elif math.isfinite(self.values.get(self.last_kick, math.nan)):
            self.failed_kicks += 1
            if self.failed_kicks >= self.patience:
                self.failed_kicks = 0
                self.ring = self.ring + 1 if self.ring < len(self.movable) else FIRST_RING
        self.kicked_anchor_value = self.anchor_value

    def _ring_candidate(self) -> int:
        """A free candidate ``ring`` steps from the anchor, each step on a parameter drawn at random."""
        row = self.domain.index_row(self.anchor)
        chosen = self.movable[self.rng.integers(len(self.movable), size=(KICK_DRAWS, self.ring))]
        counts = np.zeros((KICK_DRAWS, self.domain.axes), dtype=np.int64)
        np.add.at(counts, (np.repeat(np.arange(KICK_DRAWS), self.ring), chosen.ravel()), 1)
        rows = self.domain.steps(np.repeat(row[None, :], KICK_DRAWS, axis=0), counts, self.rng)
        found = self.domain.candidates_of(rows)
        free = np.flatnonzero((found >= 0) & ~self.taken[found])
        return int(found[free[0]]) if len(free) else self.nearest_free(rows[0])

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
