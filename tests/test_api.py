"""The programmatic API as a notebook uses it: strategies by name, as Optuna samplers or as our own Strategy
objects, a storage object, callbacks, an experiment built in Python and validated as a file is."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import optuna
import pytest
from scripted_backend import ScriptedBackend

import tuner
from tuner.config import Problem
from tuner.errors import ExperimentError
from tuner.strategies import RandomSearch

ROOT = Path(__file__).resolve().parent.parent
FERMI = ROOT / "experiments" / "fermi_like.yaml"


def small_experiment(**changes) -> tuner.Experiment:
    kernels = (tuner.KernelSpec("tiled", {"TILE_WIDTH": (8, 16, 32)}, ("float32",)),
               tuner.KernelSpec("naive", {"BLOCK_X": (8, 16), "BLOCK_Y": (4, 8)}, ("float32",)))
    return tuner.Experiment(**{"name": "notebook", "problems": (Problem(256, 256, 256),), "kernels": kernels,
                               **changes})


def test_the_types_a_user_needs_are_exported():
    for name in ("Backend", "Measurement", "Config", "Strategy", "Domain", "Evaluation", "Experiment", "KernelSpec",
                 "run"):
        assert getattr(tuner, name) is not None


def test_an_experiment_built_in_python_runs_with_callbacks_and_no_summary(tmp_path, capsys):
    seen: list[tuner.Evaluation] = []
    result = tuner.run(small_experiment(), backend=ScriptedBackend(), strategy="ils", trials=5, out=tmp_path / "run",
                       quiet=True, report=False, summary=False, callbacks=[seen.append])
    assert capsys.readouterr().out == ""
    assert [e.evaluated for e in seen] == [1, 2, 3, 4, 5]
    assert {e.study for e in seen} == {"notebook/256x256x256/float32"}
    assert seen[-1].best == max(((e.value, e.config) for e in seen if e.value), key=lambda b: b[0])
    assert [e.config.key for e in seen] == result.df.loc[result.df["family"] != "baseline", "config_key"].tolist()


def test_an_optuna_sampler_object_and_a_strategy_class_are_strategies(tmp_path):
    by_object = tuner.run(small_experiment(), backend=ScriptedBackend(), strategy=optuna.samplers.RandomSampler(seed=1),
                          trials=4, out=tmp_path / "a", quiet=True, report=False)
    assert set(by_object.df.loc[by_object.df["family"] != "baseline", "strategy"]) == {"RandomSampler"}

    class Descending(RandomSearch):
        name = "descending"

        def propose(self) -> int:
            free = np.flatnonzero(~self.taken)
            return int(free[-1])

    by_class = tuner.run(small_experiment(), backend=ScriptedBackend(), strategy=Descending, trials=3,
                         out=tmp_path / "b", quiet=True, report=False)
    kernels = by_class.df[by_class.df["family"] != "baseline"]
    assert set(kernels["strategy"]) == {"descending"} and kernels["config_key"].is_unique and len(kernels) == 3


def test_a_storage_object_is_used_as_given(tmp_path):
    storage = optuna.storages.InMemoryStorage()
    tuner.run(small_experiment(), backend=ScriptedBackend(), trials=3, storage=storage, out=tmp_path / "run",
              quiet=True, report=False)
    study = optuna.load_study(study_name="notebook/256x256x256/float32", storage=storage)
    assert len(study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))) == 3


@pytest.mark.parametrize(("changes", "field", "says"), [
    ({"kernels": (tuner.KernelSpec("tiledd", {"TILE_WIDTH": (8,)}, ("float32",)),)}, "kernels[0].template",
     "unknown template 'tiledd'"),
    ({"kernels": (tuner.KernelSpec("tiled", {"TILE": (8,)}, ("float32",)),)}, "kernels[0].parameters.TILE",
     "has no parameter 'TILE'"),
    ({"kernels": (tuner.KernelSpec("tiled", {"TILE_WIDTH": (8,)}, ("float128",)),)}, "kernels[0].parameters.dtype",
     "does not support 'float128'"),
    ({"problems": ()}, "problems", "at least one problem"),
])
def test_an_experiment_built_in_python_is_validated_as_a_file(tmp_path, changes, field, says):
    with pytest.raises(ExperimentError, match=says) as error:
        tuner.run(small_experiment(**changes), backend=ScriptedBackend(), out=tmp_path / "run", quiet=True)
    assert error.value.field == field
    assert not (tmp_path / "run").exists()
