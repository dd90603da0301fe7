"""Claims on a study that several workers share: the lowest-numbered live trial of a configuration owns it, where
live includes a trial waiting in the study's queue (a dead worker's configuration queued again) and a trial whose
worker has not named itself yet, so that exactly one trial of a configuration is measured."""

from __future__ import annotations

import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import Trial, TrialState
from scripted_backend import ScriptedBackend
from test_study import ListRecorder

from tuner.experiment.schema import load_experiment
from tuner.optuna_attrs import CLAIM_ATTR, DEAD_ATTR, LOST_ATTR, RETRY_ATTR, WORKER_ATTR
from tuner.search.claims import (
    ThisProcess,
    owner,
    this_worker,
)
from tuner.search.study import Budget, StudySearch, ask_configuration, open_storage, open_study, study_spaces
from tuner.tuning.progress import Progress

ROOT = Path(__file__).resolve().parent.parent
FERMI = ROOT / "experiments" / "fermi_like.yaml"


@pytest.fixture
def space():
    return study_spaces(load_experiment(FERMI))[1]


@pytest.fixture
def study(tmp_path, space) -> optuna.Study:
    storage = open_storage(f"journal://{tmp_path / 'study.log'}")  # a run's own storage
    return open_study(storage, space, "random", seed=0, liveness=ThisProcess())


def worker_search(study: optuna.Study, space) -> StudySearch:
    """A search of this process; every other worker counts as dead (ThisProcess)."""
    return StudySearch(study, space, ScriptedBackend(), Budget(100), ListRecorder(), Progress(quiet=True),
                       ThisProcess())


def running_trial(study: optuna.Study, space, params: dict, worker: str | None, key: str | None) -> Trial:
    """A RUNNING trial made directly in the storage, as a worker's ask makes one when the study's queue looked
    empty to it: it takes the next number, whatever waits in the queue. ``worker`` and ``key`` None: a trial
    whose worker has not claimed it yet."""
    distributions = {name: space.distributions()[name] for name in params}
    claim = {CLAIM_ATTR: key, WORKER_ATTR: worker} if worker is not None else {}
    frozen = optuna.trial.create_trial(state=TrialState.RUNNING, params=params, distributions=distributions,
                                       user_attrs=claim)
    trial_id = study._storage.create_new_trial(study._study_id, template_trial=frozen)
    return Trial(study, trial_id)


def a_dead_workers_configuration_queued_again(study: optuna.Study, space, search: StudySearch):
    dead = ask_configuration(study, space)
    config = space.config_of(dead.params)
    dead.set_user_attr(CLAIM_ATTR, config.key)
    dead.set_user_attr(WORKER_ATTR, "gone/1/1")
    search.policy.fail_dead(search.pending)
    (queued,) = study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
    assert queued.user_attrs[RETRY_ATTR] == dead.number
    assert study.get_trials(deepcopy=False)[dead.number].user_attrs[DEAD_ATTR] == "gone/1/1"
    return dead, queued, config


def test_a_later_trial_of_a_queued_configuration_loses_it_and_the_queued_one_is_measured(study, space):
    first, second = worker_search(study, space), worker_search(study, space)
    _, queued, config = a_dead_workers_configuration_queued_again(study, space, first)
    later = running_trial(study, space, queued.system_attrs["fixed_params"], this_worker(), config.key)
    assert later.number > queued.number

    second.refresh()  # it sees the later trial's claim before that trial loses it
    assert config.key in second.elsewhere
    assert not first.owns((later, config, time.monotonic()))
    assert study.get_trials(deepcopy=False)[later.number].user_attrs[LOST_ATTR] == queued.number

    second.fill()  # takes the queued trial first, although its reading of the claims is out of date
    entry = next(entry for entry in second.pending if entry[0].number == queued.number)
    assert entry[1].key == config.key
    assert second.owns(entry)


def test_a_queued_configuration_already_held_by_a_lower_trial_is_not_measured(study, space):
    search = worker_search(study, space)
    held = ask_configuration(study, space)
    config = space.config_of(held.params)
    held.set_user_attr(CLAIM_ATTR, config.key)
    held.set_user_attr(WORKER_ATTR, this_worker())
    study.enqueue_trial(held.params)
    search.fill()
    for entry in [entry for entry in search.pending if entry[1].key == config.key]:
        assert not search.owns(entry)
    (queued,) = [t for t in study.get_trials(deepcopy=False) if t.number != held.number and t.params == held.params]
    assert queued.state == TrialState.FAIL and LOST_ATTR in queued.user_attrs


def test_the_sampler_never_proposes_a_configuration_that_waits_in_the_queue(study, space):
    candidates = space.domain.size
    for candidate in range(candidates - 1):
        study.enqueue_trial(space.params_of(candidate))
    trial_id = study._storage.create_new_trial(study._study_id)
    frozen = study._storage.get_trial(trial_id)
    proposed = study.sampler.sample_relative(study, frozen, space.distributions())
    assert space.candidate(space.config_of(proposed)) == candidates - 1


def test_a_lower_trial_still_being_asked_is_waited_for_not_passed_over(study, space):
    """A worker's ask makes the trial first and names its worker and configuration in later writes; a
    higher-numbered trial of the same configuration checked in between must wait for those, not take it."""
    params = space.params_of(0)
    key = space.config_of(params).key
    lower = running_trial(study, space, params, worker=None, key=None)
    higher = running_trial(study, space, params, this_worker(), key)

    def owner_now() -> int | None:
        trials = study.get_trials(deepcopy=False, states=(TrialState.RUNNING, TrialState.COMPLETE, TrialState.WAITING))
        return owner(trials, higher.number, key, ThisProcess(), time.monotonic())

    assert owner_now() is None
    lower.set_user_attr(CLAIM_ATTR, key)
    assert owner_now() == lower.number
    lower.set_user_attr(WORKER_ATTR, this_worker())
    assert owner_now() == lower.number
