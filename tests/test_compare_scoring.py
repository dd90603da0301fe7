"""Scores of search runs: fraction of the optimum, performance bands and the methodology score."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tuner.compare import scoring
from tuner.compare.scoring import Distribution

INF = math.inf


def test_fraction_of_optimum_at_budgets_with_its_spread():
    best = np.array([[10.0, 5.0, 4.0, 4.0],
                     [INF, 8.0, 8.0, 2.0],
                     [INF, INF, INF, INF]])
    fractions = scoring.fraction_of_optimum(scoring.at_budgets(best, [1, 2, 4, 100]), optimum_ms=2.0)
    assert fractions.tolist() == [[0.2, 0.4, 0.5, 0.5], [0.0, 0.25, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]]
    summary = scoring.summarise(fractions)
    assert summary.mean.tolist() == pytest.approx([0.2 / 3, 0.65 / 3, 0.5, 0.5])
    assert summary.std[2] == pytest.approx(0.5)  # n-1: the sample standard deviation of 0.5, 1, 0
    assert summary.median.tolist() == [0.0, 0.25, 0.5, 0.5]
    assert summary.iqr[2] == pytest.approx(0.5)


def test_best_at_times_follows_each_runs_cumulative_cost():
    best = np.array([[9.0, 7.0, 3.0], [5.0, 5.0, 1.0]])
    cost = np.array([[1.0, 2.0, 10.0], [4.0, 5.0, 6.0]])
    at = scoring.best_at_times(best, cost, np.array([0.5, 1.0, 3.0, 5.0, 20.0]))
    assert at.tolist() == [[INF, 9.0, 7.0, 7.0, 3.0], [INF, INF, INF, 5.0, 1.0]]


def test_the_cost_to_reach_a_time_is_each_runs_cumulative_cost_at_its_first_evaluation_there():
    best = np.array([[9.0, 7.0, 3.0], [5.0, 5.0, 1.0], [9.0, 9.0, 9.0]])
    cost = np.array([[1.0, 2.0, 10.0], [4.0, 5.0, 6.0], [1.0, 2.0, 3.0]])
    assert scoring.cost_to_reach(best, cost, 5.0).tolist() == [10.0, 4.0, INF]


@pytest.fixture
def dist() -> Distribution:
    """Ten ok times 1 … 10 ms, two failures; each configuration costs 2 s, the failures 1 s."""
    times = np.array([5, 3, np.nan, 1, 2, 8, 9, 4, 6, np.nan, 7, 10], dtype=float)
    cost = np.where(np.isnan(times), 1.0, 2.0)
    return Distribution.of(times, cost)


def test_the_distribution_of_a_space(dist):
    assert dist.times_ms.tolist() == list(range(1, 11))
    assert dist.failed == 0  # the methodology's baseline leaves failures out
    assert dist.optimum_ms == 1.0
    assert dist.axis_unit_s == 2.0
    assert dist.cost_per_draw_s == pytest.approx(2.0 + 2 / 12)  # ok mean + failed fraction × failed mean


def test_the_random_baseline_reads_the_expected_rank_of_the_best_of_k_draws(dist):
    # index round(k (N+1) / (k+1)) into the times worst first (N = 10): k=1 → 5.5 → 6 (even), k=3 → 8.25 → 8
    assert dist.random_curve(np.array([1, 2, 3, 9, 100])).tolist() == [4.0, 3.0, 2.0, 1.0, 1.0]

def test_under_the_product_convention_the_baseline_counts_failed_and_absent_draws():
    counted = Distribution.of(np.array([1.0, 2.0, np.nan, np.nan]), np.ones(4), absent=6, product=True)
    assert counted.failed == 8
    assert np.isnan(counted.worst_first[:8]).all() and counted.worst_first[8:].tolist() == [2.0, 1.0]
    assert counted.random_curve(np.array([3, 9])).tolist() == [2.0, 1.0]  # indices 8.25 → 8, 9.9 → 9
    assert math.isnan(counted.random_curve(np.array([1]))[0])  # 5.5 → 6: most likely no success yet
    assert counted.cost_per_draw_s == counted.axis_unit_s == pytest.approx(4 / 10)  # absent draws cost nothing


def test_the_axes_run_between_the_cut_offs(dist):
    # median 5.5, optimum 1: the cut-off 0.5 targets 3.25, first reached at position 7 of the worst-first
    # times → ⌈7 / (11 - 7)⌉ = 2 evaluations; 0.96 targets 1.18 → position 9 → 5 evaluations
    assert dist.evaluations_to(0.5) == 2 and dist.evaluations_to(0.96) == 5
    assert dist.evaluation_axis().tolist() == [2, 3, 4]
    times = dist.time_axis(resolution=5)
    assert times.tolist() == pytest.approx([4.0, 5.5, 7.0, 8.5, 10.0])


def test_the_strategy_curve_over_evaluations_is_the_median_rank_of_the_runs(dist):
    best = np.array([[9.0, 4.0, 2.0], [INF, 6.0, 1.0], [8.0, 5.0, 1.0]])
    # ranks at 1: 8, -, 7 → median 7.5 → 8 (half to even) → 9 ms; at 2: 3, 5, 4 → 5 ms; at 3: 1, 0, 0 → 1 ms
    assert scoring.curve_over_evaluations(best, dist, np.array([1, 2, 3, 7])).tolist() == [9.0, 5.0, 1.0, 1.0]


def test_p_is_zero_on_the_baseline_and_one_at_the_optimum(dist):
    baseline = dist.random_curve(np.array([2, 3]))
    assert scoring.standardised(baseline, baseline, 1.0).tolist() == [0.0, 0.0]
    assert scoring.standardised(np.ones(2), baseline, 1.0).tolist() == [1.0, 1.0]
    assert scoring.standardised(np.array([2.0]), np.array([3.0]), 1.0).tolist() == [0.5]


def test_the_methodology_score_of_runs_that_find_the_optimum_at_once_is_one():
    dist = Distribution.of(np.arange(1.0, 101.0), np.ones(100))
    best = np.ones((5, 40))
    cost = np.cumsum(np.ones((5, 40)), axis=1)
    score = scoring.methodology_score(best, cost, dist, resolution=50)
    assert score.evaluations.tolist() == list(range(3, 33))
    assert score.times_s.tolist() == pytest.approx(np.linspace(3, 33, 50).tolist())
    assert score.over_evaluations == 1.0
    assert score.over_time == 1.0


def test_the_time_curve_holds_after_the_runs_stop(dist):
    best = np.array([[6.0, 3.0, 2.0], [7.0, 4.0, 2.0], [6.0, 3.0, 2.0]])
    cost = np.array([[2.0, 4.0, 6.0], [2.0, 4.0, 6.0], [2.0, 4.0, 6.0]])
    times = np.linspace(2.0, 12.0, 11)
    curve = scoring.curve_over_time(best, cost, dist, times)
    assert np.all(np.diff(curve) <= 0)
    assert curve[0] >= 5.0 and curve[-1] <= 3.0
    assert np.all(curve[times > 6.0] == curve[np.searchsorted(times, 6.0, side="right")])


def test_the_random_baseline_over_time_converts_time_to_draws(dist):
    per_draw = dist.cost_per_draw_s
    times = per_draw * np.array([0.2, 1.0, 2.0, 3.0, 9.0])
    curve = dist.random_curve_over_time(times)
    assert curve[0] == pytest.approx(dist.random_curve(np.array([1]))[0])
    assert curve[-1] == pytest.approx(dist.random_curve(np.array([9]))[0])
    assert np.all(np.diff(curve) <= 0)
