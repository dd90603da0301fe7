"""Scoring search strategies on recorded spaces: every strategy (ours, Optuna's samplers as ``optuna:<sampler>``,
Kernel Tuner's as ``kt:<strategy>``, :mod:`tuner.compare.kernel_tuner_peer`) run R times on every case (a space
under a convention, :mod:`tuner.compare.harness`): the fraction of the optimum after each budget, the methodology
score P (:mod:`tuner.compare.methodology`) and the performance curves, with random search always among them as the
baseline. What each number means: the README, "Comparing strategies on recorded spaces"."""

from __future__ import annotations

import contextlib
import os
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from tuner.compare import kernel_tuner_peer as kt
from tuner.compare.harness import BestSoFar, Convention, cost_per_draw, stack, statistics
from tuner.compare.methodology import MethodologyError, MethodologyScore, SpaceStatistics, methodology_score
from tuner.compare.schedule import Keeper, RunSet, run_sets
from tuner.compare.scoring import Summary, at_budgets, best_at_times, cost_to_reach, fraction_of_optimum, summarise
from tuner.errors import TunerError
from tuner.recorded import RecordedSpace
from tuner.strategies.catalog import OPTUNA, OURS, strategy_factory
from tuner.strategies.optuna_strategy import optuna_factory
from tuner.strategies.protocol import StrategyFactory

BASELINE = "random"
OPTUNA_PREFIX = "optuna:"
DEFAULT_BUDGETS = (100, 400, 1600)
DEFAULT_RUNS = 50
TIME_POINTS = 200
NEAR_OPTIMUM = 0.97
"""Within 3% of the optimum: the fraction of the optimum whose cost a comparison reports."""


def strategy_factories(names: list[str] | None = None) -> dict[str, StrategyFactory]:
    """The factories of the strategies named (every one of ours by default, :mod:`tuner.strategies.catalog`;
    ``optuna:<sampler>`` or a sampler's bare name for Optuna's), the baseline among them."""
    chosen = list(OURS) if not names else list(dict.fromkeys(names))
    factories: dict[str, StrategyFactory] = {}
    for name in chosen:
        sampler = name.removeprefix(OPTUNA_PREFIX)
        if name in OURS:
            factories[name] = strategy_factory(name)
        elif sampler in OPTUNA:
            factories[OPTUNA_PREFIX + sampler] = optuna_factory(sampler)
        else:
            raise TunerError(f"unknown strategy '{name}'; choose from {', '.join(OURS)}, or one of Optuna's samplers "
                             f"({', '.join(OPTUNA)}, also as optuna:<name>)")
    if BASELINE not in factories:
        factories[BASELINE] = strategy_factory(BASELINE)
    return factories


def optuna_names() -> list[str]:
    """Optuna's samplers that can run here (the GP sampler needs PyTorch)."""
    names = []
    for sampler in OPTUNA:
        try:
            optuna_factory(sampler)
        except TunerError:
            continue
        names.append(OPTUNA_PREFIX + sampler)
    return names


@dataclass(frozen=True, eq=False)
class Case:
    name: str
    space: RecordedSpace
    convention: Convention

    @property
    def label(self) -> str:
        """The space's name, marked where the case is convention (b) (side-by-side tables list both)."""
        return self.name if self.convention is Convention.VALID else f"{self.name} (b)"


@dataclass(frozen=True, eq=False)
class Scored:
    """One strategy's runs in one case, and what is made of them."""

    strategy: str
    runs: int
    budgets: tuple[int, ...]
    fractions: Summary
    """The fraction of the optimum after each budget."""
    score: MethodologyScore | None
    """The methodology score; None where the runs do not cover its time axis (``score_note`` says why)."""
    score_note: str
    curve: Summary
    """The fraction of the optimum after each evaluation (1 … the largest budget)."""
    times_s: np.ndarray
    time_curve: Summary
    """The fraction of the optimum at each of ``times_s``."""
    evaluations: float
    """The mean number of evaluations of a run of the largest budget (fewer where a run ended early)."""
    near_optimum_cost: float
    """The median run's recorded cost until its best is within NEAR_OPTIMUM of the optimum, as a fraction of
    what measuring every configuration costs (``inf`` where the median run does not get there in the budget)."""
    think_ms: float
    """The strategy's own mean time per evaluation (ms) in its scoring runs."""
    made_runs: int = 0
    """Every run made of the strategy in the case: the budgets' and the methodology score's."""
    cut_runs: dict[str, int] = field(default_factory=dict)
    """Of those, how many were cut short of their budget, by reason (:data:`tuner.compare.harness.STALLED`, or
    Kernel Tuner's real-time cap, :mod:`tuner.compare.kernel_tuner_bound`)."""

    @property
    def p(self) -> float:
        return self.score.score if self.score is not None else float("nan")


