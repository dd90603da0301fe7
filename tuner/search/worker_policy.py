"""How a search shares its study: alone (the sole worker of the run folder's own storage) or with other workers
of a shared storage (other processes, or this process's measuring threads, one per GPU).

Both policies answer the same questions of a search (:class:`WorkerPolicy`): how a trial is asked, whether a
queued trial still owns its configuration when it is about to be measured, what happens to the trials an earlier
run or a dead worker left RUNNING, and what happens to the queue of a study that stops early.

:class:`SoleWorker` policy: nobody else writes the study, so a trial is made in one write
(:mod:`tuner.search.trial_making`), every queued trial owns its configuration, the RUNNING trials an earlier run
left become this run's queue, in order, and a queue left when the study stops stays RUNNING for the next run.

:class:`SharedStudy` policy: counting the budget and asking are one step for the threads of this process (a lock
per study), each preceded by a reading of the storage and the failing of dead workers' trials (whose
configurations go first in the study's queue); a queued trial measures only when it owns its configuration
(:mod:`tuner.search.claims`), and a queue left when the study stops is failed, so that others may take it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Collection, Iterator, MutableSequence
from contextlib import AbstractContextManager
from typing import Protocol

import optuna
from optuna.trial import FrozenTrial, Trial, TrialState

from tuner.config import Config
from tuner.optuna_attrs import (
    ABANDONED_ATTR,
    CLAIM_ATTR,
    DEAD_ATTR,
    LOST_ATTR,
    RETRY_ATTR,
    TRANSFER_ATTR,
    WORKER_ATTR,
)
from tuner.search.claims import (
    Liveness,
    SoleWorker,
    claimed_key,
    owner,
    this_worker,
    unclaimed_too_long,
    within_budget,
)
from tuner.search.opening import ask_configuration, suggest_configuration
from tuner.search.study_space import StudySpace
from tuner.search.trial_making import making, trial_in_making
from tuner.strategies.sampler import DomainSampler, trial_params

Entry = tuple[Trial, Config, float]
"""A queued configuration: its trial, the configuration, and time.monotonic() when it was asked."""

_asking_locks: dict[str, threading.Lock] = {}
_asking_guard = threading.Lock()


def asking_lock(study_name: str) -> threading.Lock:
    """The lock that makes counting a study's budget and asking its next trial one step for the threads of this
    process (one per GPU): without it, two could both find one trial left and ask one each."""
    with _asking_guard:
        return _asking_locks.setdefault(study_name, threading.Lock())


class WorkerPolicy(Protocol):
    """What a search does differently alone in its study and sharing it."""

    shared: bool
    """Whether other workers may hold claims in the study (a search then waits for them before it stops)."""

    def asking(self, refresh: Callable[[], None], pending: Collection[Entry]) -> AbstractContextManager[None]:
        """Around counting the budget and asking one trial; ``refresh`` reads the study again."""
        ...

    def ask(self) -> Trial:
        """A new trial with its configuration."""
        ...

    def claimed_elsewhere(self, trial: FrozenTrial, mine: Collection[int]) -> bool:
        """Whether a RUNNING trial not in ``mine`` holds its configuration for another live worker."""
        ...

    def owns(self, trial: Trial, config: Config, asked: float) -> bool:
        """Whether a queued trial may be measured; False after failing it."""
        ...

    def take_over(self, queue: Callable[[Trial], None], pending: Collection[Entry]) -> None:
        """Deal with the RUNNING trials an earlier run or a dead worker left, before the first ask."""
        ...

    def release(self, pending: MutableSequence[Entry], why: str) -> None:
        """The study stops early with ``pending`` still queued."""
        ...


def policy_for(study: optuna.Study, space: StudySpace, liveness: Liveness, trials: int) -> WorkerPolicy:
    """The sole worker's policy for a storage only this process uses (and measures on one device), else the
    shared study's."""
    if isinstance(liveness, SoleWorker):
        return SoleWorkerPolicy(study, space)
    return SharedStudy(study, space, liveness, trials)


