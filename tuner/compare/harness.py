"""Running a search strategy on a recorded space: one run's best-so-far curve, and R runs in parallel processes.

A strategy (:mod:`tuner.strategies`, the protocol of every search strategy) proposes candidates of a
:class:`~tuner.strategies.Domain` under a :class:`Convention` and is told each one's recorded time; a run counts
the recorded cost of what it evaluated and its elapsed time, which adds the strategy's own
(:mod:`tuner.compare.methodology` scores on it).
"""

from __future__ import annotations

import math
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from tuner.compare.methodology import SpaceStatistics
from tuner.recorded import RecordedSpace
from tuner.strategies.domain import Domain, ordered_values
from tuner.strategies.protocol import StrategyFactory

MAX_REPEATS = 1000
DEFAULT_RUNS = 50
STALLED = "stalled"
WALL_CAP = "wall_cap"
"""Why a run was cut: it proposed only already evaluated candidates too often in a row, or (Kernel Tuner's runs,
:mod:`tuner.compare.kernel_tuner_bound`) it took too much real time."""


class Convention(StrEnum):
    VALID = "valid"
    """(a, ours) the candidates are the recorded configurations, those that pass the space's static constraints;
    failures recorded in the file (invalid at launch, compile_error, crashed) still count."""
    PRODUCT = "product"
    """(b, the published one) every combination of the parameters' values; one the recording lacks broke a
    constraint: it counts as an evaluation, fails (``inf``) and costs nothing."""


def domain_of(space: RecordedSpace, convention: Convention | str) -> Domain:
    """The candidates a strategy proposes from under a convention: under ``valid`` candidate ``i`` is the
    recording's configuration ``i``; under ``product`` it is the combination whose mixed-radix key is ``i``
    (:mod:`tuner.recorded.space`)."""
    ordered = [ordered_values(values) for values in space.values]
    if Convention(convention) is Convention.VALID:
        return Domain(space.names, space.radices, np.array(ordered), space.indices, space.values)
    return Domain.product(space.names, [int(r) for r in space.radices], ordered, space.values)


def recorded_rows(space: RecordedSpace, domain: Domain) -> np.ndarray:
    """The recording's configuration of every candidate of ``domain``, -1 where the recording lacks it."""
    return space.rows_of(domain.keys) if domain.is_product else np.arange(domain.size)


@dataclass(frozen=True, eq=False)
class BestSoFar:
    """One run, per evaluation: the best time so far (ms, ``inf`` before the first success), the cumulative
    recorded cost (s), the candidate evaluated and the cumulative elapsed time (s: the recorded cost and the
    strategy's own time); and why the run was cut short of its budget, if it was (:data:`STALLED`: it proposed
    only already evaluated candidates ``max_repeats`` times in a row)."""

    best_ms: np.ndarray
    cost_s: np.ndarray
    candidates: np.ndarray
    elapsed_s: np.ndarray
    cut: str = ""

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


