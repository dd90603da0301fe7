"""Scores of search runs: fraction of the optimum and performance bands."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tuner.compare import scoring

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
