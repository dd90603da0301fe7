"""Every run of a comparison in one pool of processes: the same runs whatever the number of processes, the longest
expected first."""

from __future__ import annotations

import json

import pytest

from tuner.compare.harness import Convention, simulate, statistics
from tuner.compare.random_search import RandomSearch
from tuner.compare.schedule import RunSet, expected_evaluations, order, run_sets
from tuner.recorded import load_recorded


@pytest.fixture
def spaces(tmp_path):
    """Two spaces of 4 × 5 combinations, every one recorded, with different times."""
    made = {}
    for name, scale in (("one", 1.0), ("two", 3.0)):
        cache = {f"{a},{b}": {"A": a, "B": b, "time": scale * (1 + (a * 7 + b * 3) % 11), "times": [1.0],
                              "compile_time": 1000.0 + 100 * a} for a in range(4) for b in range(5)}
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"device_name": "d", "kernel_name": "k", "tune_params_keys": ["A", "B"],
                                    "tune_params": {"A": list(range(4)), "B": list(range(5))}, "cache": cache}))
        made[name] = load_recorded(path)
    return made


def sets_of(spaces) -> list[RunSet]:
    limit = 6 * statistics(spaces["two"]).time_per_draw_s
    return [RunSet("one", Convention.VALID, "random", 5, None, 3, 11, factory=RandomSearch),
            RunSet("two", Convention.VALID, "random", 12, None, 2, 12, factory=RandomSearch),
            RunSet("two", Convention.VALID, "random", None, limit, 4, 13, factory=RandomSearch)]


def test_the_runs_are_the_same_in_one_process_as_in_several_and_as_run_alone(spaces):
    sets = sets_of(spaces)
    alone = [[simulate(RandomSearch, spaces[s.space], s.budget, s.convention, (s.seed, r),
                       time_limit_s=s.time_limit_s).candidates.tolist() for r in range(s.runs)] for s in sets]
    for jobs in (1, 3):
        made = run_sets(sets, spaces, jobs=jobs)
        assert [[run.candidates.tolist() for run in runs] for runs in made] == alone
    assert [len(runs) for runs in alone] == [3, 2, 4] and all(len(run) == 5 for run in alone[0])


def test_the_sets_expected_to_evaluate_most_go_first(spaces):
    sets = sets_of(spaces)
    assert expected_evaluations(sets[0], spaces["one"]) == 5
    assert expected_evaluations(sets[2], spaces["two"]) == pytest.approx(6)
    assert expected_evaluations(RunSet("one", Convention.VALID, "random", 1000, None, 1, 0), spaces["one"]) == 20
    units = order(sets, spaces)
    assert units == [(1, 0), (1, 1), (2, 0), (2, 1), (2, 2), (2, 3), (0, 0), (0, 1), (0, 2)]
