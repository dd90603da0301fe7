"""Uniform random search without replacement, the reference every strategy is held against.

Three forms of the same search: :class:`RandomSearch` (:mod:`tuner.strategies.uniform`), a strategy for
:func:`tuner.compare.harness.simulate`;
:func:`random_search_runs`, many runs at once in numpy; and :func:`expected_fraction_of_optimum`, its exact
expectation.

The published figure. Schoonhoven, van Werkhoven and Batenburg, "Benchmarking optimization algorithms for
auto-tuning GPU kernels" (IEEE TEVC 2022; github.com/schoonhovenrichard/GPU_benchmarking_paper) score random
sampling on the GEMM space of the A100 at 0.880 of the optimum after 100 function evaluations (mean of 50
runs; ``experimental_data/deterministic/GEMM/RandomSampling_GEMM_A100_runs=50.csv``: 0.8802, stdev 0.0638).
Their search (``bloopy.algorithms.random_sampling`` on ``gpu_utils.GPU_tuning_space``) draws uniformly from
all 82,944 combinations of the parameters' values, redrawing a combination it has visited (up to ten
times, so in effect without replacement); a combination missing from the cache scores 1e10 ms and counts as a
function evaluation; a configuration's fitness is ``time``, the mean of its 32 runs; the fraction of the
optimum is the cache's best ``time`` over the best found. That is the ``product`` convention here: 100 draws
from the product hold about 22 recorded configurations, and the exact expectation is 0.883 (0.880 measured).
Under ``valid`` (every draw a recorded configuration) the same 100 evaluations reach 0.947.
"""

from __future__ import annotations

import numpy as np

from tuner.compare.harness import Convention, domain_of
from tuner.recorded import RecordedSpace
from tuner.strategies.uniform import RandomSearch

__all__ = ["RandomSearch", "expected_fraction_of_optimum", "random_search_runs"]


def random_search_runs(space: RecordedSpace, budget: int, convention: Convention | str, runs: int,
                       seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``runs`` random searches of ``budget`` evaluations: best time so far (ms, ``inf`` until a success) and
    cumulative recorded cost (s), both (runs × budget)."""
    domain = domain_of(space, convention)
    budget = min(budget, domain.size)
    rng = np.random.default_rng(seed)
    value = np.append(np.where(space.ok, space.time_ms, np.inf), np.inf)  # [-1]: absent from the recording
    cost = np.append(space.cost_s, 0.0)
    drawn = np.array([rng.choice(domain.size, size=budget, replace=False) for _ in range(runs)], dtype=np.int64)
    rows = drawn if Convention(convention) is Convention.VALID else space.rows_of(drawn.ravel()).reshape(drawn.shape)
    return np.minimum.accumulate(value[rows], axis=1), np.cumsum(cost[rows], axis=1)


def expected_fraction_of_optimum(space: RecordedSpace, budgets: list[int] | np.ndarray,
                                 convention: Convention | str) -> np.ndarray:
    """The exact mean fraction of the optimum that random search without replacement reaches in each budget.

    With N candidates of which the ok times sort to t₀ ≤ t₁ ≤ …, the best of b draws is tᵢ with probability
    pᵢ = C(N-1-i, b-1) / C(N, b): p₀ = b/N and pᵢ₊₁ = pᵢ (N-i-b) / (N-1-i). A run that draws no success
    scores 0.
    """
    n = domain_of(space, convention).size
    times = np.sort(space.time_ms[space.ok])
    fraction = times[0] / times
    i = np.arange(len(times) - 1)
    expected = []
    for b in np.minimum(np.asarray(budgets, dtype=np.int64), n):
        ratios = np.maximum(n - i - b, 0) / (n - 1 - i)
        p = b / n * np.concatenate(([1.0], np.cumprod(ratios)))
        expected.append(float(p @ fraction))
    return np.array(expected)
