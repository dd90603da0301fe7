"""A tuning run, ``tuner.run`` and ``python -m tuner run``: the options checked and laid over the experiment's
settings (:mod:`tuner.tuning.options`), the folder claimed and locked, the backends started, the storage opened
and who else works in it; :class:`tuner.tuning.run_phases.Run` then measures each study's baseline, searches it,
saves the table and metadata.json (their contents: the README, "What a run writes"), reads the counters asked
for and writes the report."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import signal
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import optuna

from tuner.backends.energy_capability import check_energy
from tuner.backends.protocol import Backend
from tuner.errors import Naming, TunerError, option_name, parameter_name
from tuner.experiment.python_experiment import check_experiment, check_name
from tuner.experiment.schema import Experiment, load_experiment
from tuner.kernels.discovery import use_family_dirs
from tuner.results import table as results
from tuner.search.callbacks import Callback
from tuner.search.claims import HostWorkers, Liveness, SoleWorker, ThisProcess, this_worker
from tuner.search.journal_file import release_stale_lock
from tuner.search.storage import (
    close_storage,
    failures_explained,
    journal_path,
    open_storage,
    own_storage_url,
    repair_journal_end,
)
from tuner.search.study import Choice, StudySpace, study_spaces
from tuner.search.workers import WorkerRegistry
from tuner.settings import STORAGE_FILE, renamed_keyword
from tuner.space.entry_space import entry_spaces
from tuner.tuning.backends import default_backend, open_backends
from tuner.tuning.early_refusals import refuse_before_measuring
from tuner.tuning.folder import previous_run, storage_name
from tuner.tuning.options import RunOptions, RunSettings, resolve
from tuner.tuning.remeasure import remeasure_ceilings
from tuner.tuning.result_display import RunResult
from tuner.tuning.run_phases import WORKER_SEED_STEP, Place, Run, worker_seed

__all__ = ["WORKER_SEED_STEP", "RunOptions", "lock_folder", "run", "run_with", "worker_seed"]


@renamed_keyword("sampler", "strategy")
def run(
    experiment: Experiment | str | os.PathLike[str],
    backend: str | Backend | None = None,
    replay: str | os.PathLike[str] | None = None,
    trials: int | None = None,
    timeout: float | None = None,
    strategy: Choice | None = None,
    seed: int | None = None,
    transfer: int | None = None,
    storage: str | optuna.storages.BaseStorage | None = None,
    out: str | os.PathLike[str] | None = None,
    quiet: bool = False,
    report: bool = True,
    summary: bool | None = None,
    callbacks: Sequence[Callback] = (),
    gpus: str | None = None,
    heartbeat: int | None = None,
    replay_pace: float | None = None,
    objective: str | Sequence[str] | None = None,
    counters: str | None = None,
    remeasure_ceilings: bool = False,
) -> RunResult:
    """Tune an experiment and return its results table.

    ``backend``: "pycuda" (measure on the GPU), "cpu" (C families on this CPU, on ``OMP_NUM_THREADS`` threads
    or every core), "replay" (answer from ``replay``, a recorded run folder or results.parquet; the experiment's
    shipped recording when omitted) or a Backend object; None takes "replay" when ``replay`` is given, "cpu"
    when every family of the experiment is C, else "pycuda". ``trials``, ``timeout`` (seconds per study),
    ``strategy``, ``seed`` and ``transfer`` override the experiment's ``search`` settings; ``strategy`` is a
    strategy's name (:data:`tuner.strategies.catalog.NAMES`), an Optuna sampler object or a strategy factory (a
    callable taking a :class:`~tuner.strategies.Domain` and a numpy Generator, such as a class of
    :mod:`tuner.strategies`).
    ``storage`` is an Optuna storage URL or storage object (default: the journal file ``study.log`` in ``out``, itself
    defaulting to ``reports/<experiment name>``); a storage other than the folder's own may be shared with other
    runs at the same time. ``callbacks`` are called after each evaluation, ``f(evaluation)`` with a
    :class:`tuner.Evaluation`, or Optuna's ``f(study, trial)`` with the study and the completed FrozenTrial
    (:mod:`tuner.search.callbacks`; from several threads at once with ``gpus``). ``gpus`` ("all" or indices such as
    "0,1") measures on several GPUs of this host at once, one measuring process each (with the replay backend,
    indices stand for GPUs).
    ``heartbeat`` is the interval in seconds of this worker's heartbeat in a shared storage (default 10; a worker
    silent for four intervals is dead, and its claimed configurations are measured by another). ``replay_pace``
    slows the replay backend to its recorded device times times the factor. ``objective`` ("time", "energy",
    "edp", or ("time", "energy")) overrides the experiment's ``search.objective``
    (:mod:`tuner.results.objectives`); an objective with energy measures it, on a backend that can. ``counters``
    ("none", "best", "all") overrides ``measure.counters``: the hardware counters read after the search
    (tuner.counters). The device's ceilings are measured once per device and reused (with the load they were
    measured under, which the summary flags); ``remeasure_ceilings`` measures them again before the search.
    ``quiet`` silences the progress on stderr; ``summary`` prints the summary table on stdout (by default unless
    ``quiet``; the command line prints it even with --quiet). ``report`` writes the figures and report.html at
    the end.

    Nothing is created before the backend has started: a backend that cannot run leaves no trace, and a folder
    that holds another experiment's or storage's results is refused before anything is opened.
    """
    options = RunOptions(backend=backend, replay=replay, trials=trials, timeout=timeout, strategy=strategy, seed=seed,
                         transfer=transfer, storage=storage, out=out, quiet=quiet, report=report, summary=summary,
                         callbacks=callbacks, gpus=gpus, heartbeat=heartbeat, replay_pace=replay_pace,
                         objective=objective, counters=counters, remeasure_ceilings=remeasure_ceilings)
    return run_with(experiment, options, parameter_name)


def run_with(experiment: Experiment | str | os.PathLike[str], options: RunOptions,
             name: Naming = parameter_name) -> RunResult:
    """The run of :func:`run` with its options as one value; ``name`` says how the errors name a setting (the
    command line passes :func:`tuner.errors.option_name`)."""
    if not isinstance(experiment, Experiment):
        experiment = load_experiment(experiment)
    elif experiment.path is None:
        experiment = check_experiment(experiment)
    else:
        check_name(experiment)
    use_family_dirs(experiment.template_dirs)
    # one whose kernels were replaced after its check has their spaces built here, once for the whole run
    experiment = dataclasses.replace(experiment, spaces=entry_spaces(experiment))
    settings = resolve(options, experiment, name)
    label = storage_name(options.storage)
    previous = previous_run(settings.out, settings.experiment, label, name)  # before anything is opened or written
    backend = options.backend if options.backend is not None else default_backend(settings.experiment,
                                                                                   options.replay)
    refuse_before_measuring(backend, settings.experiment, settings.objective, name)
    chosen = open_backends(backend, settings.experiment, options.replay, options.gpus, options.replay_pace,
                           _load_report if options.report else None, progress=not options.quiet, name=name)
    created = not settings.out.exists()
    try:
        if options.remeasure_ceilings:
            remeasure_ceilings(chosen, name)
        check_energy(chosen, settings.objective)
        spaces = study_spaces(settings.experiment, chosen[0].recorded_configs())
        _check_replayable(spaces, chosen[0])
        resume = options.resume_command(settings.experiment, settings.out, settings.objective, backend)
        with _opened(settings, options, label, len(chosen)) as (store, liveness):
            place = Place(settings.out, label, previous, liveness)
            return Run(settings, options, chosen, store, place, resume, spaces).execute()
    except BaseException:
        if created:
            _remove_if_unused(settings.out)
        raise
    finally:
        for one in reversed(chosen):
            one.close()


@contextlib.contextmanager
def _opened(settings: RunSettings, options: RunOptions, label: str | None,
            measuring: int) -> Iterator[tuple[optuna.storages.BaseStorage, Liveness]]:
    """The run's folder locked, its storage open (closed after, unless the caller gave it as an object), SIGTERM
    taken as Ctrl-C, the storage's failures explained, and who else may be working in it."""
    out, storage, name = settings.out, options.storage, settings.name
    given = storage if isinstance(storage, optuna.storages.BaseStorage) else None
    url = storage if isinstance(storage, str) else own_storage_url(out)
    lock = lock_folder(out, name)
    try:
        store = given or _open_storage(url, out, name)
        try:
            with _terminate_as_interrupt(), failures_explained(url if given is None else label or url), \
                    _liveness(storage, settings.experiment, measuring, settings.heartbeat_s) as liveness:
                yield store, liveness
        finally:
            if given is None:
                close_storage(store)
    finally:
        os.close(lock)


