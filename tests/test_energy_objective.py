"""Objectives: parsing and validation, what a trial reports, the best rows by objective, the Pareto front and its
knee (on the hand-written stand-in rows of tests/energy_stand_in.py)."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest
from energy_stand_in import EFFICIENT, FASTEST, FRONT, KNEE, PROBLEM, stand_in

from tuner.config import Config
from tuner.energy.front import knee, pareto_front, study_fronts
from tuner.errors import ExperimentError
from tuner.experiment.python_experiment import check_experiment
from tuner.experiment.schema import parse_experiment
from tuner.measure.measurement import Measurement, Status
from tuner.results import table as results
from tuner.results.objectives import (
    NAMES,
    OBJECTIVES,
    ObjectiveError,
    metric_names,
    parse_objective,
    per_joule,
    recorded_objective,
)
from tuner.results.schema import BASELINE_FAMILY
from tuner.search.energy_values import missing_energy, reported
from tuner.settings import SearchSettings
from tuner.tuning.energy_summary import configuration

TILED16 = Config.make(PROBLEM, "tiled", "float32", {"TILE_WIDTH": 16})
FLOPS = 2 * 1024**3


def stand_in_rows() -> pd.DataFrame:
    """The stand-in's nine configurations as results rows."""
    from energy_stand_in import ROWS

    rows = []
    for trial, (family, params) in enumerate(ROWS):
        config = Config.make(PROBLEM, family, "float32", dict(params))
        record = results.Record("energy_stand_in", "s", "grid", trial, config, stand_in(config), "id", 0.0, "t")
        rows.append(results.row(record, results.analytics_of(record.config)))
    return results.to_frame(rows)


@pytest.mark.parametrize(("given", "expected"), [
    ("time", ("time",)), ("energy", ("energy",)), ("edp", ("edp",)), (["time", "energy"], ("time", "energy")),
    ("energy,time", ("time", "energy")), (("energy",), ("energy",)),
])
def test_objectives_parse(given, expected):
    assert parse_objective(given) == expected


