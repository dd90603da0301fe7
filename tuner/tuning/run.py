"""A tuning run: every study of an experiment searched on a backend, recorded, saved and summarised.

``run()`` is ``tuner.run`` and what ``python -m tuner run`` calls. For each problem and dtype it measures the
vendor baseline (:mod:`tuner.tuning.baseline`: cuBLAS on the GPU, numpy's BLAS on the CPU; once, and again where
the load changed), then searches the study (:mod:`tuner.search.study`).

Output folder (default ``reports/<experiment name>/``): the Optuna storage ``study.log`` (unless ``storage``
names another), ``results.parquet`` and ``results.csv`` (:mod:`tuner.results.table`, rebuilt from the storage and
saved every few seconds and at the end) and ``metadata.json``::

    {"experiment": {"name", "path", "source" (the YAML text), "machine_models": [...]},
     "environments": {metadata_id: the backend's environment dict},
     "runs": [{"started_utc", "finished_utc", "backend", "sampler", "objective", "trials", "timeout_s", "seed",
               "transfer",
               "gpu_busy_fraction", "device_busy_s", "wall_s", "evaluations", "interrupted", "error",
               "recording", "counters"}, ...],
     "counters": {how the folder's counters.parquet was read (tuner.counters.store.conditions)}}

The runs and environments live in the storage too (system attributes of the run's first study,
:class:`tuner.folder.Ledger`), so the folder can always be rebuilt from it. ``wall_s`` is the wall time of the
search (after the backend has described its device) and ``gpu_busy_fraction`` the backend's device time over it;
a replayed run has no fraction (its ``device_busy_s`` is the recorded device time of what it replayed). After the
search the hardware counters that ``measure.counters`` asks for are read (:mod:`tuner.counters`); ``counters``
says what was read and how, or why not, and how long it took (not part of ``wall_s``).

Running the same command again continues the same studies. Ctrl-C abandons the evaluation in progress,
saves everything, writes the report and re-raises KeyboardInterrupt after printing the command that continues.
At the end the report is written (``tuner.report.write_report``); a failing report is a warning, never a loss
of results.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import functools
import logging
import math
import os
import shlex
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna

from tuner.backends.energy_capability import check_energy
from tuner.backends.protocol import Backend
from tuner.energy.objective import Objective
from tuner.errors import TunerError
from tuner.experiment.schema import Experiment, check_experiment, check_name, load_experiment
from tuner.kernels.discovery import use_family_dirs
from tuner.results import table as results
from tuner.results.metadata import metadata_id
from tuner.search.callbacks import Callback, adapted
from tuner.search.claims import HostWorkers, Liveness, SoleWorker, ThisProcess, this_worker
from tuner.search.storage import (
    HEARTBEAT_INTERVAL_S,
    check_storage_url,
    close_storage,
    failures_explained,
    journal_path,
    open_storage,
    own_storage_url,
    repair_journal_end,
)
from tuner.search.study import (
    Budget,
    Choice,
    StudySearch,
    StudySpace,
    check_choice,
    check_same_strategy,
    open_study,
    stored_space,
    strategy_name,
    study_spaces,
)
from tuner.search.transfer import transfer_best
from tuner.search.workers import WorkerRegistry
from tuner.settings import COUNTERS_CHOICES, STORAGE_FILE
from tuner.tuning.backends import default_backend, open_backends
from tuner.tuning.baseline import measure_again_if_load_changed, measure_baseline
from tuner.tuning.energy_objective import resolve_objective
from tuner.tuning.folder import Ledger, Previous, Table, iso, now, previous_run, reseed, storage_name
from tuner.tuning.parallel import search_on_each
from tuner.tuning.progress import Progress
from tuner.tuning.result_display import RunResult, print_summary

# --- choosing the pieces ----------------------------------------------------------------------------------


def _settings(experiment: Experiment, trials: int | None, timeout: float | None, sampler: Choice | None,
              seed: int | None) -> tuple[Choice, Budget, int]:
    search = experiment.search
    sampler = sampler if sampler is not None else search.strategy
    check_choice(sampler)
    trials = trials if trials is not None else search.trials
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise TunerError(f"--trials must be a whole number of at least 1, not {trials!r}")
    timeout = timeout if timeout is not None else search.timeout_s
    if timeout is not None and not 0 < timeout < math.inf:
        raise TunerError(f"--timeout must be a positive number of seconds, not {timeout!r}")
    seed = seed if seed is not None else search.seed
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise TunerError(f"--seed must be a whole number ≥ 0, not {seed!r}")
    return sampler, Budget(trials, timeout), seed


def lock_folder(out: Path) -> int:
    """Create the output folder and hold a lock on it (one run per folder): its file descriptor."""
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
                         f"choose another folder with --out") from None
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


def _resume_command(experiment: Experiment, options: dict[str, Any]) -> str:
    words = ["python", "-m", "tuner", "run", str(experiment.path)]
    for name, value in options.items():
        if value is not None:
            words += [f"--{name}", str(value)]
    return shlex.join(words)


def _load_report() -> None:
    """Import the report's modules (matplotlib is slow to import) and start the server of the processes that will
    draw its figures, while the measuring workers start."""
    from tuner.report import start_drawing_processes

    start_drawing_processes()


def _write_report(out: Path, progress: Progress) -> None:
    from tuner.report import default_jobs, write_report

    try:
        write_report(out, quiet=progress.quiet, jobs=default_jobs())
    except Exception as exc:  # the report must never cost the results
        print(f"warning: the report could not be written ({type(exc).__name__}: {exc}); the results are saved "
              f"in {out}; retry with: python -m tuner report {shlex.quote(str(out))}", file=sys.stderr)
    else:
        progress.note(f"report written in {out}")


# --- the run ----------------------------------------------------------------------------------------------


def _count(experiment: Experiment, backend: Backend, table: Table, progress: Progress) -> dict[str, Any]:
    """Read the hardware counters the experiment asks for (measure.counters), after the search and outside its
    timed samples; what was read, or why not, as the run records it."""
    from tuner.counters.collect import CountersNote, count_configurations

    setting = experiment.measure.counters
    try:
        note = count_configurations(table.frame(), table.out, backend.counters(), setting, progress.note,
                                    f"the {backend.name} backend reads no hardware counters")
    except Exception as exc:  # counters are a reading beside the results: they must never cost them
        note = CountersNote(setting, reasons=(f"{type(exc).__name__}: {' '.join(str(exc).split())}",))
    if note.setting != "none":
        progress.note(f"counters: {note.text()}")
    return note.to_dict()


def run(
    experiment: Experiment | str | os.PathLike[str],
    backend: str | Backend | None = None,
    replay: str | os.PathLike[str] | None = None,
    trials: int | None = None,
    timeout: float | None = None,
    sampler: Choice | None = None,
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
) -> RunResult:
    """Tune an experiment and return its results table.

    ``backend``: "pycuda" (measure on the GPU), "cpu" (C families on this CPU, on ``OMP_NUM_THREADS`` threads
    or every core), "replay" (answer from ``replay``, a recorded run folder or results.parquet; the experiment's
    shipped recording when omitted) or a Backend object; None takes "replay" when ``replay`` is given, "cpu"
    when every family of the experiment is C, else "pycuda". ``trials``, ``timeout`` (seconds per study),
    ``sampler``, ``seed`` and ``transfer`` override the experiment's ``search`` settings; ``sampler`` is a
    strategy's name (:data:`tuner.strategies.catalog.NAMES`), an Optuna sampler object or a strategy factory (a
    callable taking a :class:`~tuner.strategies.Domain` and a numpy Generator, such as a class of
    :mod:`tuner.strategies`).
    ``storage`` is an Optuna storage URL or storage object (default: the journal file ``study.log`` in ``out``, itself
    defaulting to ``reports/<experiment name>``); a storage other than the folder's own may be shared with other
    runs at the same time. ``callbacks`` are called after each evaluation, ``f(evaluation)`` with a
    :class:`tuner.study.Evaluation`, or Optuna's ``f(study, trial)`` with the study and the completed FrozenTrial
    (:mod:`tuner.search.callbacks`; from several threads at once with ``gpus``). ``gpus`` ("all" or indices such as
    "0,1") measures on several GPUs of this host at once, one measuring worker each (with the replay backend,
    indices stand for GPUs).
    ``heartbeat`` is the interval in seconds of this worker's heartbeat in a shared storage (default 10; a worker
    silent for four intervals is dead, and its claimed configurations are measured by another). ``replay_pace``
    slows the replay backend to its recorded device times times the factor. ``objective`` ("time", "energy",
    "edp", or ("time", "energy")) overrides the experiment's ``search.objective``
    (:mod:`tuner.energy.objective`); an objective with energy measures it, on a backend that can. ``counters``
    ("none", "best", "all") overrides ``measure.counters``: the hardware counters read after the search
    (tuner.counters).
    ``quiet`` silences the progress on stderr; ``summary`` prints the summary table on stdout (by default unless
    ``quiet``; the command line prints it even with --quiet). ``report`` writes the figures and report.html at
    the end.

    Nothing is created before the backend has started: a backend that cannot run leaves no trace, and a folder
    that holds another experiment's or storage's results is refused before anything is opened.
    """
    if not isinstance(experiment, Experiment):
        experiment = load_experiment(experiment)
    elif experiment.path is None:
        check_experiment(experiment)
    else:
        check_name(experiment)
    use_family_dirs(experiment.template_dirs)
    for callback in callbacks:
        adapted(callback)  # a function of neither form is refused before anything is written
    experiment, sampler, goal = resolve_objective(experiment, objective, sampler, quiet)
    choice, budget, seed_value = _settings(experiment, trials, timeout, sampler, seed)
    if transfer is not None:
        if isinstance(transfer, bool) or not isinstance(transfer, int) or transfer < 0:
            raise TunerError(f"--transfer must be a whole number ≥ 0, not {transfer!r}")
        experiment = dataclasses.replace(experiment, search=dataclasses.replace(experiment.search, transfer=transfer))
    if counters is not None:
        if counters not in COUNTERS_CHOICES:
            raise TunerError(f"--counters takes one of {', '.join(COUNTERS_CHOICES)}, not {counters!r}")
        experiment = dataclasses.replace(experiment, measure=dataclasses.replace(experiment.measure, counters=counters))
    out_dir = _output_folder(out, experiment)
    given = storage if isinstance(storage, optuna.storages.BaseStorage) else None
    url = storage if isinstance(storage, str) else own_storage_url(out_dir)
    if isinstance(storage, str):
        check_storage_url(url)
    label = storage_name(storage)
    previous = previous_run(out_dir, experiment, label)  # before anything is opened or written
    heartbeat_s = _heartbeat(heartbeat)
    if backend is None:
        backend = default_backend(experiment, replay)
    chosen = open_backends(backend, experiment, replay, gpus, replay_pace, _load_report if report else None,
                           progress=not quiet)
    created = not out_dir.exists()
    try:
        check_energy(chosen, goal)
        _check_replayable(experiment, chosen[0])
        lock = lock_folder(out_dir)
        try:
            store = given or _open_storage(url, out_dir)
            try:
                resume = {"backend": backend if isinstance(backend, str) else None, "replay": replay,
                          "objective": ",".join(goal) if objective is not None else None,
                          "trials": trials, "timeout": timeout,
                          "sampler": sampler if isinstance(sampler, str) else None, "seed": seed,
                          "transfer": transfer,
                          "storage": storage if isinstance(storage, str) else None, "out": out_dir, "gpus": gpus,
                          "heartbeat": heartbeat, "replay-pace": replay_pace, "counters": counters}
                with _terminate_as_interrupt(), failures_explained(url if given is None else label or url), \
                        _liveness(storage, experiment, len(chosen), heartbeat_s) as liveness:
                    place = Place(out_dir, label, previous, liveness)
                    return _run(experiment, chosen, store, choice, goal, budget, seed_value, place, quiet,
                                not quiet if summary is None else summary, report, _resume_command(experiment, resume),
                                tuple(callbacks))
            finally:
                if given is None:
                    close_storage(store)
        finally:
            os.close(lock)
    except BaseException:
        if created:
            _remove_if_unused(out_dir)
        raise
    finally:
        for one in reversed(chosen):
            one.close()


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


def _check_replayable(experiment: Experiment, backend: Backend) -> None:
    """Refuse a recording that holds no configuration of one of the experiment's studies (of another experiment,
    say), before anything is written: such a study would end at once with nothing in it."""
    recording, answerable = backend.recording(), backend.recorded_configs()
    if recording is None or answerable is None:
        return
    for space in study_spaces(experiment, answerable):
        if len(space.valid) == 0:
            raise TunerError(f"the recording {recording.path} holds no valid configuration of the study "
                             f"{space.name} (it holds {len(answerable)} configurations, of other problems, dtypes or "
                             f"kernels), so there is nothing to replay there: replay a recording of this "
                             f"experiment's problems, dtypes and kernels")


def _heartbeat(seconds: int | None) -> int:
    if seconds is None:
        return HEARTBEAT_INTERVAL_S
    if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds < 1:
        raise TunerError(f"--heartbeat must be a whole number of seconds, at least 1, not {seconds!r}")
    return seconds


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


@dataclass(frozen=True)
class Place:
    """Where a run records: its folder, the storage it names (None: the folder's own), what the folder held
    before, and who else may be working in the storage."""

    out: Path
    storage: str | None
    previous: Previous | None
    liveness: Liveness


def _output_folder(out: str | os.PathLike[str] | None, experiment: Experiment) -> Path:
    if out is None:
        return Path("reports") / experiment.name
    text = str(out)
    if not text.strip():
        raise TunerError("--out is empty: give the output folder (without --out, it is reports/<experiment name>)")
    if "\0" in text:
        raise TunerError(f"--out may not hold a NUL character: {text!r}")
    return Path(text)


def _open_storage(url: str, out: Path) -> optuna.storages.BaseStorage:
    """The run's storage; where it cannot be opened, the error says that the results table is left as it is."""
    own = journal_path(url)
    if own is not None and url == own_storage_url(out):  # the folder's lock keeps other writers out
        repair_journal_end(own)
    try:
        return open_storage(url)
    except TunerError as exc:
        table = out / results.RESULTS_PARQUET
        if not table.is_file():
            raise
        raise TunerError(f"{exc}. The results table {table} is left as it is") from None


WORKER_SEED_STEP = 1000
"""The seeds of the workers sharing a storage lie this far apart (a worker's further GPUs take the seeds after its
own)."""


def worker_seed(seed: int, liveness: Liveness) -> int:
    """The seed of this process's samplers: the run's, offset by ``WORKER_SEED_STEP`` for each live worker that
    joined the shared storage before this one, so that workers sharing studies propose apart from one another and
    a worker alone in a storage proposes what it would without one (reproducibly, whatever its host or process)."""
    return seed + WORKER_SEED_STEP * liveness.rank if isinstance(liveness, WorkerRegistry) else seed


def _ahead(single: Callable[[int], StudySearch], space: StudySpace, at: int, backend: Backend) -> StudySearch:
    """While a study measures its last configurations: ask and compile the next study's first ones, and let the
    backend make the next problem's inputs; the next study's search, whose compiled configurations the device
    measures while the current study's last ones compile."""
    successor = single(at)
    successor.prepare()
    hint = getattr(backend, "prepare", None)
    if hint is not None:
        hint(space.problem, space.dtype)
    return successor


def _transfer(order: list[tuple[StudySpace, optuna.Study]], at: int, count: int, budget: Budget,
              fresh: set[int]) -> None:
    """Give study ``at``, when this run started it, the best configurations of the studies before it
    (``search.transfer``), within its budget."""
    if at in fresh:
        space, study = order[at]
        transfer_best(study, space, [(earlier, earlier_space) for earlier_space, earlier in order[:at]], count,
                      budget.trials)


def _run(experiment: Experiment, backends: list[Backend], store: optuna.storages.BaseStorage, choice: Choice,
         objective: Objective, budget: Budget, seed: int, place: Place, quiet: bool, summary: bool, report: bool,
         resume_command: str, callbacks: tuple[Callback, ...]) -> RunResult:
    out = place.out
    optuna_logger = optuna.logging.get_logger("optuna")
    verbosity = optuna_logger.level
    optuna.logging.set_verbosity(logging.WARNING)
    progress = Progress(quiet=quiet)
    started = now()
    interrupted, error = False, None
    backend = backends[0]
    try:
        recording = backend.recording()
        replayed = recording is not None
        environments = [b.metadata() for b in backends]
        environment_ids = [metadata_id(env) for env in environments]
        spaces = study_spaces(experiment, backend.recorded_configs())
        for measuring in backends:  # the worker makes the first study's inputs while the storage is set up
            prepare = getattr(measuring, "prepare", None)
            if prepare is not None and spaces:
                prepare(spaces[0].problem, spaces[0].dtype)
        own_seed = worker_seed(seed, place.liveness)
        for space in spaces if place.storage is None else ():  # before any study is opened: nothing written
            check_same_strategy(store, space.name, choice)
        studies: dict[StudySpace, optuna.Study] = {}
        for space in spaces:
            study = open_study(store, space, choice, own_seed, place.liveness, objective)
            studies[stored_space(study, space)] = study
        ledger = Ledger(store, experiment.name, next(iter(studies.values())))
        ledger.add_environments(recording.environments if recording else dict(zip(environment_ids, environments,
                                                                                   strict=True)))
        table = Table(experiment, out, ledger, backend, environment_ids[0], place.storage)
        if place.previous is not None:
            ledger.adopt(place.previous.metadata)
            table.keep(reseed(studies, place.previous))
        table.rebuild(store)
        run_record: dict[str, Any] = {
            "started_utc": iso(started), "finished_utc": None, "backend": backend.name,
            "sampler": strategy_name(choice), "objective": list(objective),
            "trials": budget.trials, "timeout_s": budget.timeout_s, "seed": seed,
            "transfer": experiment.search.transfer,
            "recording": str(recording.path) if recording else None,
            "gpu_busy_fraction": None, "device_busy_s": None, "wall_s": None, "evaluations": 0,
            "interrupted": False, "error": None, "gpus": len(backends),
        }
        ledger.start_run(run_record)
        clock = time.monotonic()  # the search's wall time: device setup and ceilings are not part of it
        searched: float | None = None
        counted: dict[str, Any] | None = None
        try:
            order = list(studies.items())
            fresh = {at for at, (_, study) in enumerate(order) if not study.get_trials(deepcopy=False)}
            searches: dict[int, StudySearch] = {}

            def single(at: int) -> StudySearch:
                """The search of study ``at`` on the run's one backend, made once."""
                if at not in searches:
                    _transfer(order, at, experiment.search.transfer, budget, fresh)
                    searches[at] = StudySearch(order[at][1], order[at][0], backend, budget, table, progress,
                                               place.liveness, callbacks)
                return searches[at]

            for position, (space, study) in enumerate(order):
                if len(backends) == 1:
                    one = single(position)
                    if isinstance(place.liveness, SoleWorker) and position + 1 < len(order):
                        one.then = functools.partial(_ahead, single, order[position + 1][0], position + 1, backend)
                    # what the study before found since this one was prepared
                    _transfer(order, position, experiment.search.transfer, budget, fresh)
                    one.prepare()  # the compilers start while the baseline is measured
                    measure_baseline(space, study, backend, table, progress)
                    one.run()
                    measure_again_if_load_changed(space, study, backend, table, progress)
                    table.save()
                    continue
                _transfer(order, position, experiment.search.transfer, budget, fresh)
                measure_baseline(space, study, backend, table, progress)
                # each further GPU's search asks through a study object of its own, with its own sampler
                own = [study, *(open_study(store, space, choice, own_seed + index, place.liveness, objective)
                                for index in range(1, len(backends)))]

                def search(index: int, measuring: Backend, space: StudySpace = space, own: list = own) -> None:
                    recorder = table.on_device(measuring, environment_ids[index])
                    StudySearch(own[index], space, measuring, budget, recorder,
                                progress if index == 0 else Progress(quiet=True), place.liveness, callbacks).run()

                search_on_each(backends, search)
                measure_again_if_load_changed(space, study, backend, table, progress)
                table.save()
            searched = time.monotonic()
            counted = _count(experiment, backend, table, progress)
        except KeyboardInterrupt:
            interrupted = True
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            wall = (searched if searched is not None else time.monotonic()) - clock
            busy = sum(b.busy_seconds for b in backends)
            run_record.update({
                "finished_utc": iso(now()), "wall_s": round(wall, 3), "evaluations": table.added, "counters": counted,
                "device_busy_s": round(busy, 3), "interrupted": interrupted, "error": error,
                "gpu_busy_fraction": None if replayed or wall <= 0 else round(busy / wall / len(backends), 4),
            })
            try:
                ledger.update_run(run_record)
                if not isinstance(place.liveness, SoleWorker):  # what the other workers measured meanwhile
                    table.rebuild(store)
            finally:  # a storage that fails here still leaves the rows it holds saved
                df = table.save()
            if report:
                _write_report(out, progress)
    finally:
        optuna_logger.setLevel(verbosity)
    result = RunResult(df, out, table.metadata())
    if interrupted:
        print(f"interrupted: {len(df)} rows are saved in {out}; to continue, run:\n  {resume_command}",
              file=sys.stderr)
        raise KeyboardInterrupt
    if summary:
        print_summary(result)
    return result
