"""Our strategies over a Domain: keys, neighbourhoods, nearest free candidates; every strategy never repeats
itself, is a function of its seed and calls, and on the replay backend finds the optimum without a static
reject."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tuner
from tuner.compare.harness import simulate
from tuner.experiment.schema import STRATEGIES, load_experiment
from tuner.strategies import Domain, catalog
from tuner.strategies.domain import ADJACENT, HAMMING

OURS = list(catalog.OURS)
FERMI = Path(__file__).resolve().parent.parent / "experiments" / "fermi_like.yaml"


def test_keys_neighbours_and_nearest_of_a_domain_of_listed_rows():
    rows = np.array([[0, 0], [0, 2], [1, 1], [2, 2], [2, 0]])
    domain = Domain(("a", "b"), np.array([3, 3]), np.array([True, False]), rows)
    assert domain.keys.tolist() == [0, 2, 4, 8, 6]
    assert domain.candidates_of(np.array([[2, 2], [1, 0], [5, 0]])).tolist() == [3, -1, -1]
    assert sorted(domain.neighbours(0, HAMMING).tolist()) == [1, 4]  # (0,2) and (2,0): one parameter away
    assert sorted(domain.neighbours(0, ADJACENT).tolist()) == [1]  # a is ordered: (2,0) is two steps away
    free = np.array([False, True, True, True, True])
    assert domain.nearest(np.array([0.2, 0.0]), free) in (1, 4)
    assert domain.nearest(np.array([1.0, 1.0])) == 2


def test_steps_move_an_ordered_value_by_its_count_and_a_categorical_one_to_another_value():
    domain = Domain.product(("a", "b", "c"), (5, 3, 4), (True, True, False))
    rng = np.random.default_rng(1)
    rows = np.repeat([[0, 1, 2]], 200, axis=0)
    moved = domain.steps(rows, np.repeat([[2, 0, 1]], 200, axis=0), rng)
    assert set(moved[:, 0].tolist()) == {2}  # two steps down leave the values: two up
    assert set(moved[:, 1].tolist()) == {1}
    assert set(moved[:, 2].tolist()) == {0, 1, 3}
    middle = domain.steps(np.repeat([[2, 1, 0]], 200, axis=0), np.repeat([[1, 0, 0], [3, 0, 0]], 100, axis=0), rng)
    assert set(middle[:100, 0].tolist()) == {1, 3} and set(middle[100:, 0].tolist()) == {0, 4}


def test_ils_falls_back_from_a_kick_to_a_better_evaluated_neighbour_without_evaluating_anew():
    from tuner.strategies.local_search import IteratedLocalSearch

    search = IteratedLocalSearch(Domain.product(("x",), (10,), (True,)), np.random.default_rng(0), initial=1)
    for candidate, value in ((5, 1.0), (4, 2.0), (6, 2.0)):  # 5 is a local optimum, its neighbours tried
        search.tell(candidate, value)
    first = search.ask()
    assert first in (3, 7)  # a kick two steps away
    search.tell(first, 3.0)
    assert search.ask() == 10 - first  # back to 5 through its known neighbour, kicked again: the other side


@pytest.mark.parametrize("name", OURS)
def test_each_strategy_never_repeats_and_is_a_function_of_its_seed(recorded_gemm, name):
    space = next(iter(recorded_gemm.values()))
    factory = catalog.strategy_factory(name)
    first = simulate(factory, space, 150, "valid", seed=(4, 2))
    again = simulate(factory, space, 150, "valid", seed=(4, 2))
    assert first.evaluations == 150 and len(set(first.candidates.tolist())) == 150
    assert first.candidates.tolist() == again.candidates.tolist()


def _available(name: str) -> bool:
    needs = {"cmaes": "cmaes", "gp": "torch"}.get(name)
    return needs is None or importlib.util.find_spec(needs) is not None


@pytest.mark.parametrize("name", STRATEGIES)
@pytest.mark.slow
def test_each_strategy_finds_the_optimum_of_a_recorded_space_without_a_static_reject(recording, tmp_path, name):
    if not _available(name):
        pytest.skip(f"the {name} sampler needs a package that is not installed here")
    result = tuner.run(load_experiment(FERMI), backend="replay", replay=recording, strategy=name, trials=100,
                       out=tmp_path / "run", quiet=True, report=False)
    kernels = result.df[result.df["family"] != "baseline"]
    assert kernels["config_key"].is_unique and len(kernels) == 3 * 18  # every valid one, none rejected statically
    recorded = pd.read_parquet(recording / "results.parquet")
    recorded = recorded[recorded["family"] != "baseline"]
    optimum = recorded.loc[recorded.groupby("study")["gflops"].idxmax(), "config_key"]
    assert set(result.best["config_key"]) == set(optimum)
