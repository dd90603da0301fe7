"""The scores of the auto-tuning literature, as pure functions of best-so-far curves.

Runs come as arrays of shape (runs × evaluations): ``best_ms``, the best time found so far (``inf`` before the
first success), and ``cost_s``, the cumulative recorded cost (:func:`tuner.compare.harness.stack`).

Fraction of the optimum (R. Schoonhoven, B. van Werkhoven, K. J. Batenburg, "Benchmarking optimization
algorithms for auto-tuning GPU kernels", IEEE TEVC 2022): the optimum time over the best time found after b
evaluations, per run (0 for a run without a success), summarised over runs by mean, standard deviation (n-1, as
their ``statistics.stdev``), quartiles and inter-quartile range. Performance curves are the same quartiles at
every evaluation, or at every point of a time axis (:func:`best_at_times`).

Methodology score P (F.-J. Willemsen, R. Schoonhoven, J. Filipovič, J. O. Tørring, R. van Nieuwpoort,
B. van Werkhoven, "A methodology for comparing optimization algorithms for auto-tuning", Future Generation
Computer Systems, 2024; github.com/AutoTuningAssociation/autotuning_methodology at b0075f8, whose functions are
named below). Let D be the times of the configurations that ran ok, ascending (d₀ the optimum), F the failed
candidates the baseline counts and N = |D| + F; W is D worst first, preceded by F missing values.

* Random baseline after k evaluations: r(k) = W[min(N-1, round(k(N+1)/(k+1)))], the time whose rank is the
  expected rank (N+1)/(k+1) of the best of k draws without replacement (``RandomSearchCalculatedBaseline``).
  They count no failures (F = 0, ``include_nan=False``); under the product convention F is every candidate
  without a time, failed or absent (their ``include_nan=True``), and the cut-offs below are found in W with
  its failures too (theirs always leave failures out), so the axes cover the draws spent on failures.
* Axis range: the target of a cut-off p is d₀ + (median(D) - d₀)(1-p); with i the first position in W at or
  below it, random search needs ⌈i / (N+1-i)⌉ evaluations (``SearchspaceStatistics.cutoff_point``). The
  evaluation axis runs from the start cut-off's count to the end cut-off's, end excluded; the time axis is
  ``resolution`` evenly spaced points between those counts times the median recorded cost of a configuration
  (under the product convention: times the mean cost of a draw, :meth:`Distribution.of` says why).
  Defaults: start 0.5, end 0.96, resolution 1000, the settings of their paper's evaluation
  (``experiment_files/methodology_paper_evaluation.json``).
* Strategy curve over evaluations: at each k the median over runs of the rank of the run's best in D (a run
  without a success does not count), rounded half to even, read back as a time (``get_curve_over_fevals``).
* Strategy curve over time: the (cumulative cost, rank of best) points of all runs between 0.9 × the first time
  and 1.1 × the last, pooled evaluation by evaluation, are fitted by bagged non-increasing isotonic regressions
  (scikit-learn's ``BaggingRegressor``: max(runs, 3) regressions, each on a bootstrap sample of 1/√regressions
  of the points, bounded by the ranks observed), evaluated on the time axis, rounded and read back as times;
  from the median over runs of each run's last time on, the curve is held (``get_curve_over_time``, whose
  curve is the bagged prediction). Theirs draws its bootstrap samples unseeded; here they take a seed, and the
  same random state gives the same curve.
* Random baseline over time: at time t, k(t) = round(max(t / c, 1)) evaluations, c the cost of one random draw
  (the mean cost of the ok configurations plus the failed fraction times the mean cost of the failed ones,
  ``mean_per_feval``; under the product convention the mean cost of a draw), r(k(t)) then smoothed by monotone
  cubic (PCHIP) interpolation through the distinct k, read at evenly spaced k (``_get_random_curve``).
* P(x) = (s(x) - r(x)) / (d₀ - r(x)): 0 is the baseline r, 1 the optimum; the score is its mean over the axis
  (``get_strategy_scores``, which reports the time axis; the evaluation axis is scored the same way here).
  The baseline is not what random search itself scores: the median of the runs' best ranks lies below the
  expected rank r(k) reads, so on the evaluation axis uniform random search scores about 0.2 (500 runs on
  either GEMM recording, under either convention), while the time axis' fit, nearer a mean, puts it near 0.

Where this differs from running their package: runs shorter than the axis are held at their last evaluation
(they extend a curve the same way past its real stopping point); the time axis counts the recorded cost
(:mod:`tuner.recorded`), which leaves out the search's own time, while theirs adds the strategy time that
Kernel Tuner measures while simulating.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.interpolate import PchipInterpolator
from sklearn.ensemble import BaggingRegressor
from sklearn.isotonic import IsotonicRegression

START_CUTOFF = 0.5
END_CUTOFF = 0.96
RESOLUTION = 1000
TIME_MARGIN = 0.1


# --- fraction of the optimum and performance curves ------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    """Statistics over runs, one value per column (budget, evaluation or time point)."""

    mean: np.ndarray
    std: np.ndarray
    q25: np.ndarray
    median: np.ndarray
    q75: np.ndarray

    @property
    def iqr(self) -> np.ndarray:
        return self.q75 - self.q25


def summarise(values: np.ndarray) -> Summary:
    """Mean, standard deviation (n-1) and quartiles of (runs × columns) values."""
    values = np.asarray(values, dtype=float)
    std = values.std(axis=0, ddof=1) if len(values) > 1 else np.full(values.shape[1], np.nan)
    q25, median, q75 = np.percentile(values, [25, 50, 75], axis=0)
    return Summary(values.mean(axis=0), std, q25, median, q75)


def fraction_of_optimum(best_ms: np.ndarray, optimum_ms: float) -> np.ndarray:
    """optimum / best, elementwise; 0 where nothing ran ok yet."""
    return optimum_ms / np.asarray(best_ms, dtype=float)


def at_budgets(curves: np.ndarray, budgets: list[int] | np.ndarray) -> np.ndarray:
    """The (runs × budgets) values after b evaluations (1-based); beyond a curve's end, its last value."""
    columns = np.minimum(np.asarray(budgets, dtype=np.int64), curves.shape[1]) - 1
    return np.asarray(curves)[:, columns]


