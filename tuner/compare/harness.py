"""Running a search strategy on a recorded space: one run's best-so-far curve, and R runs in parallel processes.

Conventions. What a strategy may propose, and so what a budget counts:

* ``valid`` (ours): the recorded configurations, the ones that pass the space's static constraints. Every
  proposal is recorded; failures recorded in the file (invalid at launch, compile_error, crashed) still count.
* ``product`` (the published one): every combination of the parameters' values. A combination the recording
  lacks broke a constraint: it counts as an evaluation, fails (value ``inf``) and costs nothing.

A strategy (:mod:`tuner.strategies`: the protocol of every search strategy, in a study as here) sees a
:class:`~tuner.strategies.Domain` (the candidates of a convention, numbered ``0 … size-1``, :func:`domain_of`),
proposes one candidate at a time (``ask``) and is told its value (``tell``): the recorded time in ms when the
configuration ran ok, ``inf`` for any failure. It minimises.

Repeats. No configuration is evaluated twice: a proposal of an already evaluated candidate is told its value
again but is no evaluation (it adds nothing to the budget, the cost or the curve). A strategy that proposes
only repeats ``max_repeats`` times in a row has converged: its run ends there, shorter than the budget, and
:meth:`BestSoFar.padded` holds its best and its cost flat to the budget. A run also ends when every candidate
has been evaluated.

Cost. Each evaluation adds the recorded cost of its configuration (compile + benchmark time as the file records
them, :mod:`tuner.recorded`), in seconds; the strategy's own thinking time is not counted.

Runs. ``simulate_runs`` runs repeat ``r`` with the seed sequence ``(seed, r)``, so the curves are the same
whatever the number of worker processes.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from tuner.compare.scoring import Distribution
from tuner.recorded import RecordedSpace
from tuner.strategies.domain import Domain, ordered_values
from tuner.strategies.protocol import StrategyFactory

MAX_REPEATS = 1000
DEFAULT_RUNS = 50


class Convention(StrEnum):
    VALID = "valid"
    """(a) the budget counts only the configurations that pass the static constraints."""
    PRODUCT = "product"
    """(b) a draw from the full product that fails counts as an evaluation."""


def domain_of(space: RecordedSpace, convention: Convention | str) -> Domain:
    """The candidates a strategy proposes from under a convention: under ``valid`` candidate ``i`` is the
    recording's configuration ``i``; under ``product`` it is the combination whose mixed-radix key is ``i``
    (:mod:`tuner.recorded.space`)."""
    ordered = [ordered_values(values) for values in space.values]
    if Convention(convention) is Convention.VALID:
        return Domain(space.names, space.radices, np.array(ordered), space.indices)
    return Domain.product(space.names, [int(r) for r in space.radices], ordered)


def recorded_rows(space: RecordedSpace, domain: Domain) -> np.ndarray:
    """The recording's configuration of every candidate of ``domain``, -1 where the recording lacks it."""
    return space.rows_of(domain.keys) if domain.is_product else np.arange(domain.size)


@dataclass(frozen=True, eq=False)
class BestSoFar:
    """One run, per evaluation: the best time so far (ms, ``inf`` before the first success), the cumulative
    recorded cost (s) and the candidate evaluated."""

    best_ms: np.ndarray
    cost_s: np.ndarray
    candidates: np.ndarray

    @property
    def evaluations(self) -> int:
        return len(self.best_ms)

    def padded(self, budget: int) -> tuple[np.ndarray, np.ndarray]:
        """Best and cost over ``budget`` evaluations, held at their last values after a run that ended early."""
        if self.evaluations == 0:
            return np.full(budget, math.inf), np.zeros(budget)
        best, cost = self.best_ms[:budget], self.cost_s[:budget]
        missing = budget - len(best)
        return np.pad(best, (0, missing), mode="edge"), np.pad(cost, (0, missing), mode="edge")


def simulate(strategy_factory: StrategyFactory, space: RecordedSpace, budget: int,
             convention: Convention | str, seed: int | tuple[int, ...],
             max_repeats: int = MAX_REPEATS) -> BestSoFar:
    """One run of a strategy for ``budget`` evaluations."""
    domain = domain_of(space, convention)
    strategy = strategy_factory(domain, np.random.default_rng(seed))
    rows = recorded_rows(space, domain)
    values = np.append(np.where(space.ok, space.time_ms, np.inf), np.inf)[rows].tolist()
    costs = np.append(space.cost_s, 0.0)[rows].tolist()
    size = domain.size
    limit = min(budget, size)
    best_ms, cost_s, candidates = np.empty(limit), np.empty(limit), np.empty(limit, dtype=np.int64)
    seen: set[int] = set()
    best, total, n, repeats = math.inf, 0.0, 0, 0
    while n < limit:
        candidate = int(strategy.ask())
        if not 0 <= candidate < size:
            raise ValueError(f"the strategy proposed candidate {candidate}, outside 0 … {size - 1}")
        value = values[candidate]
        if candidate in seen:
            repeats += 1
            if repeats >= max_repeats:
                break
            strategy.tell(candidate, value)
            continue
        repeats = 0
        seen.add(candidate)
        best = min(best, value)
        total += costs[candidate]
        best_ms[n], cost_s[n], candidates[n] = best, total, candidate
        n += 1
        strategy.tell(candidate, value)
    return BestSoFar(best_ms[:n], cost_s[:n], candidates[:n])


def simulate_runs(strategy_factory: StrategyFactory, space: RecordedSpace, budget: int,
                  convention: Convention | str, runs: int = DEFAULT_RUNS, seed: int = 0,
                  workers: int | None = None) -> list[BestSoFar]:
    """``runs`` independent runs, spread over ``workers`` processes (one per CPU by default; 1: in this one).

    ``strategy_factory`` must be picklable (a module-level function or class) when workers > 1.
    """
    workers = min(workers or os.cpu_count() or 1, runs)
    job = (strategy_factory, space, budget, Convention(convention))
    if workers <= 1:
        return [simulate(*job, seed=(seed, r)) for r in range(runs)]
    with ProcessPoolExecutor(max_workers=workers, initializer=_set_job, initargs=job) as pool:
        return list(pool.map(_run, [(seed, r) for r in range(runs)], chunksize=max(1, runs // (4 * workers))))


def distribution(space: RecordedSpace, convention: Convention | str) -> Distribution:
    """The space as the methodology score sees it: under ``product`` the baseline counts failed and absent draws
    (absent ones cost nothing)."""
    product = Convention(convention) is Convention.PRODUCT
    absent = space.product_size - len(space) if product else 0
    return Distribution.of(np.where(space.ok, space.time_ms, np.nan), space.cost_s, absent, product=product)


def stack(curves: list[BestSoFar], budget: int) -> tuple[np.ndarray, np.ndarray]:
    """The runs' best (ms) and cumulative cost (s) as (runs × budget) arrays, runs that ended early held flat."""
    padded = [c.padded(budget) for c in curves]
    return np.array([b for b, _ in padded]), np.array([c for _, c in padded])


_job: tuple[StrategyFactory, RecordedSpace, int, Convention] | None = None


def _set_job(*job: object) -> None:
    global _job
    _job = job  # type: ignore[assignment]


def _run(seed: tuple[int, int]) -> BestSoFar:
    assert _job is not None
    return simulate(*_job, seed=seed)
