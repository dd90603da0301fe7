"""The methodology score P of a strategy's runs on a space, computed as the reference package computes it.

F.-J. Willemsen et al., "A methodology for comparing optimization algorithms for auto-tuning", Future Generation
Computer Systems, 2024; its package ``autotuning_methodology`` 1.1.0 with its default settings
(``experiments_defaults.json``): cut-offs 0.01 and 0.95, 1,000 points, confidence level 0.95. Each step below names
the package's class or function it follows. What the time of a run counts is the caller's
(:mod:`tuner.compare.harness`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.interpolate import PchipInterpolator
from sklearn.ensemble import BaggingRegressor
from sklearn.isotonic import IsotonicRegression

START_CUTOFF = 0.01
END_CUTOFF = 0.95
RESOLUTION = 1000
TIME_LIMIT_MARGIN = 0.1
"""How far past the axis' end the package lets a strategy run (``calculate_budget``'s ``cutoff_margin``)."""


class MethodologyError(ValueError):
    """The runs do not cover the axis as the package requires (it raises ValueError then too)."""


@dataclass(frozen=True)
class SpaceStatistics:
    """What the score needs of a space (``SearchspaceStatistics``): its ok times, ascending, and every
    configuration's time, failed ones included: the sum of the recording's time keys (compilation, validation,
    framework, the timed runs: :func:`tuner.recorded.space.cost_seconds`)."""

    times_ms: np.ndarray
    """The ok times, ascending (D)."""
    config_time_s: np.ndarray
    """Every configuration's time (s); ok and failed."""
    failed: np.ndarray
    """Per configuration of ``config_time_s``: whether it failed (has no time in D)."""

    @classmethod
    def of(cls, time_ms: np.ndarray, config_time_s: np.ndarray) -> SpaceStatistics:
        """From every configuration's time (ms, NaN where it failed) and its recorded time (s)."""
        time_ms = np.asarray(time_ms, dtype=float)
        failed = np.isnan(time_ms)
        return cls(np.sort(time_ms[~failed]), np.asarray(config_time_s, dtype=float), failed)

    @property
    def optimum_ms(self) -> float:
        return float(self.times_ms[0])

    @property
    def median_config_time_s(self) -> float:
        times = self.config_time_s[~np.isnan(self.config_time_s)]
        return float(np.median(times))

    @property
    def time_per_draw_s(self) -> float:
        """The mean time of one random draw (``mean_per_feval``)."""
        times = self.config_time_s
        if not self.failed.any():
            return float(np.mean(times[~np.isnan(times)]))
        return float(np.mean(times[~self.failed]) + self.failed.mean() * np.mean(times[self.failed]))

    def evaluations_to(self, cutoff: float) -> int:
        """Evaluations random search needs to come ``cutoff`` of the way from the median to the optimum
        (``cutoff_point``): with the target d₀ + (median(D) - d₀)(1 - cutoff) and i the first position in D worst
        first at or below it (one less where that is the optimum itself), ⌈i / (N + 1 - i)⌉."""
        worst_first = self.times_ms[::-1]
        n = len(worst_first)
        optimum = self.optimum_ms
        target = optimum + (float(np.median(self.times_ms)) - optimum) * (1 - cutoff)
        i = int(np.argmax(worst_first <= target))
        if cutoff != 1.0 and worst_first[i] == optimum:
            if i == 0:
                raise MethodologyError(f"the optimum is reached directly ({optimum})")
            i -= 1
        return math.ceil(i / (n + 1 - i))

    def axis_evaluations(self, start: float = START_CUTOFF, end: float = END_CUTOFF) -> tuple[float, float]:
        first: float = self.evaluations_to(start)
        last: float = self.evaluations_to(end)
        if last - first < 2:
            # the package widens a narrow axis this way; its bound is the optimum's time, as its code has it
            if first == 0:
                last = min(self.optimum_ms, last + 2)
            else:
                last = min(self.optimum_ms, last + 1)
                first -= 1
        if last - first == 0:
            raise MethodologyError("the axis' start and end cut-offs fall on the same number of evaluations")
        return first, last

    def time_axis(self, start: float = START_CUTOFF, end: float = END_CUTOFF,
                  resolution: int = RESOLUTION) -> np.ndarray:
        """From the start cut-off's evaluations to the end cut-off's (at least two apart,
        ``cutoff_point_fevals_time_start_end``) times the median time of a configuration, evenly spaced."""
        first, last = self.axis_evaluations(start, end)
        median = self.median_config_time_s
        return np.linspace(first * median if start > 0 else 0.0, last * median, resolution)

    def time_limit_s(self, end: float = END_CUTOFF) -> float:
        """How long a run goes on for the score: the axis' end and the package's margin."""
        return float(self.axis_evaluations(START_CUTOFF, end)[1] * self.median_config_time_s
                     * (1 + TIME_LIMIT_MARGIN))

    # --- the random baseline ---------------------------------------------------------------------------------

    def random_curve(self, evaluations: np.ndarray) -> np.ndarray:
        """r(k), the time at the expected rank of the best of k draws without replacement (each k ≥ 0):
        D worst first at min(N - 1, round(k (N + 1) / (k + 1)))."""
        worst_first = self.times_ms[::-1]
        n = len(worst_first)
        ks = np.asarray(evaluations)
        return np.array([worst_first[min(n - 1, round(int(k) * (n + 1) / (int(k) + 1)))] for k in ks])

    def random_curve_over_time(self, times_s: np.ndarray) -> np.ndarray:
        """r(k(t)) (``RandomSearchCalculatedBaseline``, without failures): k = round(max(t / c, 1)) evaluations,
        c the mean time of a draw; smoothed by monotone cubic (PCHIP) interpolation through the distinct k, read at
        evenly spaced k."""
        k = np.round(np.maximum(np.asarray(times_s) / self.time_per_draw_s, 1)).astype(int)
        draws = self.random_curve(k)
        if len(k) <= 2:
            return draws
        first = np.concatenate(([True], np.ediff1d(k) > 0)) if len(k) != len(np.unique(k)) else np.ones(len(k), bool)
        x, y = k[first], draws[first]
        if len(x) < 2:
            return draws
        return PchipInterpolator(x, y)(np.linspace(k[0], k[-1], len(k)))


