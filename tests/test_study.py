"""The study logic: search space, samplers, budget, claims, invalid configurations, taking over a dead run."""

from __future__ import annotations

import importlib.util
import threading
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState
from scripted_backend import (
    CompilingBackend,
    ScriptedBackend,
    SubmittingBackend,
    scripted_gflops,
    scripted_outcome,
)

from tuner.config import Config, Problem
from tuner.errors import TunerError
from tuner.experiment.schema import STRATEGIES, load_experiment, parse_experiment
from tuner.measure.measurement import Measurement, Status
from tuner.optuna_attrs import CLAIM_ATTR, LOST_ATTR, RECORD_ATTR, WORKER_ATTR
from tuner.results.record import Record
from tuner.search.claims import ThisProcess
from tuner.search.study import (
    LOOKAHEAD,
    Budget,
    StudySearch,
    ask_configuration,
    check_strategy,
    open_storage,
    open_study,
    study_spaces,
)
from tuner.strategies import optuna_samplers
from tuner.tuning.progress import Progress

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
    """Keeps the records in a list, stamped with fixed provenance; ``log``, when given, gets ("store", key)."""

    def __init__(self, log: list[tuple[str, str]] | None = None) -> None:
        self.records: list[Record] = []
        self.log = log

    def record(self, study: str, trial: int, sampler: str, config: Config, measurement: Measurement,
               device_s: float | None) -> Record:
        return Record("test", study, sampler, trial, config, measurement, "env", 0.0, "2000-01-01T00:00:00", device_s)

    def add(self, record: Record) -> None:
        self.records.append(record)
        if self.log is not None:
            self.log.append(("store", record.config.key))


STORAGE_URLS = {"journal": "journal://{}/study.log", "sqlite": "sqlite:///{}/study.db"}


@pytest.fixture
def storage(tmp_path: Path) -> optuna.storages.BaseStorage:
    """The storage a run keeps by default, a journal file (a few times cheaper per trial than SQLite)."""
    return open_storage(STORAGE_URLS["journal"].format(tmp_path))


def search(storage, space, sampler="random", budget=None, backend=None, enqueue=()):
    budget = budget or Budget(100)
    backend = backend or ScriptedBackend()
    study = open_study(storage, space, sampler, seed=0)
    for config in enqueue:
        study.enqueue_trial(space.params(config))
    recorder = ListRecorder(getattr(backend, "log", None))
    outcome = StudySearch(study, space, backend, budget, recorder, Progress(quiet=True)).run()
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


def test_a_trial_stores_its_familys_values_while_the_strategies_see_every_axis_as_positions():
    space = fermi_space()
    assert [a.name for a in space.axes] == ["family", "naive.BLOCK_X", "naive.BLOCK_Y", "tiled.TILE_WIDTH"]
    for config in space.valid:
        params = space.params(config)
        assert params == {"family": config.family, **{f"{config.family}.{k}": v for k, v in config.params}}
        assert space.config_of(params) == config
        point = space.point_of(params)
        assert space.index_point(space.index_params(point)).tolist() == point.tolist()
        assert set(space.index_params(point)) == {a.name for a in space.axes}
    tiled32 = Config.make(space.problem, "tiled", "float32", {"TILE_WIDTH": 32})
    assert space.params(tiled32) == {"family": "tiled", "tiled.TILE_WIDTH": 32}
    assert space.index_params(space.point_of(space.params(tiled32))) == {
        "family": "tiled", "naive.BLOCK_X": 0, "naive.BLOCK_Y": 0, "tiled.TILE_WIDTH": 2}
    assert space.distributions()["tiled.TILE_WIDTH"] == optuna.distributions.IntDistribution(8, 32)
    assert space.index_distributions()["tiled.TILE_WIDTH"] == optuna.distributions.IntDistribution(0, 2)
    assert space.config_of({"family": "naive", "naive.BLOCK_X": 8}) is None
    assert space.config_of({"family": "tiled", "tiled.TILE_WIDTH": 12}) is None
    assert space.domain.values == tuple(a.values for a in space.axes)  # a model reads their alignment