def best_at_times(best_ms: np.ndarray, cost_s: np.ndarray, times_s: np.ndarray) -> np.ndarray:
    """The (runs × times) best time found within each cumulative cost; ``inf`` before the first evaluation."""
    out = np.full((len(best_ms), len(times_s)), np.inf)
    for run, (best, cost) in enumerate(zip(best_ms, cost_s, strict=True)):
        last = np.searchsorted(cost, times_s, side="right") - 1
        out[run, last >= 0] = best[last[last >= 0]]
    return out


def cost_to_reach(best_ms: np.ndarray, cost_s: np.ndarray, target_ms: float) -> np.ndarray:
    """Per run, the cumulative recorded cost at its first evaluation whose best time is ≤ ``target_ms``; ``inf``
    for a run that never gets there."""
    reached = np.asarray(best_ms) <= target_ms
    first = reached.argmax(axis=1)
    at_first = np.asarray(cost_s)[np.arange(len(reached)), first]
    return np.where(reached.any(axis=1), at_first, np.inf)


# --- the methodology score ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Distribution:
    """What the methodology score needs of a space: its ok times and the cost of its configurations."""

    times_ms: np.ndarray
    """The ok times, ascending."""
    failed: int
    """Candidates without a time that the random baseline counts."""
    axis_unit_s: float
    """The cost of one evaluation that scales the time axis."""
    cost_per_draw_s: float
    """The cost of one random draw, that turns time into draws for the baseline."""

    @classmethod
    def of(cls, time_ms: np.ndarray, cost_s: np.ndarray, absent: int = 0, product: bool = False) -> Distribution:
        """From every recorded configuration's time (NaN unless ok) and cost.

        As the methodology has it, the baseline counts no failures, the time axis is scaled by the median
        recorded cost and a draw costs the mean cost of the ok configurations plus the failed fraction times the
        mean cost of the failed ones. Under the ``product`` convention, with ``absent`` candidates missing from
        the recording (they cost nothing), the baseline counts failed and absent candidates, and both the axis
        and a draw take the mean cost of a draw from the product. Where most draws miss the recording (78% on
        the GEMM spaces) the median draw costs 0, and the methodology's formula, which adds the failures' cost
        to the whole mean cost of an ok configuration, would overstate a draw's cost there about fivefold.
        """
        time_ms, cost_s = np.asarray(time_ms, dtype=float), np.asarray(cost_s, dtype=float)
        ok = ~np.isnan(time_ms)
        times = np.sort(time_ms[ok])
        if product:
            per_draw = float(cost_s.sum() / (len(cost_s) + absent))
            return cls(times, int((~ok).sum()) + absent, per_draw, per_draw)
        per_draw = float(cost_s[ok].mean() + cost_s[~ok].sum() / len(cost_s))
        return cls(times, 0, float(np.median(cost_s)), per_draw)

    @property
    def optimum_ms(self) -> float:
        return float(self.times_ms[0])

    @property
    def worst_first(self) -> np.ndarray:
        return np.concatenate((np.full(self.failed, np.nan), self.times_ms[::-1]))

    def random_curve(self, evaluations: np.ndarray) -> np.ndarray:
        """r(k): the random-search baseline after k evaluations."""
        worst_first = self.worst_first
        n = len(worst_first)
        k = np.asarray(evaluations, dtype=float)
        return worst_first[np.minimum(n - 1, np.rint(k * (n + 1) / (k + 1)).astype(np.int64))]

    def evaluations_to(self, cutoff: float) -> int:
        """Evaluations random search needs to come ``cutoff`` of the way from the median to the optimum."""
        target = self.optimum_ms + (np.median(self.times_ms) - self.optimum_ms) * (1 - cutoff)
        worst_first = self.worst_first
        i = int(np.argmax(worst_first <= target))
        return math.ceil(i / (len(worst_first) + 1 - i))

    def evaluation_axis(self, start: float = START_CUTOFF, end: float = END_CUTOFF) -> np.ndarray:
        return np.arange(self.evaluations_to(start), self.evaluations_to(end))

    def time_axis(self, start: float = START_CUTOFF, end: float = END_CUTOFF,
                  resolution: int = RESOLUTION) -> np.ndarray:
        return np.linspace(self.evaluations_to(start) * self.axis_unit_s,
                           self.evaluations_to(end) * self.axis_unit_s, resolution)

    def random_curve_over_time(self, times_s: np.ndarray) -> np.ndarray:
        """r(k(t)), smoothed as the methodology does."""
        k = np.rint(np.maximum(np.asarray(times_s) / self.cost_per_draw_s, 1)).astype(np.int64)
        draws = self.random_curve(k)
        first = np.concatenate(([True], np.diff(k) > 0))
        if len(k) <= 2 or first.sum() < 2:
            return draws
        return PchipInterpolator(k[first], draws[first])(np.linspace(k[0], k[-1], len(k)))

    def ranks(self, best_ms: np.ndarray) -> np.ndarray:
        """The position of each best time in the ok times; NaN where nothing ran ok yet."""
        ranks = np.searchsorted(self.times_ms, best_ms, side="left").astype(float)
        ranks[ranks >= len(self.times_ms)] = np.nan
        return ranks


