"""Every attribute the tuner keeps on Optuna's studies and trials, by name.

The names are part of the storages already written (a run folder's study.log, a shared PostgreSQL study): a value
here never changes, and a new one takes a name no earlier storage used.
"""

from __future__ import annotations

# --- study user attributes ----------------------------------------------------------------------------------------

EXPERIMENT_ATTR = "experiment"
"""The experiment's name."""
PROBLEM_ATTR = "problem"
"""The problem's label; each of its sizes is an attribute of its own, named as the size (M, N, K, ...)."""
DTYPE_ATTR = "dtype"
"""The study's element type; a study of an experiment that lacks it holds no evaluations (the ledger's, say)."""
OBJECTIVE_ATTR = "objective"
"""The names the study was created to search for (a list); absent in studies made before objectives, which searched
time."""
STRATEGY_ATTR = "strategy"
"""The search strategy that searches the study (its name in the results table's ``strategy`` column)."""
FORMER_STRATEGY_ATTR = "sampler"
"""What storages written before named STRATEGY_ATTR: a study holding it is refused, naming the change."""
AXES_ATTR = "axes"
"""Every axis and its values, as the experiment listed them when the study was created."""
STORED_ATTR = "params"
"""How its trials hold their parameters (``values``; absent in studies that hold their positions)."""
BASELINE_ATTR = "baseline"
"""The vendor baseline's record (a :class:`tuner.results.record.Record`'s attributes)."""
REPLACED_BASELINES_ATTR = "replaced baselines"
"""The baseline records measured again since (under load or not, as the best configuration was), oldest first."""

# --- study system attributes: the run ledger (tuner.tuning.folder.Ledger) ----------------------------------------

LEDGER_PREFIX = "tuner:"
"""Every ledger attribute's prefix."""
ENVIRONMENT_PREFIX = "environment "
"""Followed by a metadata id: that environment (:class:`tuner.results.environment.Environment`, as a mapping)."""
RUN_PREFIX = "run "
"""Followed by the run's start and its host/pid: that run's record."""
FIRST_STARTED = "first_started_utc"
"""When the experiment's first run started."""

# --- trial user attributes ----------------------------------------------------------------------------------------

RECORD_ATTR = "record"
"""An evaluation's Record (its results row, rebuilt)."""
CLAIM_ATTR = "config_key"
"""The configuration a trial claimed for its worker (tuner.search.claims)."""
WORKER_ATTR = "worker"
"""The worker (host/pid/thread) that claimed a trial; on a trial of the workers' study, the worker it stands for."""
BEAT_ATTR = "beat"
"""A worker's last heartbeat (seconds since the epoch), on its trial of the workers' study."""
LOST_ATTR = "lost_to"
"""Why a trial measured nothing: the trial that had claimed its configuration, ``taken``, ``budget``, or not a valid
configuration."""
DEAD_ATTR = "dead_worker"
"""The dead worker whose claim the trial's measurement was handed to another."""
RETRY_ATTR = "retry_of"
"""The trial a queued trial measures again (its worker died)."""
TRANSFER_ATTR = "transferred_from"
"""The study a queued trial's configuration was transferred from (tuner.search.transfer)."""
ABANDONED_ATTR = "abandoned"
"""Why a trial was given up without a measurement."""
STATUS_ATTR = "status"
"""An evaluation's outcome (ok, invalid, compile_error, wrong, crashed), beside its record
(tuner.search.trial_attrs)."""
TIME_ATTR = "time_ms"
"""An evaluation's median time (ms), where it ran."""
PERFORMANCE_ATTR = "performance"
"""An evaluation's GFLOP/s (GB/s for a kernel without arithmetic), where it ran."""

# --- trial system attributes --------------------------------------------------------------------------------------

ASKED_ATTR = "tuner:asked"
"""A strategy's ask: who asked, and how many results it had been told."""
FIXED_PARAMS_ATTR = "fixed_params"
"""Optuna's own: the parameters of an enqueued trial, before it is asked."""
