"""Which workers of a shared storage are alive: each keeps a heartbeat, and a worker whose heartbeat stops is dead.

Every run process that works in a shared storage (a PostgreSQL database, a journal file: several processes on
one host or several hosts) registers as a worker: a trial of the study ``<experiment>/workers``, RUNNING while
it works, whose user attribute ``worker`` holds the worker's id (``host/pid/start``). That study lives in a storage
beside the studies' (:mod:`tuner.search.workers_storage`), so that Optuna's tools list the studies alone. A thread
beats for it:

* in a database, through Optuna's own heartbeats: the registry's ``RDBStorage`` is opened with
  ``heartbeat_interval`` and ``grace_period`` (``GRACE_PERIODS`` intervals), the thread calls
  ``record_heartbeat``, and ``optuna.storages.fail_stale_trials`` fails the trial of a worker whose heartbeat is
  older than the grace period (the database's clock judges, so the hosts' clocks need not agree);
* in a journal file, which has no heartbeats of its own, the thread writes a new value (its clock's time) into
  the trial's user attribute ``beat``; a worker whose beat has not changed for the grace period, as this
  process's clock measures it, is failed the same way (so the hosts' clocks need not agree here either).

A worker's ``rank`` is how many live workers had joined before it (0 for a worker alone): the run's seed is
offset by it, so that a worker alone proposes what a run without a shared storage would, and workers that join
one after another propose the same as they did before (:func:`tuner.tuning.run_phases.worker_seed`).

A worker that finishes completes its trial. A worker is alive while its trial is RUNNING; on this host, a worker
whose process is gone is dead at once. The search loop asks :meth:`WorkerRegistry.alive` about the worker of
each RUNNING trial it meets (the :class:`tuner.search.claims.Liveness` protocol): a dead worker's trials are failed and
their configurations measured again by a live one; a live worker's trials are never touched.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import warnings

import optuna
from optuna.trial import FrozenTrial, TrialState

from tuner.optuna_attrs import BEAT_ATTR, WORKER_ATTR
from tuner.search.claims import HostWorkers
from tuner.search.storage import GRACE_PERIODS, HEARTBEAT_INTERVAL_S, close_storage, journal_path, open_storage
from tuner.search.workers_storage import prepare_registry, registry_url


def workers_study_name(experiment: str) -> str:
    return f"{experiment}/workers"


class WorkerRegistry:
    """This process's registration in a shared storage, and what it knows of the other workers (module text)."""

    def __init__(self, url: str, experiment: str, worker: str, heartbeat_s: int = HEARTBEAT_INTERVAL_S):
        self.worker = worker
        self.interval = heartbeat_s
        self.grace = heartbeat_s * GRACE_PERIODS
        prepare_registry(url)
        registry = registry_url(url)
        self.journal = journal_path(registry) is not None
        self.storage = open_storage(registry, None if self.journal else heartbeat_s)
        logger = optuna.logging.get_logger("optuna")
        level = logger.level
        logger.setLevel(logging.WARNING)  # not "a new study created", which is no news of the run's
        try:
            self.study = optuna.create_study(storage=self.storage, study_name=workers_study_name(experiment),
                                             direction="maximize", load_if_exists=True)
        finally:
            logger.setLevel(level)
        self._lock = threading.Lock()
        self._states: dict[str, TrialState] = {}
        self._read_at = -float("inf")
        self._beats_seen: dict[int, tuple[object, float]] = {}  # journal: trial id -> (beat, when it last moved)
        self._stop = threading.Event()
        with warnings.catch_warnings():  # Optuna expects heartbeats only inside study.optimize
            warnings.filterwarnings("ignore", message="Heartbeat of storage")
            self._trial = self.study.ask()
        self._trial.set_user_attr(WORKER_ATTR, worker)
        self._beat()
        self.rank = self._rank()
        """How many live workers had joined before this one: 0 for a worker alone in the storage."""
        self._thread = threading.Thread(target=self._beating, name="tuner-heartbeat", daemon=True)
        self._thread.start()

    def _rank(self) -> int:
        mine = self._trial.number
        earlier = [t for t in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)) if t.number < mine]
        return sum(1 for t in earlier if self.alive(t.user_attrs.get(WORKER_ATTR)))

    # --- this worker ----------------------------------------------------------------------------------------

    def _beat(self) -> None:
        trial_id = self._trial._trial_id
        if isinstance(self.storage, optuna.storages.RDBStorage):
            self.storage.record_heartbeat(trial_id)
        else:
            self.storage.set_trial_user_attr(trial_id, BEAT_ATTR, time.time())

    def _beating(self) -> None:
        while not self._stop.wait(self.interval):
            with contextlib.suppress(Exception):  # a storage hiccup: the next beat tries again
                self._beat()

    def close(self) -> None:
        """Stop beating and complete this worker's trial: it finished, its trials are released by the search."""
        self._stop.set()
        self._thread.join()
        with contextlib.suppress(Exception):
            self.study.tell(self._trial, 0.0)
        close_storage(self.storage)

    def __enter__(self) -> WorkerRegistry:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- the others -----------------------------------------------------------------------------------------

    def alive(self, worker: str | None) -> bool:
        """Whether the worker that claimed a trial may still finish it."""
        if worker is None:
            return False
        if worker == self.worker:
            return True
        with self._lock:
            if worker not in self._states or time.monotonic() - self._read_at > self.interval / 2:
                self._read()  # a worker never seen may have registered since the last reading
            state = self._states.get(worker)
        return state == TrialState.RUNNING and HostWorkers().alive(worker)  # on this host: its process runs

    def _read(self) -> None:
        if isinstance(self.storage, optuna.storages.RDBStorage):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                optuna.storages.fail_stale_trials(self.study)
        trials = self.study.get_trials(deepcopy=False)
        if self.journal:
            trials = self._fail_silent(trials)
        self._states = {str(t.user_attrs[WORKER_ATTR]): t.state for t in trials if WORKER_ATTR in t.user_attrs}
        self._read_at = time.monotonic()

    def _fail_silent(self, trials: list[FrozenTrial]) -> list[FrozenTrial]:
        """Fail the journal trials whose beat has not moved for the grace period; the trials as they are now."""
        now = time.monotonic()
        failed = False
        for trial in trials:
            if trial.state != TrialState.RUNNING or trial._trial_id == self._trial._trial_id:
                continue
            beat = trial.user_attrs.get(BEAT_ATTR)
            seen, since = self._beats_seen.get(trial._trial_id, (None, now))
            if beat != seen:
                self._beats_seen[trial._trial_id] = (beat, now)
            elif now - since > self.grace:
                with contextlib.suppress(optuna.exceptions.UpdateFinishedTrialError, RuntimeError):
                    self.storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
                    failed = True
        return self.study.get_trials(deepcopy=False) if failed else trials
