"""A tuning run: every study of an experiment searched on a backend, recorded, saved and summarised.

``run()`` is ``tuner.run`` and what ``python -m tuner run`` calls. For each problem and dtype it measures the
cuBLAS baseline once (float32/float64, when the backend offers ``baseline``; kept in the study's user
attribute ``baseline`` so a resumed run does not measure it again), then searches the study
(:mod:`tuner.study`).

Output folder (default ``reports/<experiment name>/``): the Optuna storage ``study.db`` (unless ``storage``
names another), ``results.parquet`` and ``results.csv`` (:mod:`tuner.results`, rebuilt from the storage and
saved every few seconds and at the end) and ``metadata.json``::

    {"experiment": {"name", "path", "source" (the YAML text), "machine_models": [...]},
     "environments": {metadata_id: the backend's environment dict},
     "runs": [{"started_utc", "finished_utc", "backend", "sampler", "trials", "timeout_s", "seed",
               "gpu_busy_fraction", "device_busy_s", "wall_s", "evaluations", "interrupted", "error",
               "recording"}, ...]}

The runs and environments live in the storage too (user attributes of the study ``<experiment>/runs``), so
the folder can always be rebuilt from it. ``wall_s`` is the wall time of the search (after the backend has
described its device) and ``gpu_busy_fraction`` the backend's device time over it; a replayed run has no
fraction (its ``device_busy_s`` is the recorded device time of what it replayed).

Running the same command again continues the same studies. Ctrl-C abandons the evaluation in progress,
saves everything, writes the report and re-raises KeyboardInterrupt after printing the command that continues.
At the end the report is written (``tuner.report.write_report``); a failing report is a warning, never a loss
of results.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import math
import os
import shlex
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import TrialState

from tuner import results
from tuner.backends.protocol import Backend
from tuner.backends.replay import ReplayBackend, default_recording
from tuner.errors import TunerError
from tuner.experiment import SAMPLERS, Experiment, load_experiment
from tuner.folder import Ledger, Previous, Table, claim, iso, now, reseed
from tuner.kernels.discovery import use_family_dirs
from tuner.metadata import metadata_id
from tuner.progress import Progress, print_summary
from tuner.results import BASELINE, DUPLICATE_ATTR, RunResult
from tuner.settings import STORAGE_FILE
from tuner.storage import check_storage_url, close_storage, failures_explained, open_storage
from tuner.study import (
    Budget,
    StudySearch,
    StudySpace,
    open_study,
    study_spaces,
)

BACKENDS = ("pycuda", "replay")
BASELINE_DTYPES = ("float32", "float64")


# --- choosing the pieces ----------------------------------------------------------------------------------


def open_backend(backend: str | Backend, experiment: Experiment, replay: str | os.PathLike[str] | None) -> Backend:
    if not isinstance(backend, str):
        return backend
    if backend == "replay":
        recording = replay if replay is not None else default_recording(experiment.name)
        if recording is None:
            raise TunerError(f"--backend replay needs --replay PATH: a recorded run folder or results.parquet "
                             f"(experiment '{experiment.name}' has no shipped recording)")
        return ReplayBackend(Path(recording))
    if replay is not None:
        raise TunerError(f"--replay is only used with --backend replay (the backend is '{backend}')")
    if backend != "pycuda":
        raise TunerError(f"unknown backend '{backend}'; choose one of {', '.join(BACKENDS)}")
    try:
        from tuner.backends.pycuda.backend import PycudaBackend
    except Exception as exc:  # a missing PyCUDA, a missing driver or GPU: all mean no measurements here
        raise TunerError(f"the pycuda backend cannot be loaded ({type(exc).__name__}: {exc}); it needs PyCUDA "
                         f"and a CUDA GPU (pip install -e \".[cuda]\" in the checkout); without a GPU, replay a "
                         f"recorded run with --backend replay --replay PATH") from None
    try:
        return PycudaBackend(experiment.measure, experiment.compile)
    except TunerError:
        raise
    except Exception as exc:  # driver errors when no device can be opened
        raise TunerError(f"the pycuda backend cannot start ({type(exc).__name__}: {exc}); check that a CUDA "
                         f"GPU and its driver are available") from None


def _settings(experiment: Experiment, trials: int | None, timeout: float | None, sampler: str | None,
              seed: int | None) -> tuple[str, Budget, int]:
    search = experiment.search
    sampler = sampler if sampler is not None else search.sampler
    if sampler not in SAMPLERS:
        raise TunerError(f"unknown sampler '{sampler}'; choose one of {', '.join(SAMPLERS)}")
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


def _lock(out: Path) -> int:
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


def _write_report(out: Path, progress: Progress) -> None:
    from tuner.report import write_report  # only now: matplotlib is slow to import

    try:
        write_report(out, quiet=progress.quiet)
    except Exception as exc:  # the report must never cost the results
        print(f"warning: the report could not be written ({type(exc).__name__}: {exc}); the results are saved "
              f"in {out}; retry with: python -m tuner report {shlex.quote(str(out))}", file=sys.stderr)
    else:
        progress.note(f"report written in {out}")


# --- the run ----------------------------------------------------------------------------------------------


def _baseline(space: StudySpace, study: optuna.Study, backend: Backend, table: Table, progress: Progress) -> None:
    if not space.baseline or space.dtype not in BASELINE_DTYPES or "baseline" in study.user_attrs:
        return
    progress.note(f"{space.name}: measuring the vendor baseline ({space.baseline})")
    busy_before = backend.busy_seconds
    measurement = backend.baseline(space.problem, space.dtype)
    if measurement is None:
        return
    config = results.baseline_config(space.problem, space.dtype)
    record = table.record(BASELINE, -1, BASELINE, config, measurement, backend.busy_seconds - busy_before)
    study.set_user_attr("baseline", record.attrs())
    table.add(record)


def _duplicates(studies: dict[StudySpace, optuna.Study]) -> dict[tuple[str, str], int]:
    return {
        (space.problem.label, space.dtype): sum(
            DUPLICATE_ATTR in t.user_attrs for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
        for space, study in studies.items()
    }


def run(
    experiment: Experiment | str | os.PathLike[str],
    backend: str | Backend = "pycuda",
    replay: str | os.PathLike[str] | None = None,
    trials: int | None = None,
    timeout: float | None = None,
    sampler: str | None = None,
    seed: int | None = None,
    storage: str | None = None,
    out: str | os.PathLike[str] | None = None,
    quiet: bool = False,
    report: bool = True,
    summary: bool | None = None,
) -> RunResult:
    """Tune an experiment and return its results table.

    ``backend``: "pycuda" (measure on the GPU), "replay" (answer from ``replay``, a recorded run folder or
    results.parquet; the experiment's shipped recording when omitted) or a Backend object. ``trials``,
    ``timeout`` (seconds per study), ``sampler`` and ``seed`` override the experiment's ``search`` settings.
    ``storage`` is any Optuna storage URL (default: SQLite ``study.db`` in ``out``, itself defaulting to
    ``reports/<experiment name>``). ``quiet`` silences the progress on stderr; ``summary`` prints the summary
    table on stdout (by default unless ``quiet``; the command line prints it even with --quiet). ``report``
    writes the figures and report.html at the end.

    Nothing is created before the backend has started: a backend that cannot run leaves no trace, and a folder
    that holds another experiment's or storage's results is refused before anything is opened.
    """
    if not isinstance(experiment, Experiment):
        experiment = load_experiment(experiment)
    use_family_dirs(experiment.template_dirs)
    sampler_name, budget, seed_value = _settings(experiment, trials, timeout, sampler, seed)
    out_dir = _output_folder(out, experiment)
    url = storage or f"sqlite:///{out_dir.resolve() / STORAGE_FILE}"
    check_storage_url(url)
    previous = claim(out_dir, experiment, storage)  # before anything is opened or written
    chosen = open_backend(backend, experiment, replay)
    try:
        lock = _lock(out_dir)
        try:
            store = _open_storage(url, out_dir)
            try:
                resume = {"backend": backend if isinstance(backend, str) else None, "replay": replay,
                          "trials": trials, "timeout": timeout, "sampler": sampler, "seed": seed, "storage": storage,
                          "out": out_dir}
                place = Place(out_dir, storage, previous)
                with _terminate_as_interrupt(), failures_explained(url):
                    return _run(experiment, chosen, store, sampler_name, budget, seed_value, place, quiet,
                                not quiet if summary is None else summary, report, _resume_command(experiment, resume))
            finally:
                close_storage(store)
        finally:
            os.close(lock)
    finally:
        chosen.close()


@dataclass(frozen=True)
class Place:
    """Where a run records: its folder, the storage it names (None: the folder's study.db) and what the
    folder held before."""

    out: Path
    storage: str | None
    previous: Previous | None


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
    try:
        return open_storage(url)
    except TunerError as exc:
        table = out / results.RESULTS_PARQUET
        if not table.is_file():
            raise
        raise TunerError(f"{exc}. The results table {table} is left as it is") from None


def _run(experiment: Experiment, backend: Backend, store: optuna.storages.BaseStorage, sampler: str,
         budget: Budget, seed: int, place: Place, quiet: bool, summary: bool, report: bool,
         resume_command: str) -> RunResult:
    out = place.out
    optuna_logger = optuna.logging.get_logger("optuna")
    verbosity = optuna_logger.level
    optuna.logging.set_verbosity(logging.WARNING)
    progress = Progress(quiet=quiet)
    started = now()
    interrupted, error = False, None
    try:
        recording = backend.recording()
        replayed = recording is not None
        environment = backend.metadata()
        environment_id = metadata_id(environment)
        ledger = Ledger(store, experiment.name)
        ledger.add_environments(recording.environments if recording else {environment_id: environment})
        studies = {space: open_study(store, space, sampler, seed) for space in study_spaces(experiment)}
        table = Table(experiment, out, ledger, backend, environment_id, place.storage)
        if place.previous is not None:
            ledger.adopt(place.previous.metadata)
            table.keep(reseed(studies, place.previous))
        table.rebuild(store)
        run_record: dict[str, Any] = {
            "started_utc": iso(started), "finished_utc": None, "backend": backend.name, "sampler": sampler,
            "trials": budget.trials, "timeout_s": budget.timeout_s, "seed": seed,
            "recording": str(recording.path) if recording else None,
            "gpu_busy_fraction": None, "device_busy_s": None, "wall_s": None, "evaluations": 0,
            "interrupted": False, "error": None,
        }
        ledger.start_run(run_record)
        clock = time.monotonic()  # the search's wall time: device setup and ceilings are not part of it
        try:
            for space, study in studies.items():
                _baseline(space, study, backend, table, progress)
                StudySearch(study, space, backend, budget, sampler, table, progress).run()
                table.save()
        except KeyboardInterrupt:
            interrupted = True
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            wall = time.monotonic() - clock
            busy = backend.busy_seconds
            run_record.update({
                "finished_utc": iso(now()), "wall_s": round(wall, 3), "evaluations": table.added,
                "device_busy_s": round(busy, 3), "interrupted": interrupted, "error": error,
                "gpu_busy_fraction": None if replayed or wall <= 0 else round(busy / wall, 4),
            })
            try:
                ledger.update_run(run_record)
            finally:  # a storage that fails here still leaves the rows it holds saved
                df = table.save()
            if report:
                _write_report(out, progress)
    finally:
        optuna_logger.setLevel(verbosity)
    result = RunResult(df, out, table.metadata(), _duplicates(studies))
    if interrupted:
        print(f"interrupted: {len(df)} rows are saved in {out}; to continue, run:\n  {resume_command}",
              file=sys.stderr)
        raise KeyboardInterrupt
    if summary:
        print_summary(result)
    return result