def curve_over_evaluations(best_ms: np.ndarray, dist: Distribution, evaluations: np.ndarray) -> np.ndarray:
    """s(k): the time at the median rank over runs of their best after k evaluations."""
    ranks = dist.ranks(at_budgets(best_ms, evaluations))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # where no run has succeeded yet, the median is NaN
        median = np.nanmedian(ranks, axis=0)
    return _times_at(dist, median)


def curve_over_time(best_ms: np.ndarray, cost_s: np.ndarray, dist: Distribution, times_s: np.ndarray,
                    seed: int = 0) -> np.ndarray:
    """s(t): a bagged non-increasing fit of the runs' ranks against their cumulative cost, held after they stop."""
    ranks = dist.ranks(best_ms)
    cost_s = np.asarray(cost_s, dtype=float)
    ok = ~np.isnan(ranks)
    inside = ok & (cost_s >= times_s[0] * (1 - TIME_MARGIN)) & (cost_s <= times_s[-1] * (1 + TIME_MARGIN))
    if not inside.any():
        return np.full(len(times_s), np.nan)
    x, y = cost_s.T[inside.T], ranks.T[inside.T]  # evaluation-major, the order their bootstrap draws from
    estimators = max(len(best_ms), 3)
    fit = IsotonicRegression(increasing=False, y_min=y.min(), y_max=y.max(), out_of_bounds="clip")
    samples = max(int(len(x) / math.sqrt(estimators)), 1)  # a fraction 1/√estimators of the points
    bagging = BaggingRegressor(fit, n_estimators=estimators, max_samples=samples, bootstrap=True,
                               random_state=seed)
    curve = _times_at(dist, bagging.fit(x[:, None], y).predict(np.asarray(times_s)[:, None]))
    last = np.where(ok, cost_s, -np.inf).max(axis=1)
    stopped = np.median(last[ok.any(axis=1)])
    hold = int(np.searchsorted(times_s, stopped, side="right"))
    if hold < len(times_s):
        curve[hold:] = curve[hold]
    return curve


