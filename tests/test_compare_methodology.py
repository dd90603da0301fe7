"""The methodology score P as the reference package computes it: the space's statistics, the random baseline,
the strategy curve, and agreement with the package itself."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tuner.compare.harness import simulate_runs, statistics
from tuner.compare.methodology import MethodologyError, SpaceStatistics, methodology_score
from tuner.recorded import load_recorded
from tuner.strategies.local_search import IteratedLocalSearch
from tuner.strategies.uniform import RandomSearch

RECORDED = Path(__file__).resolve().parents[1] / "experiments" / "data" / "recorded"


@pytest.fixture
def stats() -> SpaceStatistics:
    """Ten ok times 1 … 10 ms and two failures; each ok configuration takes 2 s, each failure 1 s."""
    times = np.array([5, 3, np.nan, 1, 2, 8, 9, 4, 6, np.nan, 7, 10], dtype=float)
    return SpaceStatistics.of(times, np.where(np.isnan(times), 1.0, 2.0))


def test_the_statistics_of_a_space(stats):
    assert stats.times_ms.tolist() == list(range(1, 11)) and stats.optimum_ms == 1.0
    assert stats.median_config_time_s == 2.0  # of every configuration, failed ones included
    assert stats.time_per_draw_s == pytest.approx(2.0 + 2 / 12 * 1.0)  # ok mean + failed share × failed mean


def test_the_axis_runs_from_the_start_cut_off_to_the_end_cut_off(stats):
    # median 5.5: the cut-off 0.95 targets 1.225, first reached at position 9 of the worst-first times, which is
    # the optimum, so position 8 → ⌈8 / (11 - 8)⌉ = 3 evaluations; 0.01 targets 5.455 → position 5 → 1
    assert stats.evaluations_to(0.95) == 3 and stats.evaluations_to(0.01) == 1
    assert stats.axis_evaluations() == (1, 3)
    assert stats.time_axis(resolution=5).tolist() == pytest.approx([2.0, 3.0, 4.0, 5.0, 6.0])
    assert stats.time_limit_s() == pytest.approx(6.6)


def test_the_random_baseline_reads_the_expected_rank_of_the_best_of_k_draws(stats):
    # position round(k (N+1) / (k+1)) of the times worst first (N = 10): k=1 → 5.5 → 6 (half to even), k=3 → 8
    assert stats.random_curve(np.array([1, 2, 3, 9, 100])).tolist() == [4.0, 3.0, 2.0, 1.0, 1.0]
    # at least one draw; then read through a monotone cubic at evenly spaced draws: 1, 1⅔, 2⅓, 3
    over_time = stats.random_curve_over_time(stats.time_per_draw_s * np.array([0.2, 1.0, 2.0, 3.0]))
    assert over_time.tolist() == pytest.approx([4.0, 10 / 3, 8 / 3, 2.0])


def test_runs_that_find_the_optimum_at_once_score_one_and_random_draws_near_zero():
    stats = SpaceStatistics.of(np.arange(1.0, 201.0), np.ones(200))
    elapsed = [np.arange(1.0, 61.0)] * 5
    assert methodology_score(elapsed, [np.ones(60)] * 5, stats, resolution=50).score == 1.0
    rng = np.random.default_rng(0)
    draws = [np.minimum.accumulate(rng.permutation(200)[:60] + 1.0) for _ in range(200)]
    assert abs(methodology_score([np.arange(1.0, 61.0)] * 200, draws, stats).score) < 0.15


def test_the_curve_holds_after_the_runs_stop_and_runs_outside_the_axis_are_refused():
    stats = SpaceStatistics.of(np.arange(1.0, 201.0), np.ones(200))
    axis = stats.time_axis()
    short = [np.arange(1.0, 9.0)] * 4  # every run stops at 8 s, inside the axis
    best = [np.array([50.0, 40, 30, 20, 10, 8, 6, 5])] * 4
    score = methodology_score(short, best, stats)
    held = score.curve_ms[axis > 8.0]
    assert np.all(held == held[0]) and np.all(np.diff(score.curve_ms) <= 0)
    with pytest.raises(MethodologyError, match="fewer than two evaluations"):
        methodology_score([np.array([1e6, 2e6])] * 3, [np.array([5.0, 4.0])] * 3, stats)


@pytest.mark.slow
def test_p_agrees_with_the_methodology_package_on_the_convolution_a100_space(tmp_path):
    pytest.importorskip("autotuning_methodology", reason="the methodology package is not installed "
                        "(pip install autotuning_methodology)")
    from benchmarks.compare_strategies import package_score, package_statistics

    path = RECORDED / "convolution_A100.json.gz"
    space = load_recorded(path)
    ours = statistics(space)
    theirs = package_statistics(path, tmp_path)
    assert np.array_equal(ours.times_ms, theirs.objective_performances_total_sorted)
    assert ours.time_axis() == pytest.approx(np.linspace(*theirs.cutoff_point_fevals_time_start_end(0.01, 0.95)[2:],
                                                         1000))
    limit = ours.time_limit_s()
    for factory in (RandomSearch, IteratedLocalSearch):
        runs = simulate_runs(factory, space, None, "valid", runs=8, seed=5, workers=1, time_limit_s=limit)
        score = methodology_score([r.elapsed_s for r in runs], [r.best_ms for r in runs], ours, seed=3).score
        expected = package_score(runs, theirs, tmp_path, factory.__name__, seed=3)
        assert math.isfinite(score) and score == pytest.approx(expected, abs=1e-12)
