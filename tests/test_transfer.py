"""Each next problem starts with the configurations measured fastest on the problems before it."""

from __future__ import annotations

import dataclasses
import json
import socket
from pathlib import Path

import optuna
import pandas as pd
import pytest
from optuna.trial import TrialState
from scripted_backend import ScriptedBackend
from test_study import ListRecorder

import tuner
from tuner import cli
from tuner.experiment.schema import ExperimentError, load_experiment
from tuner.optuna_attrs import CLAIM_ATTR, RETRY_ATTR, TRANSFER_ATTR, WORKER_ATTR
from tuner.search.claims import HostWorkers
from tuner.search.study import Budget, StudySearch, ask_configuration, open_storage, open_study
from tuner.search.study_space import study_spaces
from tuner.search.transfer import same_space, transfer_best
from tuner.tuning.progress import Progress

ROOT = Path(__file__).resolve().parents[1]
FERMI = ROOT / "experiments" / "fermi_like.yaml"


def fermi_with(**search) -> tuner.Experiment:
    experiment = load_experiment(FERMI)
    return dataclasses.replace(experiment, search=dataclasses.replace(experiment.search, **search))


def measured_study(space, gflops_by_key: dict[str, float]) -> optuna.Study:
    study = optuna.create_study(direction="maximize")
    for config in space.valid:
        if config.key in gflops_by_key:
            params = space.params(config)
            study.add_trial(optuna.trial.create_trial(params=params, distributions=space.distributions_of(params),
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


TWO_DTYPES = """
name: two
problems:
  - {M: 64, N: 48, K: 32}
  - {M: 96, N: 40, K: 24}
kernels:
  - template: naive
    parameters: {BLOCK_X: [8, 16, 32, 64], BLOCK_Y: [4, 8, 16, 32], dtype: [float32, float64]}
  - template: tiled
    parameters: {TILE_WIDTH: [8, 16, 32], dtype: [float32, float64]}
search: {strategy: random, trials: 12, transfer: 3}
"""


def speeds(df: pd.DataFrame, study: str, keys: set[str] | None = None) -> list[float]:
    """The ok speeds of a study's rows (of the configurations with these keys, on any problem), fastest first."""
    rows = df[(df["study"] == study) & (df["status"] == "ok")]
    if keys is not None:
        names = {key.split("/", 1)[1] for key in keys}  # the configuration apart from its problem
        rows = rows[rows["config_key"].map(lambda key: key.split("/", 1)[1] in names)]
    return sorted(rows["gflops"], reverse=True)


def test_each_next_problem_starts_with_the_fastest_of_its_dtype_on_the_problem_before(tmp_path):
    """The studies go problem by problem, float32 then float64: each next problem's study is prepared after the
    study of its dtype on the problem before has finished, so it gets that study's three fastest."""
    path = tmp_path / "two.yaml"
    path.write_text(TWO_DTYPES)
    experiment = load_experiment(path)
    df = tuner.run(experiment, backend=ScriptedBackend(), out=tmp_path / "run", quiet=True, report=False).df
    first32, first64, second32, second64 = (space.name for space in study_spaces(experiment))
    moved = transferred(tmp_path / "run")
    assert moved[first32] == moved[first64] == []
    for before, after in ((first32, second32), (first64, second64)):
        assert [source for source, _ in moved[after]] == [before] * 3
        keys = {key for _, key in moved[after]}
        assert len(df[df["config_key"].isin(keys)]) == 3  # measured on the next problem
        assert speeds(df, before, keys) == speeds(df, before)[:3]
        marked = df[df["transferred_from"].notna()]
        assert set(marked[marked["study"] == after]["config_key"]) == keys
        assert set(marked[marked["study"] == after]["transferred_from"]) == {before}
    assert set(df[df["transferred_from"].notna()]["study"]) == {second32, second64}
    # the column survives the table's rebuilding from the storage
    rebuilt = tuner.run(experiment, backend=ScriptedBackend(), out=tmp_path / "run", quiet=True, report=False).df
    assert rebuilt["transferred_from"].notna().sum() == 6


@pytest.mark.slow
def test_a_study_prepared_early_is_topped_up_when_it_starts_and_a_resumed_run_adds_none(tmp_path):
    """fermi_like's three problems share one space: each next study is prepared while the one before measures its
    last configurations, and is given the rest of its three when it starts."""
    experiment = fermi_with(transfer=3, strategy="random", trials=12)
    df = tuner.run(experiment, backend=ScriptedBackend(), out=tmp_path / "run", quiet=True, report=False).df
    spaces = [space.name for space in study_spaces(experiment)]
    moved = transferred(tmp_path / "run")
    assert moved[spaces[0]] == []
    for at in (1, 2):
        assert len(moved[spaces[at]]) == 3
        assert {source for source, _ in moved[spaces[at]]} <= set(spaces[:at])
        rows = df[df["config_key"].isin({key for _, key in moved[spaces[at]]})]
        assert len(rows) == 3 and set(rows["study"]) == {spaces[at]}  # measured, in the study they went to
    # the first study had finished when the third was prepared: its fastest is among the third's (the first or
    # second of the turn-about ranking)
    assert speeds(df, spaces[0])[0] in speeds(df, spaces[0], {key for _, key in moved[spaces[2]]})
    again = tuner.run(dataclasses.replace(experiment, search=dataclasses.replace(experiment.search, trials=14)),
                      backend=ScriptedBackend(), out=tmp_path / "run", quiet=True, report=False).df
    assert transferred(tmp_path / "run") == moved
    assert len(again) == len(df) + 3 * 2


def test_transfer_is_a_whole_number(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(FERMI.read_text().replace("search:", "search:\n  transfer: -1", 1))
    with pytest.raises(ExperimentError, match="transfer"):
        load_experiment(path)


@pytest.mark.slow
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
    runs = {name: json.loads((tmp_path / name / "metadata.json").read_text())["runs"] for name in ("told", "none")}
    assert runs["told"][-1]["transfer"] == 5 and runs["none"][-1]["transfer"] == 0
    capsys.readouterr()
    assert cli.main([*common, "--out", str(tmp_path / "bad"), "--transfer", "-1"]) == 2
    assert "--transfer must be an integer ≥ 0, not -1" in capsys.readouterr().err


def test_a_transferred_trial_a_dead_worker_left_is_asked_again_still_naming_its_source(tmp_path):
    """A worker sharing the study fails a dead worker's RUNNING trial and queues its configuration again: the
    retry keeps the transfer's source, so its row is marked like the first attempt would have been."""
    first, second, _ = study_spaces(load_experiment(FERMI))
    storage = open_storage(f"journal://{tmp_path / 'study.log'}")
    study = open_study(storage, second, "random", seed=0)
    config = second.valid[2]
    study.enqueue_trial(second.params(config), user_attrs={TRANSFER_ATTR: first.name})
    left = ask_configuration(study, second)
    left.set_user_attr(WORKER_ATTR, f"{socket.gethostname()}/not-a-pid/0")  # a process of this host that is gone
    search = StudySearch(study, second, ScriptedBackend(), Budget(3), ListRecorder(), Progress(quiet=True),
                         HostWorkers())
    search.policy.fail_dead(search.pending)
    retry = next(t for t in study.get_trials(deepcopy=False) if t.state == TrialState.WAITING)
    assert retry.user_attrs[TRANSFER_ATTR] == first.name and retry.user_attrs[RETRY_ATTR] == left.number
    search.run()
    assert [r.transferred_from for r in search.recorder.records if r.config.key == config.key] == [first.name]