def standardised(curve: np.ndarray, baseline: np.ndarray, optimum_ms: float) -> np.ndarray:
    """P(x) = (s(x) - r(x)) / (optimum - r(x))."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (np.asarray(curve) - baseline) / (optimum_ms - np.asarray(baseline))


@dataclass(frozen=True)
class MethodologyScore:
    """P averaged over each axis, and the curves it averages."""

    over_evaluations: float
    over_time: float
    evaluations: np.ndarray
    p_evaluations: np.ndarray
    times_s: np.ndarray
    p_time: np.ndarray


def methodology_score(best_ms: np.ndarray, cost_s: np.ndarray, dist: Distribution,
                      start: float = START_CUTOFF, end: float = END_CUTOFF, resolution: int = RESOLUTION,
                      seed: int = 0) -> MethodologyScore:
    """The methodology score of a strategy's runs on the evaluation and the time axis (``seed``: the time
    curve's bootstrap samples)."""
    evaluations = dist.evaluation_axis(start, end)
    times_s = dist.time_axis(start, end, resolution)
    p_evaluations = standardised(curve_over_evaluations(best_ms, dist, evaluations),
                                 dist.random_curve(evaluations), dist.optimum_ms)
    p_time = standardised(curve_over_time(best_ms, cost_s, dist, times_s, seed),
                          dist.random_curve_over_time(times_s), dist.optimum_ms)
    return MethodologyScore(float(np.mean(p_evaluations)), float(np.mean(p_time)), evaluations, p_evaluations,
                            times_s, p_time)


def _times_at(dist: Distribution, ranks: np.ndarray) -> np.ndarray:
    """The ok time at each (rounded) rank; NaN for a missing rank."""
    ranks = np.asarray(ranks, dtype=float)
    known = ~np.isnan(ranks)
    out = np.full(ranks.shape, np.nan)
    out[known] = dist.times_ms[np.clip(np.rint(ranks[known]).astype(np.int64), 0, len(dist.times_ms) - 1)]
    return out