@dataclass(frozen=True, eq=False)
class CaseResult:
    case: Case
    optimum_ms: float
    scored: dict[str, Scored]


Progress = Callable[[str], None]
Runner = Callable[[int | None, float | None, int], list[BestSoFar]]
"""Makes runs: (budget in evaluations or None, time limit in s or None, number of runs) → runs."""


def compare(spaces: dict[str, RecordedSpace], strategies: dict[str, StrategyFactory],
            budgets: tuple[int, ...] = DEFAULT_BUDGETS, conventions: tuple[Convention, ...] = tuple(Convention),
            runs: int = DEFAULT_RUNS, seed: int = 0, jobs: int | None = None,
            progress: Progress | None = None, peers: list[str] | None = None,
            score_runs: int | None = None, peer_runs: int | None = None,
            kept: Keeper | None = None) -> list[CaseResult]:
    """Every strategy in every case, spaces in order, each under each convention; ``peers``: Kernel Tuner's
    strategies (under each convention too), ``peer_runs`` runs of each (default ``runs``); ``score_runs``: runs for
    the methodology score (default ``runs``). Every run of every strategy and case shares one pool of ``jobs``
    processes (:mod:`tuner.compare.schedule`); ``kept``: where each set of runs is kept as it ends, and taken from
    when an earlier comparison kept it."""
    budgets = tuple(sorted(set(budgets)))
    if not budgets or budgets[0] < 1:
        raise TunerError(f"budgets must be whole numbers ≥ 1, not {budgets}")
    if min(runs, score_runs or runs, peer_runs or runs) < 2:
        raise TunerError("--repeats must be at least 2 (quartiles and spreads need several runs)")
    entries: list[tuple[Case, str, bool, int]] = []
    sets: list[RunSet] = []
    for name, space in spaces.items():
        for convention in conventions:
            case = Case(name, space, convention)
            for strategy, factory in strategies.items():
                entries.append((case, strategy, False, runs))
                sets += [RunSet(name, convention, strategy, budget, limit, count,
                                seed * 1_000_003 + zlib.crc32(strategy.encode()) + (7919 if limit is not None else 0),
                                factory=factory)
                         for budget, limit, count in requested_runs(case, False, budgets, runs, score_runs or runs)]
            if peers:
                for peer in peers:
                    entries.append((case, kt.PREFIX + peer, True, peer_runs or runs))
                    sets += [RunSet(name, convention, kt.PREFIX + peer, budget, limit, count,
                                    seed * 1_000_003 + zlib.crc32(peer.encode()) + (budget or 7919), peer=peer)
                             for budget, limit, count in requested_runs(case, True, budgets, peer_runs or runs,
                                                                        score_runs or runs)]
    if progress is not None:
        progress(f"{sum(s.runs for s in sets):,} runs of {len(entries)} strategies and cases over "
                 f"{jobs or os.cpu_count()} processes")
    made = dict(zip(((s.space, s.convention, s.strategy, s.budget, s.time_limit_s) for s in sets),
                    run_sets(sets, spaces, jobs, progress, kept), strict=True))
    found: dict[Case, dict[str, Scored]] = {}
    for case, strategy, knows_budget, count in entries:
        def run(budget: int | None, time_limit_s: float | None, _: int, case: Case = case,
                strategy: str = strategy) -> list[BestSoFar]:
            return made[(case.name, case.convention, strategy, budget, time_limit_s)]

        found.setdefault(case, {})[strategy] = score(case, strategy, run, knows_budget, budgets, count,
                                                     score_runs or runs, seed)
    return [CaseResult(case, case.space.optimum_ms, scored) for case, scored in found.items()]


