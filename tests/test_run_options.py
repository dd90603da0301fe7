"""A run's settings follow one rule each, wherever they are given: the experiment file names its field, an
experiment built in Python its field too, ``tuner.run`` its parameter and the command line its option."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from scripted_backend import ScriptedBackend
from test_study import TINY

import tuner
from tuner import cli
from tuner.errors import ExperimentError, TunerError, option_name, parameter_name
from tuner.experiment.python_experiment import check_experiment
from tuner.experiment.schema import load_experiment, parse_experiment
from tuner.strategies import optuna_samplers
from tuner.tuning.options import RunOptions, resolve

ROOT = Path(__file__).resolve().parent.parent
FERMI = ROOT / "experiments" / "fermi_like.yaml"


def test_the_python_api_names_the_parameter_and_the_command_line_the_option(tmp_path, capsys):
    with pytest.raises(TunerError, match="^heartbeat must be an integer ≥ 1 \\(seconds\\), not 0$"):
        tuner.run(load_experiment(FERMI), backend=ScriptedBackend(), out=tmp_path / "api", heartbeat=0)
    with pytest.raises(TunerError, match="^counters must be one of none, best, all, not 'some'$"):
        tuner.run(load_experiment(FERMI), backend=ScriptedBackend(), out=tmp_path / "api", counters="some")
    assert cli.main(["run", str(FERMI), "--backend", "replay", "--trials", "0", "--out", str(tmp_path / "cli"),
                     "--quiet", "--no-report"]) == 2
    assert "error: --trials must be an integer ≥ 1, not 0" in capsys.readouterr().err
    assert not (tmp_path / "api").exists() and not (tmp_path / "cli").exists()


def test_a_setting_with_its_value_is_named_as_each_caller_writes_it():
    assert parameter_name("backend", "replay") == "backend='replay'"
    assert parameter_name("replay", "PATH") == "replay=PATH"
    assert option_name("backend", "replay") == "--backend replay" and option_name("replay", "PATH") == "--replay PATH"
    assert parameter_name("replay_pace") == "replay_pace" and option_name("replay_pace") == "--replay-pace"


def test_what_the_run_opens_names_the_python_parameters_too(tmp_path):
    other = dataclasses.replace(load_experiment(FERMI), name="other")
    with pytest.raises(TunerError, match="^backend='replay' needs replay=PATH: a recorded run folder"):
        tuner.run(other, backend="replay", out=tmp_path / "other")
    out = tmp_path / "run"
    tuner.run(load_experiment(FERMI), backend="replay", strategy="random", trials=1, out=out, quiet=True,
              report=False)
    with pytest.raises(TunerError, match=r"run with strategy='random' to continue it, or into a new output folder "
                                         r"\(out\) or storage to search with 'grid'"):
        tuner.run(load_experiment(FERMI), backend="replay", strategy="grid", trials=1, out=out, quiet=True,
                  report=False)
    assert not (tmp_path / "other").exists()


def test_a_missing_package_names_the_strategy_parameter(tmp_path, monkeypatch):
    monkeypatch.setattr(optuna_samplers.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(TunerError, match="'gp' sampler needs the Python package 'torch'.*with strategy$"):
        tuner.run(load_experiment(FERMI), backend=ScriptedBackend(), strategy="gp", out=tmp_path / "run")
    with pytest.raises(TunerError, match="with --strategy$"):
        optuna_samplers.sampler_maker("gp", option_name)


def test_the_experiment_follows_the_same_rules_named_by_its_fields():
    with pytest.raises(ExperimentError, match="search.trials.*expected an integer ≥ 1, found int 0"):
        parse_experiment(TINY + "search: {trials: 0}\n", "tiny.yaml")
    built = dataclasses.replace(load_experiment(FERMI), path=None)
    with pytest.raises(ExperimentError, match="search.seed.*must be an integer ≥ 0, not -1"):
        check_experiment(dataclasses.replace(built, search=dataclasses.replace(built.search, seed=-1)))


def test_options_given_override_the_experiment_and_the_rest_come_from_it():
    experiment = load_experiment(FERMI)
    settings = resolve(RunOptions(trials=3, transfer=2, counters="none", out="elsewhere"), experiment,
                       parameter_name)
    assert settings.budget.trials == 3 and settings.budget.timeout_s == experiment.search.timeout_s
    assert settings.seed == experiment.search.seed and settings.strategy == experiment.search.strategy
    assert settings.experiment.search.transfer == 2 and settings.experiment.measure.counters == "none"
    assert settings.out == Path("elsewhere") and settings.summary
    assert resolve(RunOptions(quiet=True), experiment, parameter_name).summary is False
    assert resolve(RunOptions(), experiment, parameter_name).out == Path("reports") / experiment.name


def test_the_resume_command_names_the_options_given():
    experiment = load_experiment(FERMI)
    options = RunOptions(trials=3, replay_pace=2.0, quiet=True)
    command = options.resume_command(experiment, Path("out"), ("time",), "replay")
    assert command == f"python -m tuner run {experiment.path} --backend replay --trials 3 --out out --replay-pace 2.0"
    assert option_name("replay_pace") == "--replay-pace" and parameter_name("replay_pace") == "replay_pace"


def test_the_strategys_former_name_is_refused_naming_it(tmp_path):
    with pytest.raises(TypeError, match="^run\\(\\): sampler is called strategy now$"):
        tuner.run(load_experiment(FERMI), backend=ScriptedBackend(), sampler="random", out=tmp_path / "run")
    with pytest.raises(TypeError, match="^RunOptions\\(\\): sampler is called strategy now$"):
        RunOptions(sampler="grid")
    assert not (tmp_path / "run").exists()
