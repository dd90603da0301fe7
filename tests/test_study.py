"""The study logic: search space, samplers, budget, dedupe, invalid configurations, recovery."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState
from scripted_backend import ScriptedBackend, scripted_gflops, scripted_outcome

from tuner import study as study_module
from tuner.config import Config, Problem
from tuner.errors import TunerError
from tuner.experiment import SAMPLERS, load_experiment, parse_experiment
from tuner.measurement import Measurement, Status
from tuner.progress import Progress
from tuner.results import Record
from tuner.storage import open_storage
from tuner.study import (
    DUPLICATE_ATTR,
    LOOKAHEAD,
    RECORD_ATTR,
    Budget,
    StudySearch,
    make_sampler,
    open_study,
    recover,
    study_spaces,
)

ROOT = Path(__file__).resolve().parent.parent
FERMI = ROOT / "experiments" / "fermi_like.yaml"
TINY = """
name: tiny
problems:
  - {M: 64, N: 48, K: 32}
kernels:
  - template: naive
    parameters: {BLOCK_X: [8, 16, 32, 64], BLOCK_Y: [4, 8, 16, 32]}
  - template: tiled
    parameters: {TILE_WIDTH: [8, 16, 32]}
"""


class ListRecorder:
    """Keeps the records in a list, stamped with fixed provenance."""

    def __init__(self) -> None:
        self.records: list[Record] = []

    def record(self, study: str, trial: int, sampler: str, config: Config, measurement: Measurement,
               device_s: float | None) -> Record:
        return Record("test", study, sampler, trial, config, measurement, "env", 0.0, "2000-01-01T00:00:00", device_s)

    def add(self, record: Record) -> None:
        self.records.append(record)


@pytest.fixture
def storage(tmp_path: Path) -> optuna.storages.RDBStorage:
    return open_storage(f"sqlite:///{tmp_path / 'study.db'}")


def search(storage, space, sampler="random", budget=None, backend=None, enqueue=()):
    budget = budget or Budget(100)
    backend = backend or ScriptedBackend()
    study = open_study(storage, space, sampler, seed=0)
    for config in enqueue:
        study.enqueue_trial(space.params(config))
    recorder = ListRecorder()
    outcome = StudySearch(study, space, backend, budget, sampler, recorder, Progress(quiet=True)).run()
    return outcome, recorder.records, backend, study


def fermi_space(index: int = 1):
    return study_spaces(load_experiment(FERMI))[index]


def test_one_space_per_problem_and_dtype_with_the_listed_values():
    spaces = study_spaces(load_experiment(FERMI))
    assert [s.name for s in spaces] == ["fermi_like/4096x4096x4096/float32", "fermi_like/1024x1024x1024/float32",
                                        "fermi_like/1000x777x333/float32"]
    space = spaces[0]
    assert space.choices == {"naive": {"BLOCK_X": (8, 16, 32, 64), "BLOCK_Y": (4, 8, 16, 32)},
                             "tiled": {"TILE_WIDTH": (8, 16, 32)}}
    assert len(space.valid) == 15 + 3 and space.size == 19
    (key, reason), = space.rejected.items()
    assert key.endswith("naive/float32/BLOCK_X=64,BLOCK_Y=32") and "threads per block" in reason


def test_parameters_round_trip_and_are_conditional_on_the_family():
    space = fermi_space()
    for config in space.valid:
        params = space.params(config)
        assert params["family"] == config.family
        assert {k.split(".")[0] for k in params if k != "family"} == {config.family}
        assert space.config_of(params) == config
    assert space.config_of({"family": "naive", "naive.BLOCK_X": 8}) is None


def test_a_single_family_needs_no_family_parameter():
    text = TINY.replace("""  - template: naive
    parameters: {BLOCK_X: [8, 16, 32, 64], BLOCK_Y: [4, 8, 16, 32]}
