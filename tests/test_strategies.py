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
from tuner.experiment import SAMPLERS, load_experiment
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


@pytest.mark.parametrize("name", SAMPLERS)
def test_each_strategy_finds_the_optimum_of_a_recorded_space_without_a_static_reject(recording, tmp_path, name):
    if not _available(name):
        pytest.skip(f"the {name} sampler needs a package that is not installed here")
    result = tuner.run(load_experiment(FERMI), backend="replay", replay=recording, sampler=name, trials=100,
                       out=tmp_path / "run", quiet=True, report=False)
    kernels = result.df[result.df["family"] != "cublas"]
    assert kernels["config_key"].is_unique and len(kernels) == 3 * 18  # every valid one, none rejected statically
    recorded = pd.read_parquet(recording / "results.parquet")
    recorded = recorded[recorded["family"] != "cublas"]
    optimum = recorded.loc[recorded.groupby("study")["gflops"].idxmax(), "config_key"]
    assert set(result.best["config_key"]) == set(optimum)
