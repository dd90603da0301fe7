"""Scoring search strategies on recorded spaces: every strategy run R times on every space under each convention.

A *case* is one space under one convention (:mod:`tuner.compare.harness`). In each case every strategy makes
``runs`` runs of the largest budget (run r seeded by ``(seed, strategy's number, r)``, the same whatever the
number of processes); a smaller budget is read off the same runs, since no strategy is told its budget. Per
strategy and case:

* the fraction of the optimum after each budget: mean, standard deviation, quartiles over the runs;
* the methodology score P on the evaluation axis and on the time axis (:mod:`tuner.compare.scoring`; the axes
  run from the cut-off 0.5 to 0.96 of the space, whatever the budgets; a run is held at its last evaluation past
  the largest budget);
* performance curves: the fraction of the optimum after every evaluation, and at points of recorded time
  (compile + benchmark time, :mod:`tuner.recorded`), as quartiles over the runs.

Uniform random search is the baseline of every figure; where the strategies chosen do not include it, it runs
anyway (as the strategy ``random``).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tuner.compare.harness import Convention, distribution, simulate_runs, stack
from tuner.compare.scoring import (
    MethodologyScore,
    Summary,
    at_budgets,
    best_at_times,
    cost_to_reach,
    fraction_of_optimum,
    methodology_score,
    summarise,
)
from tuner.errors import TunerError
from tuner.recorded import RecordedSpace
from tuner.strategies.catalog import OPTUNA, OURS, strategy_factory
from tuner.strategies.protocol import StrategyFactory

BASELINE = "random"
DEFAULT_BUDGETS = (100, 400, 1600)
DEFAULT_RUNS = 50
TIME_POINTS = 200
NEAR_OPTIMUM = 0.97
"""Within 3% of the optimum: the fraction of the optimum whose cost a comparison reports."""


def strategy_factories(names: list[str] | None = None) -> dict[str, StrategyFactory]:
    """The factories of the strategies named (every one of ours by default, :mod:`tuner.strategies.catalog`), the
    baseline among them."""
    chosen = list(OURS) if not names else list(dict.fromkeys(names))
    unknown = [n for n in chosen if n not in OURS]
    if unknown:
        hint = " (Optuna's samplers run in tuning studies, not in this comparison)" if unknown[0] in OPTUNA else ""
        raise TunerError(f"unknown strategy '{unknown[0]}'; choose from {', '.join(OURS)}{hint}")
    if BASELINE not in chosen:
        chosen.append(BASELINE)
    return {name: strategy_factory(name) for name in chosen}


@dataclass(frozen=True, eq=False)
class Case:
    name: str
    space: RecordedSpace
    convention: Convention


@dataclass(frozen=True, eq=False)
class Scored:
    """One strategy's runs in one case, and what is made of them."""

    strategy: str
    runs: int
    budgets: tuple[int, ...]
    fractions: Summary
    """The fraction of the optimum after each budget."""
    score: MethodologyScore
    curve: Summary
    """The fraction of the optimum after each evaluation (1 … the largest budget)."""
    times_s: np.ndarray
    time_curve: Summary
    """The fraction of the optimum at each of ``times_s``."""
    evaluations: float
    """The mean number of evaluations of a run (fewer than the largest budget where a run ended early)."""
    near_optimum_cost: float
    """The median run's recorded cost until its best is within NEAR_OPTIMUM of the optimum, as a fraction of
    what measuring every configuration costs (``inf`` where the median run does not get there in the budget)."""


@dataclass(frozen=True, eq=False)
class CaseResult:
    case: Case
    optimum_ms: float
    scored: dict[str, Scored]


Progress = Callable[[str], None]


def compare(spaces: dict[str, RecordedSpace], strategies: dict[str, StrategyFactory],
            budgets: tuple[int, ...] = DEFAULT_BUDGETS, conventions: tuple[Convention, ...] = tuple(Convention),
            runs: int = DEFAULT_RUNS, seed: int = 0, jobs: int | None = None,
            progress: Progress | None = None) -> list[CaseResult]:
    """Every strategy in every case: spaces in order, each under each convention."""
    budgets = tuple(sorted(set(budgets)))
    if not budgets or budgets[0] < 1:
        raise TunerError(f"budgets must be whole numbers ≥ 1, not {budgets}")
    if runs < 2:
        raise TunerError(f"--repeats must be at least 2 (quartiles and spreads need several runs), not {runs}")
    found = []
    for name, space in spaces.items():
        for convention in conventions:
            case = Case(name, space, convention)
            scored = {}
            for strategy, factory in strategies.items():
                if progress is not None:
                    progress(f"{name} ({convention.value}): {strategy}, {runs} runs of {budgets[-1]} evaluations")
                scored[strategy] = score_runs(case, strategy, factory, budgets, runs, seed, jobs)
            found.append(CaseResult(case, space.optimum_ms, scored))
    return found


def score_runs(case: Case, strategy: str, factory: StrategyFactory, budgets: tuple[int, ...], runs: int,
               seed: int, jobs: int | None) -> Scored:
    budget = budgets[-1]
    curves = simulate_runs(factory, case.space, budget, case.convention, runs,
                           seed=seed * 1_000_003 + zlib.crc32(strategy.encode()), workers=jobs)
    best_ms, cost_s = stack(curves, budget)
    optimum = case.space.optimum_ms
    fractions = fraction_of_optimum(best_ms, optimum)
    times = time_points(case, budget)
    return Scored(
        strategy=strategy, runs=len(curves), budgets=budgets, fractions=summarise(at_budgets(fractions, list(budgets))),
        score=methodology_score(best_ms, cost_s, distribution(case.space, case.convention), seed=seed),
        curve=summarise(fractions), times_s=times,
        time_curve=summarise(fraction_of_optimum(best_at_times(best_ms, cost_s, times), optimum)),
        evaluations=float(np.mean([c.evaluations for c in curves])),
        near_optimum_cost=float(np.median(cost_to_reach(best_ms, cost_s, optimum / NEAR_OPTIMUM)))
        / brute_force_cost(case.space),
    )


def brute_force_cost(space: RecordedSpace) -> float:
    """The recorded compile + benchmark time of every configuration, as a brute-force search spends it."""
    cost = np.asarray(space.cost_s, dtype=float)
    return float(cost[np.isfinite(cost)].sum())


def time_points(case: Case, budget: int) -> np.ndarray:
    """Points of recorded time for the curves, the same for every strategy of a case: from the median cost of one
    configuration to what ``budget`` random draws cost on average, evenly spaced on a log scale."""
    cost = case.space.cost_s[np.isfinite(case.space.cost_s) & (case.space.cost_s > 0)]
    end = budget * distribution(case.space, case.convention).cost_per_draw_s
    if not len(cost) or not end > 0:
        return np.zeros(1)
    start = min(float(np.median(cost)), end / 10)
    return np.geomspace(start, end, TIME_POINTS)