""", "")
    space = study_spaces(parse_experiment(text, "tiny.yaml"))[0]
    assert space.params(space.valid[0]) == {"tiled.TILE_WIDTH": 8}


def test_every_status_is_a_record_with_its_reason_and_static_rejects_never_reach_the_backend(storage):
    space = fermi_space()
    static_invalid = Config.make(space.problem, "naive", "float32", {"BLOCK_X": 64, "BLOCK_Y": 32})
    outcome, records, backend, study = search(storage, space, "grid", enqueue=[static_invalid])
    by_key = {r.config.key: r.measurement for r in records}
    assert len(by_key) == len(records) == 19
    assert {m.status for m in by_key.values()} == set(Status)
    assert by_key[static_invalid.key].reason == "threads per block ≤ 1024"
    assert static_invalid.key not in backend.calls
    for config in space.valid:
        assert by_key[config.key] == scripted_outcome(config)
    for m in by_key.values():
        assert (m.status is Status.OK) == (m.reason == "")
    values = {t.user_attrs[RECORD_ATTR]["config_key"]: t.value for t in study.get_trials()}
    for config in space.valid:
        expected = scripted_gflops(config) if by_key[config.key].status is Status.OK else 0.0
        assert values[config.key] == pytest.approx(expected)
    assert values[static_invalid.key] == 0.0


def test_grid_sweeps_valid_configurations_in_file_order_and_stops_when_all_are_done(storage):
    space = fermi_space()
    outcome, records, backend, _ = search(storage, space, "grid", Budget(1000))
    assert backend.calls == [c.key for c in space.valid]
    assert outcome.stopped == "every valid configuration evaluated"
    assert backend.prefetched[0] == [c.key for c in space.valid[:LOOKAHEAD]]


def test_repeated_suggestions_are_told_the_recorded_value_and_never_measured_again(storage):
    space = fermi_space()
    tiled16 = Config.make(space.problem, "tiled", "float32", {"TILE_WIDTH": 16})
    outcome, records, backend, study = search(storage, space, "random", Budget(4), enqueue=[tiled16] * 4)
    assert backend.calls.count(tiled16.key) == 1
    assert len(backend.calls) == len(set(backend.calls))
    duplicates = [t for t in study.get_trials() if DUPLICATE_ATTR in t.user_attrs]
    original = next(t for t in study.get_trials() if RECORD_ATTR in t.user_attrs
                    and t.user_attrs[RECORD_ATTR]["config_key"] == tiled16.key)
    assert len(duplicates) == outcome.duplicates >= 3
    assert {t.user_attrs[DUPLICATE_ATTR] for t in duplicates} == {original.number}
    assert {t.value for t in duplicates} == {original.value}
    assert len(records) == 4


def test_a_sampler_repeating_itself_stops_the_study(storage):
    space = fermi_space()
    tiled16 = Config.make(space.problem, "tiled", "float32", {"TILE_WIDTH": 16})
    outcome, records, backend, _ = search(storage, space, "random", Budget(10, max_repeats=5),
                                          enqueue=[tiled16] * 20)
    assert outcome.stopped == "the sampler repeated itself 5 times in a row"
    assert backend.calls == [tiled16.key]
    assert len(records) == 1


@pytest.mark.parametrize("trials", [1, 7])
def test_the_budget_counts_distinct_evaluations_invalid_ones_included(storage, trials):
    space = fermi_space()
    static_invalid = Config.make(space.problem, "naive", "float32", {"BLOCK_X": 64, "BLOCK_Y": 32})
    outcome, records, backend, _ = search(storage, space, "random", Budget(trials), enqueue=[static_invalid])
    assert len(records) == len({r.config.key for r in records}) == trials == outcome.evaluated
    assert len(backend.calls) == trials - 1
    assert outcome.stopped == f"{trials} configurations evaluated"


def test_the_time_budget_stops_a_study(storage):
    outcome, records, backend, _ = search(storage, fermi_space(), "random", Budget(10, timeout_s=1e-9))
    assert outcome.stopped == "time budget of 1e-09 s spent"
    assert records == [] and backend.calls == []


def test_a_continued_study_counts_earlier_evaluations_against_its_budget(storage):
    space = fermi_space()
    _, first, _, _ = search(storage, space, "random", Budget(5))
    outcome, second, backend, _ = search(storage, space, "random", Budget(8))
    assert len(first) == 5 and len(second) == 3 == outcome.new and outcome.evaluated == 8
    assert not {r.config.key for r in first} & {r.config.key for r in second}


def test_recover_fails_dead_trials_and_enqueues_their_configurations_again(storage):
    space = fermi_space()
    study = open_study(storage, space, "random", seed=0)
    config = space.valid[4]
    study.enqueue_trial(space.params(config))
    dead = study.ask()
    assert space.suggest(dead) == config
    measured = space.valid[5]
    study.enqueue_trial(space.params(measured))
    finished_but_untold = study.ask()
    space.suggest(finished_but_untold)
    record = ListRecorder().record(space.name, finished_but_untold.number, "random", measured,
                                   scripted_outcome(measured), 0.1)
    finished_but_untold.set_user_attr(RECORD_ATTR, record.attrs())

    recover(study, space)
    trials = {t.number: t for t in study.get_trials()}
    assert trials[dead.number].state == TrialState.FAIL
    assert trials[finished_but_untold.number].state == TrialState.COMPLETE
    assert trials[finished_but_untold.number].value == pytest.approx(scripted_gflops(measured))
    waiting = [t for t in trials.values() if t.state == TrialState.WAITING]
    recover(study, space)  # a second recovery enqueues nothing more
    assert len(study.get_trials(states=(TrialState.WAITING,))) == 1
    assert [t.user_attrs["enqueued"] for t in waiting] == [config.key]
    assert space.suggest(study.ask()) == config


def _sampler_available(name: str) -> bool:
    needs = {"cmaes": "cmaes", "gp": "torch"}.get(name)
    return needs is None or importlib.util.find_spec(needs) is not None


@pytest.mark.parametrize("name", SAMPLERS)
def test_each_sampler_runs_a_tiny_study(storage, name):
    if not _sampler_available(name):
        pytest.skip(f"the {name} sampler needs a package that is not installed here")
    space = study_spaces(parse_experiment(TINY, "tiny.yaml"))[0]
    outcome, records, backend, study = search(storage, space, name, Budget(6))
    keys = [r.config.key for r in records]
    assert len(keys) == len(set(keys)) == 6
    assert len(backend.calls) == len(set(backend.calls))
    assert all(r.sampler == name for r in records)
    assert outcome.stopped == "6 configurations evaluated"


def test_samplers_needing_a_missing_package_say_so(monkeypatch):
    monkeypatch.setattr(study_module.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(TunerError, match="'gp' sampler needs the Python package 'torch'"):
        make_sampler("gp", 0)


def test_an_unknown_sampler_is_refused():
    with pytest.raises(TunerError, match="unknown sampler 'annealing'"):
        make_sampler("annealing", 0)


@pytest.mark.parametrize(("url", "named"), [("notadb://x", "notadb://x"), ("garbage", "garbage"),
                                            ("sqlite:////no/such/folder/study.db", "/no/such/folder/study.db")])
def test_a_storage_url_that_cannot_be_opened_is_named(url, named):
    with pytest.raises(TunerError, match="cannot open the Optuna storage|cannot be opened or created") as error:
        open_storage(url)
    assert named in str(error.value)


def test_changed_parameter_values_of_an_existing_study_are_explained(storage):
    space = fermi_space()
    search(storage, space, "random", Budget(3))
    changed = parse_experiment(FERMI.read_text().replace("TILE_WIDTH: [8, 16, 32]", "TILE_WIDTH: [8, 16]"),
                               str(FERMI))
    with pytest.raises(TunerError, match="created with other parameter values"):
        search(storage, study_spaces(changed)[1], "random", Budget(6))


def test_problem_of_a_space_is_its_own():
    assert fermi_space(2).problem == Problem(1000, 777, 333)


def test_a_repeating_sampler_is_moved_on_to_unevaluated_configurations(storage):
    space = fermi_space()
    budget = space.size - 2
    outcome, records, backend, study = search(storage, space, "tpe", Budget(budget))
    assert outcome.stopped == f"{budget} configurations evaluated"
    assert len(records) == len({r.config.key for r in records}) == budget
    assert len(backend.calls) == len(set(backend.calls))
