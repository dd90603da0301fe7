"""The fraction of the optimum and performance curves, as pure functions of best-so-far curves.

Runs come as arrays of shape (runs × evaluations): ``best_ms``, the best time found so far (``inf`` before the
first success), and ``cost_s``, the cumulative recorded cost (:func:`tuner.compare.harness.stack`).

Fraction of the optimum (R. Schoonhoven, B. van Werkhoven, K. J. Batenburg, "Benchmarking optimization
algorithms for auto-tuning GPU kernels", IEEE TEVC 2022): the optimum time over the best time found after b
evaluations, per run (0 for a run without a success), summarised over runs by mean, standard deviation (n-1, as
their ``statistics.stdev``), quartiles and inter-quartile range. Performance curves are the same quartiles at
every evaluation, or at every point of a time axis (:func:`best_at_times`).

The methodology score P is :mod:`tuner.compare.methodology`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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
