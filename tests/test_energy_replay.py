"""Energy objectives end to end on the replay backend: a recording with energy (the hand-written stand-in of
tests/energy_stand_in.py, made in a temporary folder) searched for time, energy, edp and both, the summary and
the report's Pareto front; a recording without energy refused with "energy not recorded"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from energy_stand_in import EFFICIENT, EXPERIMENT, FASTEST, FRONT, KNEE, record

import tuner
from tuner import cli
from tuner.results import table as results
from tuner.tuning.energy_summary import configuration

ROOT = Path(__file__).resolve().parent.parent
SGEMM = ROOT / "experiments" / "h100_sgemm.yaml"
SGEMM_TIME_ONLY = ROOT / "experiments" / "data" / "h100_sgemm_h100"
"""A recording made before energy was measured."""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> tuple[Path, Path]:
    return record(tmp_path_factory.mktemp("energy"))


def replay(recorded: tuple[Path, Path], out: Path, *options: str) -> int:
    experiment, recording = recorded
    return cli.main(["run", str(experiment), "--backend", "replay", "--replay", str(recording), "--out", str(out),
                     "--quiet", "--no-report", *options])


def best(out: Path) -> str:
    df, metadata = results.load(out)
    return configuration(tuner.RunResult(df, out, metadata).best.iloc[0])


@pytest.mark.parametrize(("objective", "expected"), [
    ("time", FASTEST), ("energy", EFFICIENT), ("edp", KNEE), ("time,energy", FASTEST),
])
def test_each_objective_finds_its_best_and_the_summary_names_the_front(recorded, tmp_path, capsys, objective,
                                                                        expected):
    out = tmp_path / "run"
    assert replay(recorded, out, "--objective", objective, "--trials", "9") == 0
    assert best(out) == expected
    text = capsys.readouterr().out
    summary = text[text.index("Pareto front"):]
    for point, name in (("fastest", FASTEST), ("most efficient", EFFICIENT), ("knee", KNEE)):
        assert f"{point} " in summary and name in summary
    run = json.loads((out / "metadata.json").read_text())["runs"][-1]
    assert run["objective"] == objective.split(",")
    if objective != "time":
        assert "energy not recorded for 1 ok evaluation" in text  # the stand-in row without its energy


def test_the_study_of_two_objectives_reports_both_values(recorded, tmp_path):
    import optuna

    from tuner.search.storage import close_storage, open_storage, own_storage_url

    out = tmp_path / "pair"
    assert replay(recorded, out, "--objective", "time,energy", "--strategy", "nsga2", "--trials", "9") == 0
    storage = open_storage(own_storage_url(out))
    try:
        study = optuna.load_study(study_name="energy_stand_in/1024x1024x1024/float32", storage=storage)
        assert len(study.directions) == 2
        assert study.metric_names == ["speed [GFLOP/s]", "efficiency [GFLOP/J]"]
        complete = [t for t in study.get_trials(deepcopy=False) if t.values is not None]
        assert len(complete) == 9 and all(len(t.values) == 2 for t in complete)
        df = results.load(out)[0]
        optimal = df[df["trial"].isin([t.number for t in study.best_trials])]
        assert {configuration(row) for _, row in optimal.iterrows()} == set(FRONT)
    finally:
        close_storage(storage)


def test_a_recording_without_energy_is_refused_for_an_energy_objective(tmp_path, capsys):
    out = tmp_path / "sgemm"
    assert cli.main(["run", str(SGEMM), "--replay", str(SGEMM_TIME_ONLY), "--objective", "energy", "--out", str(out),
                     "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "energy not recorded" in err and "Traceback" not in err and "--objective time" in err
    assert not out.exists()
    assert cli.main(["run", str(SGEMM), "--replay", str(SGEMM_TIME_ONLY), "--out", str(out), "--quiet",
                     "--no-report", "--trials", "2"]) == 0  # replayed for time as before


def test_two_objectives_refuse_a_strategy_that_searches_for_one(recorded, tmp_path, capsys):
    assert replay(recorded, tmp_path / "ils", "--objective", "time,energy", "--strategy", "ils") == 2
    assert "'ils' searches for one value" in capsys.readouterr().err


def test_an_experiment_whose_strategy_is_for_one_objective_searches_two_with_nsga2(recorded, tmp_path, capsys):
    experiment = tmp_path / "default.yaml"
    experiment.write_text(EXPERIMENT.replace("search: {strategy: grid, trials: 20}\n", ""))
    out = tmp_path / "run"
    assert cli.main(["run", str(experiment), "--backend", "replay", "--replay", str(recorded[1]), "--out", str(out),
                     "--no-report", "--objective", "time,energy", "--trials", "4"]) == 0
    assert "searched with nsga2" in capsys.readouterr().err
    assert json.loads((out / "metadata.json").read_text())["runs"][-1]["strategy"] == "nsga2"


def test_a_folder_searched_for_one_objective_is_not_continued_for_another(recorded, tmp_path, capsys):
    out = tmp_path / "run"
    assert replay(recorded, out, "--objective", "time", "--trials", "3") == 0
    capsys.readouterr()
    assert replay(recorded, out, "--objective", "energy", "--trials", "5") == 2
    assert "searched for time, not energy" in capsys.readouterr().err
    assert replay(recorded, out, "--objective", "time", "--trials", "5") == 0  # the same objective continues
    assert len(results.load(out)[0]) == 5


def test_the_python_api_takes_the_objective(recorded, tmp_path):
    experiment, recording = recorded
    result = tuner.run(tuner.load_experiment(experiment), backend="replay", replay=recording, objective="energy",
                       trials=9, out=tmp_path / "api", quiet=True, report=False)
    assert configuration(result.best.iloc[0]) == EFFICIENT


@pytest.mark.slow
def test_the_report_draws_the_front_and_names_each_point(recorded, tmp_path):
    from tuner.report import write_report

    out = tmp_path / "run"
    assert replay(recorded, out, "--objective", "time,energy", "--trials", "9") == 0
    written = {path.name for path in write_report(out, quiet=True)}
    assert "pareto_float32_1024x1024x1024.png" in written
    page = (out / "report.html").read_text()
    section = page[page.index('<section id="energy">'):page.index('<section id="top">')]
    assert "Pareto front, 1024x1024x1024 float32" in section
    for role, name in (("fastest", FASTEST), ("knee", KNEE), ("most efficient", EFFICIENT)):
        assert f"<td>{role}</td><td>{name}</td>" in section


def test_a_strategy_object_searches_two_objectives_told_their_product(recorded, tmp_path):
    from optuna.study import StudyDirection

    from tuner.strategies.local_search import IteratedLocalSearch
    from tuner.strategies.sampler import scalar_cost

    up = StudyDirection.MAXIMIZE
    assert scalar_cost([2.0, 5.0], [up, up]) == pytest.approx(1 / 10)  # ∝ time × energy for GFLOP/s and GFLOP/J
    assert scalar_cost([2.0, 0.0], [up, up]) == float("inf")  # a failure in either is a failure
    experiment, recording = recorded
    result = tuner.run(tuner.load_experiment(experiment), backend="replay", replay=recording,
                       strategy=IteratedLocalSearch, objective=("time", "energy"), trials=9, out=tmp_path / "ils",
                       quiet=True, report=False)
    assert len(result.df) == 9 and result.metadata["runs"][-1]["objective"] == ["time", "energy"]


@pytest.mark.slow
def test_the_report_of_an_energy_search_names_the_most_efficient_as_best(recorded, tmp_path):
    from tuner.report import write_report

    out = tmp_path / "run"
    assert replay(recorded, out, "--objective", "energy", "--trials", "9") == 0
    write_report(out, quiet=True)
    page = (out / "report.html").read_text()
    best = page[page.index("Best configuration per problem"):page.index("</table>", page.index("Best configuration"))]
    assert "best: the least energy per launch" in best and f"<td>{EFFICIENT}</td>" in best
