"""Running strategies on recorded spaces, and uniform random search reproducing the published figure."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tuner.compare.harness import STALLED, Convention, domain_of, simulate, simulate_runs, stack
from tuner.compare.random_search import RandomSearch, expected_fraction_of_optimum, random_search_runs
from tuner.compare.scoring import at_budgets, fraction_of_optimum
from tuner.recorded import load_recorded
from tuner.strategies import Domain

PUBLISHED_A100_RANDOM_AT_100 = 0.880


@pytest.fixture
def small(tmp_path):
    """Two parameters of three values: six of the nine combinations recorded, one of them failed."""
    cache = {f"{a},{b}": {"A": a, "B": b, "time": t, "times": [t], "compile_time": 1000.0}
             for (a, b), t in {(1, 1): 4.0, (1, 2): 3.0, (2, 1): 2.0, (2, 3): 1.0, (3, 2): 5.0}.items()}
    cache["3,3"] = {"A": 3, "B": 3, "time": "CompilationFailedConfig", "compile_time": 500.0}
    path = tmp_path / "small.json"
    path.write_text(json.dumps({"device_name": "d", "kernel_name": "k", "tune_params_keys": ["A", "B"],
                                "tune_params": {"A": [1, 2, 3], "B": [1, 2, 3]}, "cache": cache}))
    return load_recorded(path)


class Scripted:
    """Proposes a fixed list of candidates and remembers what it is told."""

    script: list[int] = []

    def __init__(self, domain: Domain, rng: np.random.Generator):
        self.proposals = iter(self.script)
        self.told: list[tuple[int, float]] = []

    def ask(self) -> int:
        return next(self.proposals)

    def tell(self, candidate: int, value: float) -> None:
        self.told.append((candidate, value))


def scripted(script: list[int]) -> type[Scripted]:
    return type("Script", (Scripted,), {"script": script})


def test_a_run_records_the_best_so_far_and_the_cumulative_cost(small):
    run = simulate(scripted([0, 5, 2, 3]), small, budget=4, convention="valid", seed=0)
    assert run.best_ms.tolist() == [4.0, 4.0, 2.0, 1.0]  # candidate 5 is the failed compilation
    # compile time plus the runs, as no benchmark time is recorded: 1 s + 4 ms, the failure's 0.5 s, 1 s + 2 ms, …
    assert run.cost_s.tolist() == pytest.approx([1.004, 1.504, 2.506, 3.507])
    assert run.candidates.tolist() == [0, 5, 2, 3]


def test_a_repeated_proposal_is_told_again_but_no_evaluation(small):
    made = []

    def factory(domain: Domain, rng: np.random.Generator) -> Scripted:
        made.append(scripted([1, 1, 1, 4, 1, 0])(domain, rng))
        return made[-1]

    run = simulate(factory, small, 3, "valid", seed=0)
    assert run.candidates.tolist() == [1, 4, 0]
    assert made[0].told == [(1, 3.0), (1, 3.0), (1, 3.0), (4, 5.0), (1, 3.0), (0, 4.0)]


def test_a_strategy_that_only_repeats_itself_ends_its_run_early(small):
    run = simulate(scripted([2] + [2] * 10), small, budget=5, convention="valid", seed=0, max_repeats=5)
    assert run.evaluations == 1 and run.cut == STALLED
    assert simulate(scripted([2, 0, 1]), small, budget=3, convention="valid", seed=0).cut == ""
    best, cost = run.padded(3)
    assert best.tolist() == [2.0, 2.0, 2.0] and cost.tolist() == [run.cost_s[0]] * 3


def test_under_the_product_convention_an_absent_combination_fails_and_costs_nothing(small):
    domain = domain_of(small, Convention.PRODUCT)
    assert domain.size == 9
    # keys: A index × 3 + B index; (1, 3) = key 2 is absent, (2, 3) = key 5 is recorded row 3
    run = simulate(scripted([2, 5, 8]), small, budget=3, convention="product", seed=0)
    assert run.best_ms.tolist() == [math.inf, 1.0, 1.0]
    assert run.cost_s[0] == 0.0 and run.cost_s[2] - run.cost_s[1] == pytest.approx(0.5)
    assert domain.indices_of(np.array([5])).tolist() == [[1, 2]]
    assert domain.candidates_of(np.array([[1, 2], [0, 2]])).tolist() == [5, 2]
    valid = domain_of(small, Convention.VALID)
    assert valid.candidates_of(np.array([[1, 2], [0, 2]])).tolist() == [3, -1]
    assert valid.indices_of(np.array([3])).tolist() == [[1, 2]]
    assert valid.values == domain.values == small.values  # what a model reads the values' alignment from


def test_a_proposal_outside_the_domain_is_refused(small):
    with pytest.raises(ValueError, match="outside 0 … 5"):
        simulate(scripted([6]), small, budget=1, convention="valid", seed=0)


def test_runs_are_the_same_in_one_process_and_in_several(small):
    one = simulate_runs(RandomSearch, small, 6, "valid", runs=4, seed=3, workers=1)
    two = simulate_runs(RandomSearch, small, 6, "valid", runs=4, seed=3, workers=2)
    assert [r.candidates.tolist() for r in one] == [r.candidates.tolist() for r in two]
    assert all(sorted(r.candidates.tolist()) == list(range(6)) for r in one)  # never the same one twice
    best, cost = stack(one, 8)
    assert best.shape == cost.shape == (4, 8)
    assert (best[:, -1] == 1.0).all()


def test_the_exact_expectation_of_random_search_matches_simulation(small):
    best, _ = random_search_runs(small, 3, "product", runs=20_000, seed=1)
    simulated = fraction_of_optimum(best, small.optimum_ms).mean(axis=0)
    assert simulated == pytest.approx(expected_fraction_of_optimum(small, [1, 2, 3], "product"), abs=0.01)


@pytest.mark.slow
def test_random_search_on_the_product_reproduces_the_published_a100_figure(recorded_gemm):
    space = recorded_gemm["gemm_A100"]
    expected = expected_fraction_of_optimum(space, [100], Convention.PRODUCT)[0]
    assert expected == pytest.approx(PUBLISHED_A100_RANDOM_AT_100, abs=0.01)
    best, _ = random_search_runs(space, 100, Convention.PRODUCT, runs=2000, seed=2022)
    simulated = fraction_of_optimum(best[:, -1], space.optimum_ms).mean()
    assert simulated == pytest.approx(PUBLISHED_A100_RANDOM_AT_100, abs=0.01)
    # counting only recorded configurations, the same budget reaches much further
    assert expected_fraction_of_optimum(space, [100], Convention.VALID)[0] > 0.94


def test_random_search_through_the_harness_agrees_with_its_expectation(recorded_gemm):
    space = recorded_gemm["gemm_RTX_2080_Ti"]
    runs = simulate_runs(RandomSearch, space, 100, Convention.VALID, runs=50, seed=7)
    best, cost = stack(runs, 100)
    mean = fraction_of_optimum(at_budgets(best, [100]), space.optimum_ms).mean()
    assert mean == pytest.approx(expected_fraction_of_optimum(space, [100], "valid")[0], abs=0.03)
    assert (np.diff(cost, axis=1) > 0).all()


def test_a_run_with_a_time_limit_stops_before_the_evaluation_that_would_start_past_it(small):
    run = simulate(scripted([0, 5, 2, 3, 1]), small, budget=None, convention="valid", seed=0, time_limit_s=2.0)
    assert run.candidates.tolist() == [0, 5, 2]  # 1.004 s, then 1.504 s: both below 2 s; the third starts past it
    thinking = run.elapsed_s - run.cost_s
    assert (thinking >= 0).all() and (np.diff(thinking) >= 0).all() and thinking[-1] < 0.5
