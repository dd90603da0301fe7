"""``python -m tuner compare``: the scoring of strategies on recorded spaces, its inputs, outputs and errors."""

from __future__ import annotations

import csv
import json
import math
import re
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli

from tuner.compare.command import parse_budgets, run_comparison
from tuner.compare.comparison import BASELINE, Case, Scored, compare, strategy_factories
from tuner.compare.harness import Convention, Domain
from tuner.compare.inputs import recorded_spaces
from tuner.compare.random_search import expected_fraction_of_optimum
from tuner.compare.table import rows, text_table
from tuner.errors import TunerError
from tuner.recorded import RecordedSpace
from tuner.recorded.run_folder import MISSING, load_run_folder

ROOT = Path(__file__).resolve().parent.parent
A100 = ROOT / "experiments" / "data" / "recorded" / "gemm_A100.json.gz"
H100_RUN = ROOT / "experiments" / "data" / "h100_sgemm_h100"


def toy_space() -> RecordedSpace:
    """10 × 10 combinations, 85 recorded (five failed to compile), times 1 … 80 ms in a shuffled order; each costs
    1 s."""
    indices = np.array([(i, j) for i in range(10) for j in range(10) if (i + j) % 7 != 3], dtype=np.int32)[:85]
    time = np.concatenate((np.random.default_rng(0).permutation(80) + 1.0, np.full(5, np.nan)))
    status = np.where(np.isnan(time), "compile_error", "ok")
    return RecordedSpace(source="toy", device="Toy GPU", kernel="toy", problem_size=None, names=("A", "B"),
                         values=(tuple(range(1, 11)), tuple(8 * k for k in range(1, 11))), indices=indices,
                         status=status, reason=tuple("" if s == "ok" else "CompilationFailedConfig" for s in status),
                         time_ms=time, runs_ms=np.full((85, 0), np.nan), cost_s=np.ones(85))


class Oracle:
    """Proposes the recorded configurations fastest first (to know what a perfect strategy scores)."""

    def __init__(self, space: RecordedSpace, domain: Domain, rng: np.random.Generator):
        order = np.argsort(np.where(space.ok, space.time_ms, np.inf), kind="stable")
        self.queue = [int(c) for c in domain.candidates_of(space.indices[order])]

    def ask(self) -> int:
        return self.queue.pop(0)

    def tell(self, candidate: int, value: float) -> None:
        return None


def score_random(case: Case, budgets: tuple[int, ...], runs: int, seed: int, jobs: int) -> Scored:
    (result,) = compare({case.name: case.space}, {BASELINE: strategy_factories()[BASELINE]}, budgets,
                        (case.convention,), runs, seed, jobs)
    return result.scored[BASELINE]


@pytest.mark.slow
def test_a_perfect_strategy_scores_one_and_random_its_expectation():
    space = toy_space()
    strategies = {"oracle": partial(Oracle, space), BASELINE: strategy_factories(["random"])[BASELINE]}
    results = compare({"toy": space}, strategies, budgets=(1, 3, 20),
                      conventions=(Convention.VALID,), runs=400, seed=1, jobs=1)
    (result,) = results
    oracle, random = result.scored["oracle"], result.scored[BASELINE]
    np.testing.assert_allclose(oracle.fractions.mean, 1.0)
    np.testing.assert_allclose(oracle.fractions.std, 0.0)
    assert oracle.p == pytest.approx(1.0)
    expected = expected_fraction_of_optimum(space, [1, 3, 20], Convention.VALID)
    np.testing.assert_allclose(random.fractions.mean, expected, atol=0.04)
    assert oracle.curve.median.shape == (20,) and oracle.time_curve.median.shape == oracle.times_s.shape
    assert result.optimum_ms == 1.0


def test_under_the_product_convention_absent_combinations_spend_evaluations():
    space = toy_space()
    valid = score_random(Case("toy", space, Convention.VALID), (5,), 300, 0, 1)
    product = score_random(Case("toy", space, Convention.PRODUCT), (5,), 300, 0, 1)
    exact = expected_fraction_of_optimum(space, [5], Convention.PRODUCT)[0]
    assert product.fractions.mean[0] == pytest.approx(exact, abs=0.04)
    assert product.fractions.mean[0] < valid.fractions.mean[0]


def test_the_runs_do_not_depend_on_the_number_of_processes():
    case = Case("toy", toy_space(), Convention.VALID)
    one = score_random(case, (4, 8), 6, 3, 1)
    two = score_random(case, (4, 8), 6, 3, 2)
    np.testing.assert_array_equal(one.curve.median, two.curve.median)
    np.testing.assert_array_equal(one.fractions.mean, two.fractions.mean)


def test_random_search_is_always_the_baseline_and_unknown_names_are_refused():
    assert list(strategy_factories(["ils"])) == ["ils", BASELINE]
    assert {"ils", "annealing", "dual_annealing", "genetic", "grid", BASELINE} <= set(strategy_factories())
    with pytest.raises(TunerError, match="unknown strategy 'annealer'"):
        strategy_factories(["annealer"])
    assert list(strategy_factories(["tpe", "optuna:qmc"])) == ["optuna:tpe", "optuna:qmc", BASELINE]


