"""The studies of a run on one device: each study's search hands the device to the next once it has asked its
last configuration, and each search records only its own study's measurements."""

from __future__ import annotations

import optuna
import pytest
from scripted_backend import ScriptedBackend
from test_study import TINY, ListRecorder

from tuner.experiment.schema import parse_experiment
from tuner.search.pipeline import StudyPipeline
from tuner.search.study import Budget, StudySearch, open_storage, open_study, study_spaces
from tuner.tuning.progress import Progress

TWO_PROBLEMS = TINY.replace("  - {M: 64, N: 48, K: 32}\n", "  - {M: 64, N: 48, K: 32}\n  - {M: 32, N: 32, K: 32}\n")


@pytest.fixture
def spaces():
    found = study_spaces(parse_experiment(TWO_PROBLEMS, "two.yaml"))
    assert len(found) == 2
    return found


def pipeline_of(spaces, storage: optuna.storages.BaseStorage, ahead: bool, made: list[int], ready: list[int]):
    recorders = [ListRecorder() for _ in spaces]

    def make(at: int) -> StudySearch:
        made.append(at)
        study = open_study(storage, spaces[at], "random", seed=0)
        return StudySearch(study, spaces[at], ScriptedBackend(), Budget(2), recorders[at], Progress(quiet=True))

    return StudyPipeline(len(spaces), make, ready.append, ahead), recorders


def test_the_next_study_is_prepared_once_the_study_before_has_asked_its_last(tmp_path, spaces):
    made: list[int] = []
    ready: list[int] = []
    pipeline, recorders = pipeline_of(spaces, open_storage(f"journal://{tmp_path / 'study.log'}"), True, made, ready)
    first = pipeline.start(0)
    first.prepare()  # a budget of two: both asked at once, so the next study is made and prepared
    assert made == [0, 1] and ready == [1]
    second = pipeline.search(1)
    assert first.handover is not None
    assert [entry for _, entry in first.handover.waiting(None)] == list(second.pending) and len(second.pending) == 2
    first.run()
    last = pipeline.start(1)
    assert last is second and last.handover is None
    last.run()
    assert made == [0, 1] and ready == [1]
    assert [len(recorder.records) for recorder in recorders] == [2, 2]
    assert all(record.study == space.name for recorder, space in zip(recorders, spaces, strict=True)
               for record in recorder.records)


def test_without_asking_ahead_no_study_is_made_before_its_turn(tmp_path, spaces):
    made: list[int] = []
    ready: list[int] = []
    pipeline, recorders = pipeline_of(spaces, open_storage(f"journal://{tmp_path / 'study.log'}"), False, made, ready)
    first = pipeline.start(0)
    first.run()
    assert first.handover is None and made == [0] and ready == []
    pipeline.start(1).run()
    assert made == [0, 1] and [len(recorder.records) for recorder in recorders] == [2, 2]
