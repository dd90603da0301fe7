"""Which workers of a shared storage are alive. Each run process registers as a RUNNING trial of the study
``<experiment>/workers`` (in a storage beside the studies', :mod:`tuner.search.workers_storage`) and a thread keeps
its heartbeat: Optuna's own in a database (the database's clock judges), a changing ``beat`` attribute in a journal
(this process's clock judges); a trial whose heartbeat stops for the grace period is failed, and on this host a
worker whose process is gone is dead at once. A worker's ``rank`` (live workers joined before it) offsets its seed
(:func:`tuner.tuning.run_phases.worker_seed`); :meth:`WorkerRegistry.alive` answers the search loop's
:class:`tuner.search.claims.Liveness` questions."""

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