@pytest.mark.parametrize("text", ["", "100,x", "0,100", "-5"])
def test_bad_budgets_are_refused(text):
    with pytest.raises(TunerError, match="--budgets"):
        parse_budgets(text)


def test_the_table_marks_the_best_mean_of_each_budget():
    space = toy_space()
    strategies = {"oracle": partial(Oracle, space), **strategy_factories(["random"])}
    results = compare({"toy": space}, strategies, budgets=(2, 4), conventions=(Convention.VALID,), runs=5, jobs=1)
    text = text_table(results)
    oracle_line = next(line for line in text.splitlines() if line.startswith("oracle"))
    assert oracle_line.count("1.000 ± 0.000*") == 2
    found = rows(results)
    assert {(r["strategy"], r["budget"]) for r in found} == {(s, b) for s in ("oracle", "random") for b in (2, 4)}
    assert all(r["runs"] == 5 and r["convention"] == "valid" for r in found)


def test_a_run_folder_gives_one_space_per_study():
    spaces = load_run_folder(H100_RUN)
    assert len(spaces) == 6
    space = spaces["h100_sgemm/4096x4096x4096/float32"]
    assert space.names[0] == "family" and set(space.values[0]) == {"regblock", "tiled"}
    assert MISSING in space.values[space.names.index("TILE_WIDTH")]
    assert space.device == "NVIDIA H100 80GB HBM3" and space.ok.sum() > 0
    assert math.isfinite(space.optimum_ms) and space.runs_ms.shape[0] == len(space)


def test_inputs_name_their_spaces_and_refuse_what_is_not_recorded(tmp_path):
    spaces = recorded_spaces([A100, ROOT / "experiments" / "recorded_gemm_a100.yaml"][1:])
    assert list(spaces) == ["gemm_A100"] and len(spaces["gemm_A100"]) == 17956
    with pytest.raises(TunerError, match="is a template"):
        recorded_spaces([ROOT / "experiments" / "fermi_like.yaml"])
    with pytest.raises(TunerError, match="no such file or folder"):
        recorded_spaces([tmp_path / "missing.json"])
    with pytest.raises(TunerError, match="two recorded spaces are named 'gemm_A100'"):
        recorded_spaces([A100, A100])


@pytest.mark.slow
def test_the_api_writes_every_output(tmp_path):
    run_comparison([H100_RUN], ["random"], repeats=3, budgets=(5, 10), convention="a", jobs=1, out=tmp_path,
                   quiet=True)
    names = {p.name for p in tmp_path.iterdir()}
    assert {"comparison.txt", "comparison.json", "comparison.csv", "comparison.html"} <= names
    assert sum(name.endswith("_valid.png") for name in names) == 6


@pytest.mark.slow
def test_cli_compare_on_a_recorded_file(tmp_path):
    out = tmp_path / "cmp"
    done = run_cli("compare", str(A100), "--repeats", "3", "--budgets", "10,20", "--jobs", "1", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "gemm_A100 (A100-PCIE-40GB), convention (a) valid" in done.stdout
    with (out / "comparison.csv").open() as stream:
        table = list(csv.DictReader(stream))
    strategies = {r["strategy"] for r in table}
    assert len(table) == 2 * len(strategies) * 2 and {r["convention"] for r in table} == {"valid", "product"}
    assert all(0 < float(r["mean"]) <= 1 for r in table)
    data = json.loads((out / "comparison.json").read_text())
    assert data["settings"]["repeats"] == 3 and data["settings"]["budgets"] == [10, 20]
    assert len(data["curves"][0]["median"]) == 20
    for convention in ("valid", "product"):
        assert (out / f"curves_gemm_A100_{convention}.png").stat().st_size > 10_000
    page = (out / "comparison.html").read_text()
    assert page.count("data:image/png;base64,") == 2 and "Willemsen" in page


@pytest.mark.slow
def test_cli_compare_refuses_an_unknown_strategy_in_one_paragraph(tmp_path):
    done = run_cli("compare", str(A100), "--strategies", "nosuch", "--out", str(tmp_path / "cmp"))
    assert done.returncode == 2
    assert done.stderr.startswith("error: unknown strategy 'nosuch'") and "Traceback" not in done.stderr
    assert not (tmp_path / "cmp").exists()


def test_the_text_fits_80_columns_keeping_every_column():
    space = toy_space()
    strategies = {"oracle_with_a_long_name": partial(Oracle, space), **strategy_factories(["random"])}
    results = compare({"toy": space}, strategies, budgets=(2, 3, 4, 5), conventions=(Convention.VALID,), runs=3,
                      jobs=1)
    text = text_table(results)
    assert max(len(line) for line in text.splitlines()) <= 80
    for column in ("@2", "@3", "@4", "@5", "P", "3% cost", "ms/eval"):
        assert any(column in re.split(r"\s{2,}", line) for line in text.splitlines() if line.startswith("strategy")), \
            column
    rows_of_oracle = [line for line in text.splitlines() if line.startswith("oracle_with_a_long_name")]
    assert len(rows_of_oracle) == 2 and rows_of_oracle[0].count("1.000 ± 0.000*") >= 2  # the block goes on below