def test_a_single_family_needs_no_family_parameter():
    text = TINY.replace("""  - template: naive
    parameters: {BLOCK_X: [8, 16, 32, 64], BLOCK_Y: [4, 8, 16, 32]}
""", "")
    space = study_spaces(parse_experiment(text, "tiny.yaml"))[0]
    assert space.params(space.valid[0]) == {"tiled.TILE_WIDTH": 8}


@pytest.mark.slow
def test_every_status_is_a_record_with_its_reason_and_static_rejects_are_never_asked(storage):
    space = fermi_space()
    static_invalid = Config.make(space.problem, "naive", "float32", {"BLOCK_X": 64, "BLOCK_Y": 32})
    outcome, records, backend, study = search(storage, space, "grid", enqueue=[static_invalid])
    by_key = {r.config.key: r.measurement for r in records}
    assert len(by_key) == len(records) == 18 == outcome.evaluated
    assert {m.status for m in by_key.values()} == set(Status)  # INVALID: refused at launch, not by a static rule
    assert static_invalid.key not in by_key and static_invalid.key not in backend.calls
    refused, = [t for t in study.get_trials() if t.state == TrialState.FAIL]
    assert refused.user_attrs[LOST_ATTR] == "not a valid configuration of the study"
    for config in space.valid:
        assert by_key[config.key] == scripted_outcome(config)
    for m in by_key.values():
        assert (m.status is Status.OK) == (m.reason == "")
    values = {t.user_attrs[RECORD_ATTR]["config_key"]: t.value for t in study.get_trials()
              if RECORD_ATTR in t.user_attrs}
    for config in space.valid:
        expected = scripted_gflops(config) if by_key[config.key].status is Status.OK else 0.0
        assert values[config.key] == pytest.approx(expected)


@pytest.mark.parametrize("kind", STORAGE_URLS)
def test_grid_sweeps_valid_configurations_in_file_order_and_stops_when_all_are_done(tmp_path, kind):
    storage = open_storage(STORAGE_URLS[kind].format(tmp_path))
    space = fermi_space()
    outcome, records, backend, _ = search(storage, space, "grid", Budget(1000))
    assert backend.calls == [c.key for c in space.valid]
    assert outcome.stopped == "every valid configuration evaluated"
    assert backend.prefetched[:LOOKAHEAD] == [[c.key] for c in space.valid[:LOOKAHEAD]]  # each as it is asked


def test_a_configuration_queued_again_is_measured_once_and_its_repeats_cost_nothing(storage):
    space = fermi_space()
    tiled16 = Config.make(space.problem, "tiled", "float32", {"TILE_WIDTH": 16})
    outcome, records, backend, study = search(storage, space, "random", Budget(4), enqueue=[tiled16] * 4)
    assert backend.calls.count(tiled16.key) == 1
    assert len(backend.calls) == len(set(backend.calls)) == len(records) == 4 == outcome.evaluated
    repeats = [t for t in study.get_trials() if t.state == TrialState.FAIL]
    assert len(repeats) == 3 and {t.user_attrs[LOST_ATTR] for t in repeats} == {"taken"}


@pytest.mark.parametrize("trials", [1, 7])
def test_the_budget_counts_distinct_evaluations_and_no_static_reject(storage, trials):
    space = fermi_space()
    static_invalid = Config.make(space.problem, "naive", "float32", {"BLOCK_X": 64, "BLOCK_Y": 32})
    outcome, records, backend, _ = search(storage, space, "random", Budget(trials), enqueue=[static_invalid])
    assert len(records) == len({r.config.key for r in records}) == trials == outcome.evaluated
    assert len(backend.calls) == trials and static_invalid.key not in backend.calls
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