def lock_folder(out: Path, name: Naming = option_name) -> int:
    """Create the output folder and hold a lock on it (one run per folder): its file descriptor; ``name``: how
    the refusal of a folder another run writes names the output folder's setting."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(out, os.O_RDONLY)
    except OSError as exc:
        raise TunerError(f"{out}: the output folder cannot be created or opened ({exc})") from None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(descriptor)
        raise TunerError(f"{out}: another run is writing to this output folder; wait for it to finish or "
                         f"choose another folder with {name('out')}") from None
    return descriptor


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (e.g. from ``timeout``) stops the run as Ctrl-C does: cleanly, with everything saved."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _load_report() -> None:
    """Import the report's modules (matplotlib is slow to import) and start the server of the processes that will
    draw its figures, while the measuring processes start."""
    from tuner.report import start_drawing_processes

    start_drawing_processes()


def _remove_if_unused(folder: Path) -> None:
    """Remove the output folder a failed run created where it holds nothing (a storage that could not be opened,
    say), or only an empty journal."""
    try:
        entries = list(folder.iterdir())
        if all(e.name == STORAGE_FILE and e.is_file() and not e.is_symlink() and e.stat().st_size == 0
               for e in entries):
            for entry in entries:
                entry.unlink()
            folder.rmdir()
    except OSError:  # whatever cannot be removed stays
        return


def _check_replayable(spaces: list[StudySpace], backend: Backend) -> None:
    """Refuse a recording that holds no configuration of one of the experiment's studies (of another experiment,
    say), before anything is written: such a study would end at once with nothing in it."""
    recording, answerable = backend.recording(), backend.recorded_configs()
    if recording is None or answerable is None:
        return
    for space in spaces:
        if len(space.valid) == 0:
            raise TunerError(f"the recording {recording.path} holds no valid configuration of the study "
                             f"{space.name} (it holds {len(answerable)} configurations, of other problems, dtypes or "
                             f"kernels), so there is nothing to replay there: replay a recording of this "
                             f"experiment's problems, dtypes and kernels")


@contextlib.contextmanager
def _liveness(storage: str | optuna.storages.BaseStorage | None, experiment: Experiment, measuring: int,
              heartbeat_s: int) -> Iterator[Liveness]:
    """Who else may be working in the run's storage. The folder's own storage (under the folder's lock) has
    this process alone: the sole worker, or its measuring threads (one per GPU). A shared storage named by a URL
    has workers that keep heartbeats (tuner.search.workers); one given as an object has the workers of this host."""
    if storage is None:
        yield SoleWorker() if measuring == 1 else ThisProcess()
    elif isinstance(storage, str):
        with WorkerRegistry(storage, experiment.name, this_worker(), heartbeat_s) as registry:
            yield registry
    else:
        yield HostWorkers()


def _open_storage(url: str, out: Path, name: Naming) -> optuna.storages.BaseStorage:
    """The run's storage; where it cannot be opened, the error says that the results table is left as it is."""
    own = journal_path(url)
    if own is not None and url == own_storage_url(out):  # the folder's lock keeps other writers out
        repair_journal_end(own)
        release_stale_lock(str(own))
    try:
        return open_storage(url, name=name)
    except TunerError as exc:
        table = out / results.RESULTS_PARQUET
        if not table.is_file():
            raise
        raise TunerError(f"{exc}. The results table {table} is left as it is") from None
