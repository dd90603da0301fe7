"""The strategies without a model: uniform random search, brute force in random order, the sweep in the domain's
order."""

from __future__ import annotations

import numpy as np

from tuner.strategies.base import DomainSearch
from tuner.strategies.domain import Domain


class RandomSearch(DomainSearch):
    """Uniformly random candidates, none twice: the reference every strategy is held against."""

    name = "random"


class BruteForce(RandomSearch):
    """Every candidate once, in random order: uniform random search run until the domain is spent (what Optuna's
    BruteForceSampler does over the whole product, here over the valid configurations and in constant time per
    ask)."""

    name = "bruteforce"


class Sweep(DomainSearch):
    """Every candidate in the domain's order (a study's: the experiment's enumeration order)."""

    name = "grid"

    def __init__(self, domain: Domain, rng: np.random.Generator):
        super().__init__(domain, rng)
        self.next = 0

    def propose(self) -> int:
        while self.next < self.domain.size and self.taken[self.next]:
            self.next += 1
        return self.next if self.next < self.domain.size else -1