def test_a_dead_runs_trials_become_the_queue_in_order_and_a_measured_one_is_told(storage):
    space = fermi_space()
    study = open_study(storage, space, "random", seed=0)
    left = [ask_configuration(study, space) for _ in range(3)]
    for trial in left:
        trial.set_user_attr(CLAIM_ATTR, space.config_of(trial.params).key)
        trial.set_user_attr(WORKER_ATTR, "gone/1/1")
    measured = space.config_of(left[0].params)
    record = ListRecorder().record(space.name, left[0].number, "random", measured, scripted_outcome(measured), 0.1)
    left[0].set_user_attr(RECORD_ATTR, record.attrs())

    outcome, records, backend, study = search(storage, space, "random", Budget(5))
    trials = {t.number: t for t in study.get_trials()}
    assert trials[left[0].number].state == TrialState.COMPLETE
    assert trials[left[0].number].value == pytest.approx(scripted_gflops(measured))
    assert backend.calls[:2] == [space.config_of(t.params).key for t in left[1:]]
    assert [r.trial for r in records[:2]] == [t.number for t in left[1:]]
    assert measured.key not in backend.calls and outcome.evaluated == 5 and outcome.new == 4
    assert all(t.state == TrialState.COMPLETE for t in study.get_trials())


def _sampler_available(name: str) -> bool:
    needs = {"cmaes": "cmaes", "gp": "torch"}.get(name)
    return needs is None or importlib.util.find_spec(needs) is not None


@pytest.mark.parametrize("name", STRATEGIES)
def test_each_sampler_runs_a_tiny_study(storage, name):
    if not _sampler_available(name):
        pytest.skip(f"the {name} sampler needs a package that is not installed here")
    space = study_spaces(parse_experiment(TINY, "tiny.yaml"))[0]
    outcome, records, backend, study = search(storage, space, name, Budget(6))
    keys = [r.config.key for r in records]
    assert len(keys) == len(set(keys)) == 6
    assert len(backend.calls) == len(set(backend.calls))
    assert all(r.strategy == name for r in records)
    assert all(space.candidate(r.config) >= 0 for r in records)
    assert outcome.stopped == "6 configurations evaluated"


@pytest.mark.parametrize("name", STRATEGIES)
def test_each_sampler_sweeps_a_small_space_without_repeating_itself(storage, name):
    if not _sampler_available(name):
        pytest.skip(f"the {name} sampler needs a package that is not installed here")
    space = fermi_space()
    outcome, records, backend, study = search(storage, space, name, Budget(100))
    assert sorted(backend.calls) == sorted(c.key for c in space.valid)
    assert outcome.stopped == "every valid configuration evaluated"
    assert all(t.state == TrialState.COMPLETE for t in study.get_trials())


