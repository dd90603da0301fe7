"""Who measures what when several processes share one study. An asked trial claims its configuration (user
attributes ``config_key`` and ``worker``); the lowest-numbered *live* trial of a key owns it (completed, RUNNING
with a live worker, or queued), and no other is measured (``lost_to`` names the owner); a worker waits while a
lower-numbered live trial has not claimed yet (at most ``CLAIM_WAIT_S``). Liveness (:class:`Liveness`):
:class:`SoleWorker` for a storage this process alone uses, :class:`HostWorkers` for this host's processes. A dead
worker's RUNNING trials are failed (``dead_worker``) and their configurations queued first (``retry_of``)."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Protocol

from optuna.trial import FrozenTrial, TrialState

from tuner.optuna_attrs import CLAIM_ATTR, RECORD_ATTR, WORKER_ATTR

CLAIM_WAIT_S = 30.0
"""How long a worker waits for a lower-numbered trial to claim its configuration before presuming it abandoned."""


@cache
def this_worker() -> str:
    """``host/pid/start``: this process, told apart from an earlier process of the same id."""
    return f"{socket.gethostname()}/{os.getpid()}/{_start_time(os.getpid())}"


def _start_time(pid: int) -> str:
    """When the process started, in clock ticks since boot (Linux), or '' where that cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return ""
    return fields[19] if len(fields) > 19 else ""


class Liveness(Protocol):
    def alive(self, worker: str | None) -> bool:
        """Whether the worker that claimed a trial may still finish it (None: a trial without a worker)."""
        ...


class SoleWorker:
    """Only this process uses the storage: every other worker is dead."""

    def alive(self, worker: str | None) -> bool:
        return worker == this_worker()


class ThisProcess:
    """Only this process uses the storage, through several measuring threads (one per GPU): its own trials are
    alive, every other worker's are dead. Unlike :class:`SoleWorker`, the threads claim configurations."""

    def alive(self, worker: str | None) -> bool:
        return worker == this_worker()


class HostWorkers:
    """Workers of this host are alive while their process runs; workers of other hosts are presumed alive."""

    def alive(self, worker: str | None) -> bool:
        if worker is None:
            return False
        host, _, rest = worker.partition("/")
        if host != socket.gethostname():
            return True
        pid_text, _, started = rest.partition("/")
        try:
            pid = int(pid_text)
            os.kill(pid, 0)
        except (ValueError, ProcessLookupError):
            return False
        except PermissionError:  # a process of another user: it exists
            return True
        return not started or _start_time(pid) == started


def claimed_key(trial: FrozenTrial) -> str | None:
    """The configuration a trial holds: its record's (an evaluation) or its claim's."""
    record = trial.user_attrs.get(RECORD_ATTR)
    if isinstance(record, dict) and "config_key" in record:
        return str(record["config_key"])
    key = trial.user_attrs.get(CLAIM_ATTR)
    return str(key) if key is not None else None


def unclaimed_too_long(trial: FrozenTrial) -> bool:
    """Whether a trial without a worker was asked more than CLAIM_WAIT_S ago (before that, its worker may be
    between asking and claiming it)."""
    started = trial.datetime_start
    return started is None or (datetime.now() - started).total_seconds() >= CLAIM_WAIT_S


def is_live(trial: FrozenTrial, liveness: Liveness) -> bool:
    """Whether a trial holds, or may come to hold, its configuration: evaluated, waiting in the queue, or RUNNING
    with its worker alive, or without a worker yet while that worker may still be between asking and claiming."""
    if trial.state in (TrialState.COMPLETE, TrialState.WAITING):
        return True
    if trial.state != TrialState.RUNNING:
        return False
    worker = trial.user_attrs.get(WORKER_ATTR)
    return not unclaimed_too_long(trial) if worker is None else liveness.alive(worker)


KeyOf = Callable[[FrozenTrial], str | None]
"""The configuration a trial holds (:func:`claimed_key`, or a search's own reading that also knows the
configuration of a queued trial from its parameters)."""


def owner(trials: Sequence[FrozenTrial], number: int, key: str, liveness: Liveness,
          asked_s: float, key_of: KeyOf = claimed_key) -> int | None:
    """The number of the trial that owns ``key`` as trial ``number`` sees it: ``number`` itself, a lower-numbered
    live trial of the same key, or None while a lower-numbered live trial has not claimed anything yet (unless it
    has kept silent past CLAIM_WAIT_S since ``asked_s``, a time.monotonic() reading). ``trials``: the study's
    COMPLETE, RUNNING and WAITING trials, read after trial ``number`` was asked."""
    undecided = False
    for trial in trials:
        if trial.number >= number or not is_live(trial, liveness):
            continue
        held = key_of(trial)
        if held == key:
            return trial.number
        if held is None and trial.state == TrialState.RUNNING:
            undecided = True
    if undecided and time.monotonic() - asked_s < CLAIM_WAIT_S:
        return None
    return number


def within_budget(trials: Sequence[FrozenTrial], number: int, budget: int, liveness: Liveness,
                  key_of: KeyOf = claimed_key) -> bool:
    """Whether trial ``number`` fits in a study's budget of ``budget`` configurations: fewer than that many
    distinct configurations are held by lower-numbered live trials (the storage numbers trials atomically, so
    workers asking at the same moment agree on which claims the budget covers)."""
    held = {key_of(t) for t in trials if t.number < number and is_live(t, liveness)}
    held.discard(None)
    return len(held) < budget