def requested_runs(case: Case, knows_budget: bool, budgets: tuple[int, ...], runs: int,
                   score_runs: int) -> list[tuple[int | None, float | None, int]]:
    """The runs :func:`score` asks of a strategy in a case, as (budget, time limit, runs): the largest budget's,
    each smaller budget's where the strategy knows its budget, and the methodology score's until the time axis'
    end and its margin (none where the space has no axis)."""
    asked: list[tuple[int | None, float | None, int]] = [(budgets[-1], None, runs)]
    if knows_budget:
        asked += [(budget, None, runs) for budget in budgets[:-1]]
    with contextlib.suppress(MethodologyError):
        asked.append((None, statistics(case.space).time_limit_s(), score_runs))
    return asked


def score(case: Case, strategy: str, runner: Runner, knows_budget: bool, budgets: tuple[int, ...], runs: int,
          score_runs: int, seed: int) -> Scored:
    """A strategy's scores in a case; ``knows_budget``: whether each budget needs runs of its own."""
    made: list[BestSoFar] = []

    def run(budget: int | None, time_limit_s: float | None, count: int) -> list[BestSoFar]:
        found = runner(budget, time_limit_s, count)
        made.extend(found)
        return found

    largest = budgets[-1]
    curves = run(largest, None, runs)
    best_ms, cost_s = stack(curves, largest)
    optimum = case.space.optimum_ms
    fractions = fraction_of_optimum(best_ms, optimum)
    at = at_budgets(fractions, list(budgets))
    if knows_budget:
        for i, budget in enumerate(budgets[:-1]):
            own, _ = stack(run(budget, None, runs), largest)
            at[:, i] = fraction_of_optimum(own[:, budget - 1], optimum)
    times = time_points(case, largest)
    stats = statistics(case.space)
    p_score, note, think_ms = _methodology(run, stats, score_runs, seed)
    return Scored(
        strategy=strategy, runs=len(curves), budgets=budgets, fractions=summarise(at), score=p_score,
        score_note=note, curve=summarise(fractions), times_s=times,
        time_curve=summarise(fraction_of_optimum(best_at_times(best_ms, cost_s, times), optimum)),
        evaluations=float(np.mean([c.evaluations for c in curves])),
        near_optimum_cost=float(np.median(cost_to_reach(best_ms, cost_s, optimum / NEAR_OPTIMUM)))
        / brute_force_cost(case.space), think_ms=think_ms,
        made_runs=len(made), cut_runs=dict(Counter(c.cut for c in made if c.cut)),
    )


def _methodology(run: Runner, stats: SpaceStatistics, count: int,
                 seed: int) -> tuple[MethodologyScore | None, str, float]:
    """The methodology score of ``count`` runs that go on until the time axis' end and its margin, and the
    strategy's own mean time per evaluation in them (ms)."""
    try:
        limit = stats.time_limit_s()
    except MethodologyError as exc:
        return None, str(exc), float("nan")
    curves = run(None, limit, count)
    evaluations = sum(c.evaluations for c in curves)
    think = sum(float(c.elapsed_s[-1] - c.cost_s[-1]) for c in curves if c.evaluations)
    think_ms = 1000 * think / evaluations if evaluations else float("nan")
    try:
        return methodology_score([c.elapsed_s for c in curves], [c.best_ms for c in curves], stats,
                                 seed=seed), "", think_ms
    except MethodologyError as exc:
        return None, str(exc), think_ms


def brute_force_cost(space: RecordedSpace) -> float:
    """The recorded compile + benchmark time of every configuration, as a brute-force search spends it."""
    cost = np.asarray(space.cost_s, dtype=float)
    return float(cost[np.isfinite(cost)].sum())


def time_points(case: Case, budget: int) -> np.ndarray:
    """Points of recorded time for the curves, the same for every strategy of a case: from the median cost of one
    configuration to what ``budget`` random draws cost on average, evenly spaced on a log scale."""
    cost = case.space.cost_s[np.isfinite(case.space.cost_s) & (case.space.cost_s > 0)]
    end = budget * cost_per_draw(case.space, case.convention)
    if not len(cost) or not end > 0:
        return np.zeros(1)
    start = min(float(np.median(cost)), end / 10)
    return np.geomspace(start, end, TIME_POINTS)