def test_samplers_needing_a_missing_package_say_so(monkeypatch):
    monkeypatch.setattr(optuna_samplers.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(TunerError, match="'gp' sampler needs the Python package 'torch'"):
        check_strategy("gp")


def test_an_unknown_strategy_is_refused():
    with pytest.raises(TunerError, match="unknown strategy 'anealing'"):
        check_strategy("anealing")


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


def test_a_sampler_is_moved_on_to_unevaluated_configurations(storage):
    space = fermi_space()
    budget = space.size - 2
    outcome, records, backend, study = search(storage, space, "tpe", Budget(budget))
    assert outcome.stopped == f"{budget} configurations evaluated"
    assert len(records) == len({r.config.key for r in records}) == budget
    assert len(backend.calls) == len(set(backend.calls))


def test_a_submitting_backend_measures_the_next_configuration_while_the_last_is_recorded(storage):
    space = fermi_space()
    outcome, records, backend, _ = search(storage, space, "grid", Budget(1000), backend=SubmittingBackend())
    keys = [c.key for c in space.valid]
    assert backend.calls == keys and [r.config.key for r in records] == keys
    assert [r.measurement for r in records] == [scripted_outcome(c) for c in space.valid]
    expected = [("submit", keys[0])]
    for key, following in zip(keys, [*keys[1:], None], strict=True):
        expected += [("wait", key), *([("submit", following)] if following else []), ("store", key)]
    assert backend.log == expected
    assert outcome.stopped == "every valid configuration evaluated" and outcome.evaluated == len(keys)


def test_the_device_time_of_each_submitted_evaluation_is_its_own(storage):
    space = fermi_space()
    _, records, _, _ = search(storage, space, "grid", Budget(1000), backend=SubmittingBackend())
    for record in records:
        timing = record.measurement.timing
        assert record.device_s == pytest.approx(sum(timing.samples_ms) / 1e3 if timing else 0.0)


def test_an_interrupted_submitted_evaluation_is_measured_by_the_next_run(storage):
    space = fermi_space()
    with pytest.raises(KeyboardInterrupt):
        search(storage, space, "grid", Budget(1000), backend=SubmittingBackend(interrupt_at=5))
    outcome, records, backend, study = search(storage, space, "grid", Budget(1000), backend=SubmittingBackend())
    keys = [c.key for c in space.valid]
    assert backend.calls == keys[4:]  # the interrupted one first, then the rest
    complete = [t for t in study.get_trials() if t.state == TrialState.COMPLETE]
    assert sorted(t.user_attrs[RECORD_ATTR]["config_key"] for t in complete) == sorted(keys)
    assert outcome.evaluated == len(keys)


@pytest.mark.parametrize("name", ["ils", "tpe", "nsga2"])
def test_the_sole_worker_makes_each_trial_in_one_write(storage, name, monkeypatch):
    space = fermi_space()
    study = open_study(storage, space, name, seed=0)
    writes: list[str] = []
    for method in ("create_new_trial", "set_trial_param", "set_trial_user_attr", "set_trial_system_attr"):
        original = getattr(study._storage, method)
        monkeypatch.setattr(study._storage, method, lambda *args, _m=method, _o=original, **kw: (
            writes.append(_m), _o(*args, **kw))[1])
    outcome = StudySearch(study, space, ScriptedBackend(), Budget(6), ListRecorder(), Progress(quiet=True)).run()
    assert outcome.evaluated == 6 and writes.count("create_new_trial") == 6
    # the record once each, and its outcome (and time and performance, where it ran) as scalars for Optuna's tools
    scalars = sum(1 for t in study.get_trials() for key in ("status", "time_ms", "performance") if key in t.user_attrs)
    assert "set_trial_param" not in writes and writes.count("set_trial_user_attr") == 6 + scalars
    for trial in study.get_trials():
        assert trial.state == TrialState.COMPLETE and space.params(space.config_of(trial.params)) == trial.params
        assert trial.user_attrs[CLAIM_ATTR] == space.config_of(trial.params).key
        assert trial.user_attrs[WORKER_ATTR] and RECORD_ATTR in trial.user_attrs
    if name == "ils":
        assert all("tuner:asked" in t.system_attrs for t in study.get_trials())


def test_a_configuration_still_compiling_does_not_hold_up_those_compiled_after_it(storage):
    space = fermi_space()
    keys = [c.key for c in space.valid]
    outcome, records, backend, _ = search(storage, space, "grid", Budget(1000),
                                          backend=CompilingBackend(compiling={keys[0], keys[3]}))
    assert backend.calls == [k for k in keys if k not in (keys[0], keys[3])] + [keys[0], keys[3]]
    assert sorted(r.config.key for r in records) == sorted(keys) and outcome.evaluated == len(keys)


class SlowReading(StudySearch):
    """Reads the storage slowly, so that two measuring threads read it at the same time."""

    def refresh(self) -> None:
        super().refresh()
        time.sleep(0.05)


def test_two_measuring_threads_never_ask_past_the_budget(storage):
    """Each thread of a multi-GPU run counts the study's budget and asks as one step: with one trial left, both
    reading the storage at once must not both ask it."""
    (space,) = study_spaces(parse_experiment(TINY, "tiny.yaml"))
    searches = [SlowReading(open_study(storage, space, "random", seed=index, liveness=ThisProcess()), space,
                            ScriptedBackend(), Budget(1), ListRecorder(), Progress(quiet=True), ThisProcess())
                for index in range(2)]
    threads = [threading.Thread(target=one.fill) for one in searches]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    asked = optuna.load_study(study_name=space.name, storage=storage).get_trials(deepcopy=False)
    assert len(asked) == 1
    assert sum(len(one.pending) for one in searches) == 1