def simulate(strategy_factory: StrategyFactory, space: RecordedSpace, budget: int | None,
             convention: Convention | str, seed: int | tuple[int, ...], max_repeats: int = MAX_REPEATS,
             time_limit_s: float | None = None) -> BestSoFar:
    """One run of a strategy for ``budget`` evaluations (None: no limit but the domain's size) and, where given,
    until ``time_limit_s`` of elapsed time (it stops before the evaluation that would start at or past it).

    The strategy is told the recorded time in ms of an ok configuration, ``inf`` of any failure; it minimises.
    Each evaluation adds its configuration's recorded cost (compile + benchmark time, s); the elapsed time adds
    the time spent in ``ask`` and ``tell``. A proposal of an evaluated candidate is told its value again but is
    no evaluation; ``max_repeats`` of them in a row end the run as converged (:data:`STALLED`), and so does
    every candidate having been evaluated."""
    clock = time.perf_counter
    started = clock()
    domain = domain_of(space, convention)
    strategy = strategy_factory(domain, np.random.default_rng(seed))
    thinking = clock() - started
    rows = recorded_rows(space, domain)
    values = np.append(np.where(space.ok, space.time_ms, np.inf), np.inf)[rows].tolist()
    costs = np.append(space.cost_s, 0.0)[rows].tolist()
    size = domain.size
    limit = size if budget is None else min(budget, size)
    time_limit = math.inf if time_limit_s is None else time_limit_s
    best_ms, cost_s, elapsed_s = np.empty(limit), np.empty(limit), np.empty(limit)
    candidates = np.empty(limit, dtype=np.int64)
    seen: set[int] = set()
    best, total, n, repeats, cut = math.inf, 0.0, 0, 0, ""
    while n < limit and total + thinking < time_limit:
        before = clock()
        candidate = int(strategy.ask())
        thinking += clock() - before
        if not 0 <= candidate < size:
            raise ValueError(f"the strategy proposed candidate {candidate}, outside 0 … {size - 1}")
        value = values[candidate]
        if candidate in seen:
            repeats += 1
            if repeats >= max_repeats:
                cut = STALLED
                break
            before = clock()
            strategy.tell(candidate, value)
            thinking += clock() - before
            continue
        repeats = 0
        seen.add(candidate)
        best = min(best, value)
        total += costs[candidate]
        best_ms[n], cost_s[n], candidates[n], elapsed_s[n] = best, total, candidate, total + thinking
        n += 1
        before = clock()
        strategy.tell(candidate, value)
        thinking += clock() - before
    return BestSoFar(best_ms[:n], cost_s[:n], candidates[:n], elapsed_s[:n], cut)


def simulate_runs(strategy_factory: StrategyFactory, space: RecordedSpace, budget: int | None,
                  convention: Convention | str, runs: int = DEFAULT_RUNS, seed: int = 0,
                  workers: int | None = None, time_limit_s: float | None = None) -> list[BestSoFar]:
    """``runs`` independent runs, spread over ``workers`` processes (one per CPU by default; 1: in this one).
    Run ``r`` has the seed sequence ``(seed, r)``, so the curves are the same whatever the number of processes.

    ``strategy_factory`` must be picklable (a module-level function or class) when workers > 1.
    """
    workers = min(workers or os.cpu_count() or 1, runs)
    job = (strategy_factory, space, budget, Convention(convention), time_limit_s)
    if workers <= 1:
        return [_simulate(job, (seed, r)) for r in range(runs)]
    with ProcessPoolExecutor(max_workers=workers, initializer=_set_job, initargs=job) as pool:
        return list(pool.map(_run, [(seed, r) for r in range(runs)], chunksize=max(1, runs // (4 * workers))))


def statistics(space: RecordedSpace) -> SpaceStatistics:
    """The space as the methodology score sees it: its recorded configurations, ok and failed (under either
    convention: a combination the recording lacks costs nothing and no run's time)."""
    return SpaceStatistics.of(np.where(space.ok, space.time_ms, np.nan), space.cost_s)


def cost_per_draw(space: RecordedSpace, convention: Convention | str) -> float:
    """The mean recorded cost of one uniformly random candidate (under ``product``, an absent one costs 0)."""
    total = float(np.nansum(space.cost_s))
    return total / (space.product_size if Convention(convention) is Convention.PRODUCT else len(space))


def stack(curves: list[BestSoFar], budget: int) -> tuple[np.ndarray, np.ndarray]:
    """The runs' best (ms) and cumulative cost (s) as (runs × budget) arrays, runs that ended early held flat."""
    padded = [c.padded(budget) for c in curves]
    return np.array([b for b, _ in padded]), np.array([c for _, c in padded])


Job = tuple[StrategyFactory, RecordedSpace, int | None, Convention, float | None]
_job: Job | None = None


def _set_job(*job: object) -> None:
    global _job
    _job = job  # type: ignore[assignment]


def _simulate(job: Job, seed: tuple[int, int]) -> BestSoFar:
    factory, space, budget, convention, time_limit_s = job
    return simulate(factory, space, budget, convention, seed, time_limit_s=time_limit_s)


def _run(seed: tuple[int, int]) -> BestSoFar:
    assert _job is not None
    return _simulate(_job, seed)