@dataclass(frozen=True)
class MethodologyScore:
    """P averaged over the time axis, and the curve it averages."""

    score: float
    times_s: np.ndarray
    p: np.ndarray
    curve_ms: np.ndarray
    """s(t): the strategy's curve, a time of D at each point of the axis."""


def padded_runs(elapsed_s: Sequence[np.ndarray], best_ms: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Runs of unequal lengths as (evaluations × runs) arrays, NaN past each run's end and where its best is no
    ok time yet (``inf``), as the package stores them."""
    length = max((len(e) for e in elapsed_s), default=0)
    times = np.full((length, len(elapsed_s)), np.nan)
    values = np.full((length, len(elapsed_s)), np.nan)
    for run, (elapsed, best) in enumerate(zip(elapsed_s, best_ms, strict=True)):
        times[:len(elapsed), run] = elapsed
        values[:len(best), run] = np.where(np.isfinite(best), best, np.nan)
    return times, values


def strategy_curve(times: np.ndarray, values: np.ndarray, stats: SpaceStatistics, axis: np.ndarray,
                   seed: int = 0) -> np.ndarray:
    """s(t) of runs given as (evaluations × runs) cumulative times and best values (NaN where none), as
    ``StochasticOptimizationAlgorithm.get_curve_over_time`` makes it.

    Evaluations at which no run has an ok best are dropped; a run's last time counts only where it has a best.
    The stopping point: the smallest of the runs' last times above their median (else the axis' end). The points
    of all runs within the axis widened by a margin, pooled, become ranks in D (left insertion points), fitted by
    bagged non-increasing isotonic regressions (max(runs, 3) of them, each on a bootstrap sample of
    1 / √max(runs, 3) of the points), predicted on the axis, rounded half to even and read back as times; past the
    stopping point the curve is held. The package draws its samples from numpy's global generator; a
    ``RandomState(seed)`` draws the same numbers as that generator seeded with ``seed``."""
    keep = ~np.isnan(values).all(axis=1)
    times, values = times[keep].copy(), values[keep]
    repeats = values.shape[1]
    times[np.isnan(values)] = np.nan
    last = np.sort(np.nanmax(times, axis=0))
    later = last[np.nanmedian(last) < last]
    stop = float(later[0]) if len(later) else float(axis[-1])
    margin = TIME_LIMIT_MARGIN + 0.25 * (repeats / times.size)
    inside = (axis[0] * (1 - margin) <= times) & (times <= axis[-1] * (1 + margin))
    if not np.all(np.count_nonzero(inside, axis=0) > 1):
        raise MethodologyError("a run has fewer than two evaluations inside the time axis")
    times, values = np.where(inside, times, np.nan), np.where(inside, values, np.nan)
    rows = ~np.all(np.isnan(values), axis=1)
    times, values = times[rows], values[rows]
    both = ~np.isnan(times) & ~np.isnan(values)
    x, y = times[both], values[both]
    ranks = np.searchsorted(stats.times_ms, y, side="left").astype(float)
    ranks[(ranks < 0) | (ranks >= len(stats.times_ms))] = np.nan
    x, ranks = x[~np.isnan(ranks)], ranks[~np.isnan(ranks)]
    estimators = max(repeats, 3)
    fit = IsotonicRegression(increasing=False, y_min=ranks.min(), y_max=ranks.max(), out_of_bounds="clip")
    bagging = BaggingRegressor(fit, n_estimators=estimators, max_samples=1 / np.sqrt(estimators), bootstrap=True,
                               random_state=np.random.RandomState(seed))
    prediction = bagging.fit(x[:, None], ranks).predict(np.asarray(axis)[:, None])
    index = np.clip(np.round(prediction).astype(int), 0, len(stats.times_ms) - 1)
    curve = stats.times_ms[index]
    if stop < axis[-1]:
        if stop <= axis[0]:
            raise MethodologyError(f"the runs stop ({stop:.3g} s) before the time axis starts ({axis[0]:.3g} s)")
        hold = int(np.nonzero(axis > stop)[0][0])
        curve[hold:] = curve[hold]
    return curve


def methodology_score(elapsed_s: Sequence[np.ndarray], best_ms: Sequence[np.ndarray], stats: SpaceStatistics,
                      seed: int = 0, start: float = START_CUTOFF, end: float = END_CUTOFF,
                      resolution: int = RESOLUTION) -> MethodologyScore:
    """The score of runs given per run as cumulative time (s) and best time so far (ms, ``inf`` before the first
    ok configuration) at each evaluation: the mean over the axis of P(t) = (s(t) - r(t)) / (d₀ - r(t))
    (``get_strategy_scores``), 0 being random search's expected best and 1 the optimum."""
    axis = stats.time_axis(start, end, resolution)
    times, values = padded_runs(elapsed_s, best_ms)
    curve = strategy_curve(times, values, stats, axis, seed)
    baseline = stats.random_curve_over_time(axis)
    division = stats.optimum_ms - baseline
    if np.any(division == 0.0):
        raise MethodologyError("the random baseline reaches the optimum inside the time axis")
    p = (curve - baseline) / division
    return MethodologyScore(float(np.mean(p)), axis, p, curve)