@pytest.mark.parametrize(("given", "message"), [
    ("speed", "unknown objective 'speed'"), (["time", "edp"], "only as [time, energy]"),
    (["energy", "energy"], "only as [time, energy]"), (3, "expected time, energy, edp, sustained or [time, energy]"),
])
def test_other_objectives_are_refused(given, message):
    with pytest.raises(ObjectiveError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_objective(given)


def test_a_trial_reports_speed_work_per_joule_or_their_product():
    measurement = stand_in(TILED16)  # 0.33 ms, 0.080 J
    speed, efficiency = FLOPS / 0.33e-3 / 1e9, FLOPS / 0.080 / 1e9
    assert per_joule(TILED16, measurement) == pytest.approx(efficiency)
    assert reported(("time",), TILED16, measurement) == [pytest.approx(speed)]
    assert reported(("energy",), TILED16, measurement) == [pytest.approx(efficiency)]
    assert reported(("edp",), TILED16, measurement) == [pytest.approx(speed * efficiency)]
    assert reported(("time", "energy"), TILED16, measurement) == [pytest.approx(speed), pytest.approx(efficiency)]
    failed = Measurement(Status.CRASHED, reason="a fault")
    assert reported(("time", "energy"), TILED16, failed) == [0.0, 0.0] and not missing_energy(("energy",), failed)
    unmeasured = Measurement(Status.OK, timing=measurement.timing)
    assert reported(("time", "energy"), TILED16, unmeasured) == [pytest.approx(speed), 0.0]
    assert missing_energy(("edp",), unmeasured) and not missing_energy(("time",), unmeasured)


def test_each_objectives_record_ranks_rows_as_its_trials_value_ranks_measurements():
    """An objective is one record: the value a trial reports and the score of its row in the table agree on which
    of two evaluations is better, for every objective the parser takes."""
    df = stand_in_rows()
    assert tuple(OBJECTIVES) == NAMES and all(parse_objective(name) == (name,) for name in NAMES)
    for name, objective in OBJECTIVES.items():
        assert objective.direction == "maximize" and objective.meaning and objective.name == name
        values = [objective.value(results.config_of_row(row), results.measurement_from_row(row))
                  for _, row in df.iterrows()]
        scores = objective.score(df, results.performance(df)).tolist()
        valued = [i for i, value in enumerate(values) if value is not None]
        assert len(valued) >= 2 and valued == [i for i, score in enumerate(scores) if score == score], name
        for i in valued:
            for j in valued:
                if values[i] > values[j] * (1 + 1e-9):
                    assert scores[i] > scores[j], (name, i, j)
    assert metric_names(("time", "energy"), "GB/s") == ["speed [GB/s]", "efficiency [GB/J]"]


def test_the_sustained_objective_takes_the_windows_time_per_launch_not_the_median():
    measurement = stand_in(TILED16)  # 0.33 ms cold; its window: 100 launches back to back
    hot = dataclasses.replace(measurement, energy=dataclasses.replace(measurement.energy, window_s=0.040))
    assert reported(("sustained",), TILED16, hot) == [pytest.approx(FLOPS / 0.40e-3 / 1e9)]
    assert reported(("sustained",), TILED16, Measurement(Status.OK, timing=measurement.timing)) == [0.0]
    assert missing_energy(("sustained",), Measurement(Status.OK, timing=measurement.timing))


def test_best_rows_follow_the_objective():
    df = stand_in_rows()

    def best(objective: tuple[str, ...]) -> str:
        return configuration(results.best_rows(df, objective).iloc[0])

    assert best(("time",)) == FASTEST and best(("time", "energy")) == FASTEST
    assert best(("energy",)) == EFFICIENT
    assert best(("edp",)) == KNEE  # 0.33 ms × 0.080 J is the least product


def test_the_front_runs_from_the_fastest_to_the_most_efficient_with_its_knee_between():
    df = stand_in_rows()
    front = pareto_front(df)
    assert [configuration(row) for _, row in front.iterrows()] == FRONT
    assert configuration(front.loc[knee(front)]) == KNEE
    found, = study_fronts(df, BASELINE_FAMILY)
    assert (configuration(df.loc[found.fastest]), configuration(df.loc[found.efficient]),
            configuration(df.loc[found.knee])) == (FASTEST, EFFICIENT, KNEE)
    assert found.points == 7  # ok with an energy: not the crashed one, nor the one whose energy is missing


def test_a_front_of_two_points_takes_the_fastest_as_its_knee_and_ties_keep_one_row():
    df = stand_in_rows()
    two = df[df["p_TILE_WIDTH"].isin([32, 8])]
    front = pareto_front(pd.concat([two, two]))
    assert len(front) == 2 and configuration(front.loc[knee(front)]) == FASTEST


def test_the_objective_of_a_run_is_read_from_its_metadata():
    assert recorded_objective({"runs": [{"objective": ["edp"]}]}) == ("edp",)
    assert recorded_objective({"runs": [{"strategy": "ils"}]}) == ("time",)  # recorded before objectives
    assert recorded_objective({}) == ("time",)


EXPERIMENT = """\
name: x
problems: [{M: 64, N: 64, K: 64}]
kernels: [{template: tiled, parameters: {TILE_WIDTH: [8, 16]}}]
"""


def test_an_experiment_names_its_objective_and_two_objectives_default_to_nsga2():
    assert parse_experiment(EXPERIMENT, "x.yaml").search.objective == ("time",)
    energy = parse_experiment(EXPERIMENT + "search: {objective: energy}\nmeasure: {energy: true}\n", "x.yaml")
    assert energy.search.objective == ("energy",) and energy.measure.energy
    pair = parse_experiment(EXPERIMENT + "search: {objective: [time, energy]}\n", "x.yaml")
    assert (pair.search.objective, pair.search.strategy) == (("time", "energy"), "nsga2")
    tpe = parse_experiment(EXPERIMENT + "search: {objective: [time, energy], strategy: tpe}\n", "x.yaml")
    assert tpe.search.strategy == "tpe"


@pytest.mark.parametrize(("search", "field", "message"), [
    ("{objective: speed}", "search.objective", "unknown objective 'speed'"),
    ("{objective: [time, edp]}", "search.objective", "only as [time, energy]"),
    ("{objective: [time, energy], strategy: ils}", "search.strategy", "'ils' searches for one value"),
])
def test_a_wrong_objective_names_its_field_and_line(search, field, message):
    with pytest.raises(ExperimentError, match=message.replace("[", r"\[").replace("]", r"\]")) as caught:
        parse_experiment(EXPERIMENT + f"search: {search}\n", "x.yaml")
    assert caught.value.field == field and caught.value.line == 4


def test_measure_energy_is_true_or_false():
    with pytest.raises(ExperimentError, match="expected true or false") as caught:
        parse_experiment(EXPERIMENT + "measure: {energy: yes please}\n", "x.yaml")
    assert caught.value.field == "measure.energy"


def test_an_experiment_built_in_python_is_checked_the_same_way():
    import dataclasses

    experiment = parse_experiment(EXPERIMENT, "x.yaml")
    built = dataclasses.replace(experiment, path=None, search=SearchSettings(objective=("time", "energy")))
    with pytest.raises(ExperimentError, match=f"'{SearchSettings().strategy}' searches for one value"):
        check_experiment(built)
    check_experiment(dataclasses.replace(built, search=SearchSettings(strategy="nsga2", objective=("time", "energy"))))
    with pytest.raises(ExperimentError, match="unknown objective"):
        check_experiment(dataclasses.replace(built, search=SearchSettings(objective=("joules",))))
