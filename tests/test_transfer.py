"""Each next problem starts with the configurations measured fastest on the problems before it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import optuna
import pandas as pd
import pytest
from scripted_backend import ScriptedBackend

import tuner
from tuner import cli
from tuner.claims import CLAIM_ATTR
from tuner.experiment import ExperimentError, load_experiment
from tuner.results import BASELINE
from tuner.study_space import study_spaces
from tuner.transfer import TRANSFER_ATTR, same_space, transfer_best

ROOT = Path(__file__).resolve().parents[1]
FERMI = ROOT / "experiments" / "fermi_like.yaml"


def fermi_with(**search) -> tuner.Experiment:
    experiment = load_experiment(FERMI)
    return dataclasses.replace(experiment, search=dataclasses.replace(experiment.search, **search))


def measured_study(space, gflops_by_key: dict[str, float]) -> optuna.Study:
    study = optuna.create_study(direction="maximize")
    for config in space.valid:
        if config.key in gflops_by_key:
            study.add_trial(optuna.trial.create_trial(params=space.params(config), distributions=space.distributions(),
                                                      value=gflops_by_key[config.key]))
    return study


def test_the_best_of_each_earlier_study_come_first_then_the_second_best():
    first, second, third = study_spaces(load_experiment(FERMI))
    assert same_space(first, second) and same_space(first, third)
    a, b = first.valid[:3], second.valid[3:6]
    earlier = [(measured_study(first, {a[0].key: 10.0, a[1].key: 30.0, a[2].key: 0.0}), first),
               (measured_study(second, {b[0].key: 900.0, b[1].key: 700.0, b[2].key: 800.0}), second)]
    target = optuna.create_study(direction="maximize")
    assert transfer_best(target, third, earlier, 3, 8) == 3
    waiting = target.get_trials(deepcopy=False)
    picked = [third.config_of(trial.system_attrs["fixed_params"]).param_dict for trial in waiting]
    # the latest study's best, the first study's best, the latest study's second best; a failed (0) row never
    assert picked == [b[0].param_dict, a[1].param_dict, b[2].param_dict]
    assert [trial.user_attrs[TRANSFER_ATTR] for trial in waiting] == [second.name, first.name, second.name]


def test_a_study_gets_the_rest_of_its_count_and_nothing_it_holds_or_of_another_space():
    first, second, _ = study_spaces(load_experiment(FERMI))
    a = first.valid[:3]
    earlier = [(measured_study(first, {a[0].key: 5.0, a[1].key: 4.0, a[2].key: 3.0}), first)]
    target = measured_study(second, {second.config_of(first.params(a[0])).key: 1.0})
    assert transfer_best(target, second, earlier, 2, 8) == 2  # the fastest is measured there already
    assert transfer_best(target, second, earlier, 2, 8) == 0  # both transferred
    waiting = [t.system_attrs["fixed_params"] for t in target.get_trials(deepcopy=False)
               if TRANSFER_ATTR in t.user_attrs]
    assert waiting == [first.params(a[1]), first.params(a[2])]
    float64 = dataclasses.replace(second, dtype="float64")
    assert not same_space(first, float64)
    assert transfer_best(optuna.create_study(direction="maximize"), float64, earlier, 4, 8) == 0
    assert transfer_best(optuna.create_study(direction="maximize"), second, earlier, 0, 8) == 0


def transferred(folder: Path) -> dict[str, list[tuple[str, str]]]:
    """Per study of a run folder's storage: (source study, configuration key) of each transferred trial."""
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(folder / "study.log")))
    found = {}
    for summary in optuna.get_all_study_summaries(storage):
        study = optuna.load_study(study_name=summary.study_name, storage=storage)
        found[summary.study_name] = [(t.user_attrs[TRANSFER_ATTR], t.user_attrs[CLAIM_ATTR])
                                     for t in study.get_trials(deepcopy=False) if TRANSFER_ATTR in t.user_attrs]
    return found


def test_a_run_measures_the_earlier_problems_best_on_each_next_problem_and_a_resumed_run_adds_none(tmp_path):
    experiment = fermi_with(transfer=3, sampler="random", trials=12)
    df = tuner.run(experiment, backend=ScriptedBackend(), out=tmp_path / "run", quiet=True, report=False).df
    spaces = study_spaces(experiment)
    ok = df[(df["study"] != BASELINE) & (df["status"] == "ok")]

    def fastest(study: str) -> list[tuple]:
        rows = ok[ok["study"] == study].sort_values("gflops", ascending=False)
        return [tuple(r) for r in rows[params].astype(str).itertuples(index=False)]

    params = [c for c in df.columns if c.startswith("p_")]
    moved = transferred(tmp_path / "run")
    assert moved[spaces[0].name] == []
    got = {}
    for at in (1, 2):
        assert len(moved[spaces[at].name]) == 3
        assert {source for source, _ in moved[spaces[at].name]} <= {s.name for s in spaces[:at]}
        rows = df[df["config_key"].isin({key for _, key in moved[spaces[at].name]})]
        assert len(rows) == 3 and set(rows["study"]) == {spaces[at].name}  # measured, in the study they went to
        got[at] = {tuple(r) for r in rows[params].astype(str).itertuples(index=False)}
    # the second study was prepared while the first measured its last configurations and topped up when it
    # started, so it has the first study's two fastest at least; the third has the first study's fastest (the
    # second best of its turn-about ranking at worst)
    assert set(fastest(spaces[0].name)[:2]) <= got[1]
    assert fastest(spaces[0].name)[0] in got[2]
    again = tuner.run(dataclasses.replace(experiment, search=dataclasses.replace(experiment.search, trials=14)),
                      backend=ScriptedBackend(), out=tmp_path / "run", quiet=True, report=False).df
    assert transferred(tmp_path / "run") == moved
    assert len(again) == len(df) + 3 * 2


def test_transfer_is_a_whole_number(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(FERMI.read_text().replace("search:", "search:\n  transfer: -1", 1))
    with pytest.raises(ExperimentError, match="transfer"):
        load_experiment(path)


def test_the_command_line_transfers_as_the_experiment_says_unless_told_otherwise(tmp_path, capsys):
    sgemm = ROOT / "experiments" / "h100_sgemm.yaml"
    recording = ROOT / "experiments" / "data" / "h100_sgemm_h100"
    common = ["run", str(sgemm), "--backend", "replay", "--replay", str(recording), "--trials", "12", "--quiet",
              "--no-report"]
    assert cli.main([*common, "--out", str(tmp_path / "told")]) == 0
    assert cli.main([*common, "--out", str(tmp_path / "none"), "--transfer", "0"]) == 0
    assert load_experiment(sgemm).search.transfer == 5
    told, none = transferred(tmp_path / "told"), transferred(tmp_path / "none")
    spaces = study_spaces(load_experiment(sgemm))
    # the replayed spaces hold only what the recording measured on each problem: fewer than 5 carry over
    assert all(told[space.name] == [] for space in spaces[:2])
    assert all(told[space.name] for space in spaces[2:])
    df = pd.read_parquet(tmp_path / "told" / "results.parquet")
    for space in spaces[2:]:
        keys = {key for _, key in told[space.name]}
        assert set(df[df["config_key"].isin(keys)]["study"]) == {space.name}
    assert all(moved == [] for moved in none.values())
    capsys.readouterr()
    assert cli.main([*common, "--out", str(tmp_path / "bad"), "--transfer", "-1"]) == 2
    assert "--transfer must be a whole number ≥ 0, not -1" in capsys.readouterr().err