class SoleWorkerPolicy:
    """Alone in the study: see the module text."""

    shared = False

    def __init__(self, study: optuna.Study, space: StudySpace):
        self.study, self.space = study, space

    def asking(self, refresh: Callable[[], None], pending: Collection[Entry]) -> AbstractContextManager[None]:
        return contextlib.nullcontext()

    def ask(self) -> Trial:
        """The trial made in one write, parameters and claim included, where the study's queue is empty;
        otherwise Optuna's ``ask`` makes it and stores each parameter in a write of its own."""
        sampler = self.study.sampler
        if not isinstance(sampler, DomainSampler):
            return ask_configuration(self.study, self.space)
        trials = self.study.get_trials(deepcopy=False)
        if any(t.state == TrialState.WAITING for t in trials):
            return ask_configuration(self.study, self.space)
        made = trial_in_making(len(trials))
        with making(self.study, made):
            sampler.before_trial(self.study, made)
            made.params = sampler.sample_relative(self.study, made, self.space.distributions())
        made.distributions = self.space.distributions_of(made.params)
        config = self.space.config_of(made.params)
        if config is not None:
            made.user_attrs.update({CLAIM_ATTR: config.key, WORKER_ATTR: this_worker()})
        trial = Trial(self.study, self.study._storage.create_new_trial(self.study._study_id, template_trial=made))
        assert trial.number == made.number, "a sole worker's trials are numbered in the order it makes them"
        return trial

    def claimed_elsewhere(self, trial: FrozenTrial, mine: Collection[int]) -> bool:
        return False

    def owns(self, trial: Trial, config: Config, asked: float) -> bool:
        return True

    def take_over(self, queue: Callable[[Trial], None], pending: Collection[Entry]) -> None:
        """The RUNNING trials an earlier run left become the queue, in order."""
        for frozen in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            trial = Trial(self.study, frozen._trial_id)
            if self.space.point_of(frozen.params) is None:  # asked, never sampled: sample now
                suggest_configuration(trial, self.space)
            queue(trial)

    def release(self, pending: MutableSequence[Entry], why: str) -> None:
        """The queue stays RUNNING for the next run to take over."""


class SharedStudy:
    """Sharing the study with other workers: see the module text."""

    shared = True

    def __init__(self, study: optuna.Study, space: StudySpace, liveness: Liveness, trials: int):
        self.study, self.space, self.liveness, self.trials = study, space, liveness, trials

    @contextlib.contextmanager
    def asking(self, refresh: Callable[[], None], pending: Collection[Entry]) -> Iterator[None]:
        with asking_lock(self.study.study_name):
            refresh()
            self.fail_dead(pending)
            yield

    def ask(self) -> Trial:
        return ask_configuration(self.study, self.space)

    def claimed_elsewhere(self, trial: FrozenTrial, mine: Collection[int]) -> bool:
        return trial.number not in mine and self.liveness.alive(trial.user_attrs.get(WORKER_ATTR))

    def owns(self, trial: Trial, config: Config, asked: float) -> bool:
        while True:
            trials = self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING, TrialState.COMPLETE,
                                                                   TrialState.WAITING))
            found = owner(trials, trial.number, config.key, self.liveness, asked, self._held_key)
            if found is not None:
                break
            time.sleep(0.05)
        if found == trial.number and within_budget(trials, trial.number, self.trials, self.liveness,
                                                   self._held_key):
            return True
        trial.set_user_attr(LOST_ATTR, found if found != trial.number else "budget")
        self.study.tell(trial, state=TrialState.FAIL)
        return False

    def _held_key(self, trial: FrozenTrial) -> str | None:
        """The configuration a trial holds: its record's or claim's, or, for a trial waiting in the queue, its
        parameters'."""
        key = claimed_key(trial)
        if key is None and trial.state == TrialState.WAITING:
            config = self.space.config_of(trial_params(trial))
            key = config.key if config is not None else None
        return key

    def take_over(self, queue: Callable[[Trial], None], pending: Collection[Entry]) -> None:
        """The dead workers' trials are failed, so that their configurations are asked again."""
        self.fail_dead(pending)

    def fail_dead(self, pending: Collection[Entry]) -> None:
        """Fail the RUNNING trials of dead workers and put their configurations first in the study's queue."""
        for frozen in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            worker = frozen.user_attrs.get(WORKER_ATTR)
            if self.liveness.alive(worker) or any(t.number == frozen.number for t, _, _ in pending) or \
                    (worker is None and not unclaimed_too_long(frozen)):
                continue
            try:
                self.study._storage.set_trial_user_attr(frozen._trial_id, DEAD_ATTR, worker)
                self.study.tell(frozen.number, state=TrialState.FAIL)
            except (RuntimeError, ValueError):  # finished meanwhile, or failed by another worker
                continue
            config = self.space.config_of(frozen.params)
            if config is not None and self.space.candidate(config) >= 0:
                source = {TRANSFER_ATTR: frozen.user_attrs[TRANSFER_ATTR]} if TRANSFER_ATTR in frozen.user_attrs else {}
                self.study.enqueue_trial(frozen.params, user_attrs={RETRY_ATTR: frozen.number, **source})

    def release(self, pending: MutableSequence[Entry], why: str) -> None:
        """The queue is failed, so that other workers may take its configurations."""
        for trial, _, _ in pending:
            try:
                trial.set_user_attr(ABANDONED_ATTR, why)
                self.study.tell(trial, state=TrialState.FAIL)
            except (RuntimeError, ValueError):  # already finished
                continue
        pending.clear()
