"""Bayesian optimisation over the valid configurations (``bo``): after ``initial`` random draws, a Gaussian process
(:mod:`tuner.strategies.gaussian_process`) proposes by a lower confidence bound among the neighbours of the ``top``
best, ``pairs`` two-parameter moves and ``spread`` random candidates; every ``local_every``-th proposal is an
iterated local search's (:mod:`tuner.strategies.local_search`). Why it is built so: the README, "How `bo` and `ils`
search"."""

from __future__ import annotations

import math

import numpy as np
from threadpoolctl import ThreadpoolController

from tuner.strategies.base import DomainSearch
from tuner.strategies.domain import HAMMING, Domain
from tuner.strategies.gaussian_process import GaussianProcess
from tuner.strategies.local_search import IteratedLocalSearch

_threads = ThreadpoolController()


class BayesianSearch(DomainSearch):
    name = "bo"

    def __init__(self, domain: Domain, rng: np.random.Generator, initial: int = 5, local_every: int = 3,
                 explore: float = 0.9, top: int = 5, pairs: int = 150, spread: int = 200, train_max: int = 200,
                 fit_max: int = 100, refit_growth: float = 1.5, conditional: bool = True, aligned: bool = True):
        super().__init__(domain, rng)
        self.initial, self.local_every, self.explore = initial, local_every, explore
        self.top, self.pairs, self.spread = top, pairs, spread
        self.train_max, self.fit_max, self.refit_growth = train_max, fit_max, refit_growth
        self.model = GaussianProcess(domain, conditional, aligned)
        self.local = IteratedLocalSearch(domain, rng)
        self.movable = np.flatnonzero(domain.radices > 1)
        self.observed: list[int] = []
        self.observed_values: list[float] = []
        self.next_fit = initial
        self.conditioned_on = 0
        self.proposals = 0

    def ask(self) -> int:
        if len(self.values) < self.initial or not self.local_every:
            return super().ask()
        self.proposals += 1
        if self.proposals % self.local_every:
            return super().ask()
        candidate = self.local.ask()  # it knows what it has asked; what the model asked it learns when told
        if self.taken[candidate]:
            candidate = self.random_free()
        self._take(candidate)
        return candidate

    def observe(self, candidate: int, value: float) -> None:
        self.observed.append(candidate)
        self.observed_values.append(value)
        self.local.tell(candidate, value)

    def propose(self) -> int:
        if len(self.observed) < self.initial or not len(self.movable):
            return -1
        with _threads.limit(limits=1, user_api="blas"):
            self._update()
            pool = self._pool()
            if not len(pool):
                return -1
            mean, sd = self.model.predict(pool)
            kappa = self.explore * math.sqrt(math.log(len(self.observed)))
            return int(pool[np.argmin(mean - kappa * sd)])

    def _update(self) -> None:
        count = len(self.observed)
        if count == self.conditioned_on:
            return
        candidates, values = np.asarray(self.observed), np.asarray(self.observed_values)
        if count >= self.next_fit:
            subset = self._training_set(values, self.fit_max)
            self.model.fit_weights(candidates[subset], values[subset])
            self.next_fit = max(count + 1, math.ceil(count * self.refit_growth))
        subset = self._training_set(values, self.train_max)
        self.model.condition(candidates[subset], values[subset])
        self.conditioned_on = count

    def _training_set(self, values: np.ndarray, most: int) -> np.ndarray:
        """The observations a model takes: all, or the best half and the most recent half of ``most``."""
        count = len(values)
        if count <= most:
            return np.arange(count)
        best = np.argsort(values, kind="stable")[:most // 2]
        return np.unique(np.concatenate([best, np.arange(count - (most - most // 2), count)]))

    def _pool(self) -> np.ndarray:
        ranked = np.asarray(self.observed)[np.argsort(np.asarray(self.observed_values), kind="stable")]
        parts = [self.domain.neighbours(int(c), HAMMING) for c in ranked[:self.top]]
        parts.append(self._two_away(int(ranked[0])))
        parts.append(self.rng.integers(self.domain.size, size=self.spread))
        pool = np.unique(np.concatenate(parts))
        return pool[~self.taken[pool]]

    def _two_away(self, centre: int) -> np.ndarray:
        """Candidates with two values of ``centre`` redrawn (on two axes drawn at random)."""
        rows = np.repeat(self.domain.index_row(centre)[None, :], self.pairs, axis=0)
        for _ in range(2):
            axis = self.movable[self.rng.integers(len(self.movable), size=self.pairs)]
            rows[np.arange(self.pairs), axis] = (self.rng.random(self.pairs) * self.domain.radices[axis])
        found = self.domain.candidates_of(rows)
        return found[found >= 0]
