"""Kernel Tuner's strategies side by side with ours: its simulation mode on the same space, budget and
restrictions, counted as ours are; a missing package is one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli

from tests.patience import patient
from tuner.compare import kernel_tuner_peer as kt
from tuner.compare.command import run_comparison
from tuner.compare.comparison import compare, strategy_factories
from tuner.compare.harness import STALLED, Convention
from tuner.errors import TunerError
from tuner.recorded import load_recorded
from tuner.strategies.catalog import DEFAULT

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "experiments" / "data" / "recorded"
SMALL = RECORDED / "convolution_MI250X.json.gz"
"""4,362 configurations whose methodology axis ends after about 40 evaluations."""


@pytest.mark.slow
def test_without_kernel_tuner_a_peer_is_refused_in_one_line(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "kernel_tuner", None)  # import kernel_tuner now raises ImportError
    reason = kt.available()
    assert reason is not None and reason.startswith("Kernel Tuner is not installed") and "\n" not in reason
    with pytest.raises(TunerError, match="Kernel Tuner is not installed"):
        run_comparison([SMALL], ["random"], repeats=2, budgets=(5,), convention="a", jobs=1, out=tmp_path / "out",
                       quiet=True, peers=["kernel_tuner"])
    (tmp_path / "blocked").mkdir()
    (tmp_path / "blocked" / "kernel_tuner.py").write_text("raise ImportError(\"No module named 'kernel_tuner'\")\n")
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "blocked"), str(ROOT)])}
    done = subprocess.run([sys.executable, "-m", "tuner", "compare", str(SMALL), "--peers", "kernel_tuner", "--out",
                           str(tmp_path / "cli")], cwd=ROOT, capture_output=True, text=True, env=environment,
                          timeout=patient(300))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: Kernel Tuner is not installed") and done.stderr.count("\n") == 1


pytest.importorskip("kernel_tuner", reason="Kernel Tuner is not installed (pip install -e \".[kernel_tuner]\")")


def test_the_cache_kernel_tuner_replays_is_the_recorded_space():
    space = load_recorded(SMALL)
    document = kt.cache_document(space)
    assert len(document["cache"]) == len(space) and document["tune_params_keys"] == list(space.names)
    record = document["cache"][space.key_string(space.optimum_row)]
    assert record["time"] == space.optimum_ms
    simulated_s = (record["compile_time"] + record["verification_time"] + record["benchmark_time"]) / 1000
    assert simulated_s == pytest.approx(space.cost_s[space.optimum_row])
    assert kt.restrictions_of(space) == list(space.restrictions)


def test_a_budget_counts_distinct_recorded_configurations_as_ours_does():
    space = load_recorded(SMALL)
    with kt.cache_file(space) as path:
        runs = kt.kernel_tuner_runs(space, path, "greedy_ils", kt.Budget(evaluations=30), runs=2, seed=1, workers=1)
        again = kt.kernel_tuner_runs(space, path, "greedy_ils", kt.Budget(evaluations=30), runs=2, seed=1, workers=1)
    for run in runs:
        assert run.evaluations <= 30 and len(set(run.candidates.tolist())) == run.evaluations
        values = np.where(space.ok, space.time_ms, np.inf)[run.candidates]
        assert run.best_ms.tolist() == np.minimum.accumulate(values).tolist()
        assert (run.elapsed_s >= run.cost_s).all()
    assert [r.candidates.tolist() for r in runs] == [r.candidates.tolist() for r in again]  # seeded


def test_a_run_that_evaluates_nothing_new_for_so_many_proposals_is_cut_and_says_why():
    from kernel_tuner.util import StopCriterionReached, TuningBudget

    from tuner.compare.kernel_tuner_bound import BoundedBudget

    budget = BoundedBudget(TuningBudget(time_limit=1000), stall_proposals=3, wall_cap_s=1000)
    assert not budget.is_done()
    budget.add_evaluations(1)  # the configuration just answered was new
    assert [budget.is_done() for _ in range(4)] == [False, False, False, True] and budget.cut == STALLED
    with pytest.raises(StopCriterionReached, match="stalled"):
        budget.raise_exception_if_done()
    busy = BoundedBudget(TuningBudget(time_limit=1000), stall_proposals=3, wall_cap_s=1000)
    for _ in range(10):
        assert not busy.is_done()
        busy.add_evaluations(1)
    late = BoundedBudget(TuningBudget(max_fevals=10), stall_proposals=3, wall_cap_s=0.0)
    assert late.is_done() and late.cut == kt.WALL_CAP


def test_a_strategy_that_reads_its_own_name_runs_bounded():
    space = load_recorded(SMALL)
    with kt.cache_file(space) as path:
        (run,) = kt.kernel_tuner_runs(space, path, "nsga2", kt.Budget(evaluations=20), runs=1, workers=1)
    assert run.evaluations == 20 and run.cut == ""


def _toy_space(tmp_path: Path):
    """Twelve combinations of A in 1..4 and B in 1..3, eight recorded (those with A + B not a multiple of 3), no
    restrictions."""
    cache = {f"{a},{b}": {"A": a, "B": b, "time": float(a + b), "times": [float(a + b)], "compile_time": 10.0}
             for a in (1, 2, 3, 4) for b in (1, 2, 3) if (a + b) % 3}
    path = tmp_path / "toy.json"
    path.write_text(json.dumps({"device_name": "d", "kernel_name": "k", "tune_params_keys": ["A", "B"],
                                "tune_params": {"A": [1, 2, 3, 4], "B": [1, 2, 3]}, "cache": cache}))
    return load_recorded(path)


def test_a_space_without_restrictions_gives_kernel_tuner_its_recorded_configurations(tmp_path):
    space = _toy_space(tmp_path)
    with kt.cache_file(space) as file:
        (run,) = kt.kernel_tuner_runs(space, file, "random_sample", kt.Budget(evaluations=100), runs=1, workers=1)
    assert sorted(run.candidates.tolist()) == list(range(len(space)))  # every recorded one, nothing else


@pytest.mark.filterwarnings("ignore:Using the fractional value max_samples")  # P's bootstrap on a space of 12
def test_under_convention_b_kernel_tuner_draws_from_every_combination_and_a_missing_one_fails(tmp_path):
    space = _toy_space(tmp_path)
    document = kt.cache_document(space, Convention.PRODUCT)
    assert len(document["cache"]) == 12 and document["cache"]["1,2"]["time"] == "InvalidConfig"
    assert kt.restrictions_of(space, Convention.PRODUCT) is None
    with kt.cache_file(space, Convention.PRODUCT) as file:
        (run,) = kt.kernel_tuner_runs(space, file, "random_sample", kt.Budget(evaluations=100), runs=1, workers=1,
                                      convention=Convention.PRODUCT)
    assert run.evaluations == 12 and sorted(run.candidates.tolist()) == list(range(12))  # the product's keys
    assert run.best_ms[-1] == 2.0 and run.cost_s[-1] == pytest.approx(float(space.cost_s.sum()))  # missing: free
    missing = [i for i, key in enumerate(run.candidates.tolist()) if space.rows_of(np.array([key]))[0] < 0]
    assert len(missing) == 4 and all(run.cost_s[i] == (run.cost_s[i - 1] if i else 0.0) for i in missing)
    (result,) = compare({"toy": space}, strategy_factories(["random"]), budgets=(4, 8),
                        conventions=(Convention.PRODUCT,), runs=2, seed=0, jobs=1, peers=["random_sample"])
    assert list(result.scored) == ["random", "kt:random_sample"] and result.case.label == "toy (b)"


@pytest.mark.slow
def test_kernel_tuner_strategies_share_the_tables_with_ours(tmp_path):
    space = load_recorded(SMALL)
    (result,) = compare({"small": space}, strategy_factories(["random"]), budgets=(10, 25),
                        conventions=(Convention.VALID,), runs=3, seed=0, jobs=2,
                        peers=["random_sample", "greedy_ils"], score_runs=3)
    assert list(result.scored) == ["random", "kt:random_sample", "kt:greedy_ils"]
    for scored in result.scored.values():
        assert scored.runs == 3 and ((scored.fractions.mean > 0) & (scored.fractions.mean <= 1)).all()
        assert np.isfinite(scored.p) and scored.think_ms >= 0


@pytest.mark.slow
def test_cli_compare_with_kernel_tuner_on_a_small_space(tmp_path):
    out = tmp_path / "cmp"
    done = run_cli("compare", str(SMALL), "--strategies", DEFAULT, "--peers", "kernel_tuner:greedy_ils,random_sample",
                   "--repeats", "3", "--budgets", "10,20", "--convention", "a", "--jobs", "1", "--out", str(out))
    assert done.returncode == 0, done.stderr
    table = (out / "comparison.txt").read_text()
    assert "kt:greedy_ils" in table and "best of Kernel Tuner's strategies" in table
    summary = (out / "summary.md").read_text().split("\n\n")
    assert summary[1].startswith(f"| space | `{DEFAULT}` @10 | Kernel Tuner's best @10 |")
    assert summary[1].count("\n") == 2 and "convolution MI250X" in summary[1]
    assert summary[2].startswith("#### convolution MI250X") and summary[3].count("\n| `") == 4
    data = json.loads((out / "comparison.json").read_text())
    assert data["settings"]["peers"] == ["kt:greedy_ils", "kt:random_sample"] and data["settings"]["kernel_tuner"]
    assert {row["strategy"] for row in data["rows"]} == {DEFAULT, "random", "kt:greedy_ils", "kt:random_sample"}
    assert data["settings"]["peer_repeats"] == 3 and set(data["settings"]["run_bounds"]) == {STALLED, kt.WALL_CAP}
    assert all(row["runs_made"] >= 3 and row["runs_cut"] >= 0 for row in data["rows"])
