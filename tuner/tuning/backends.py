"""The backends of a run: one by name (the GPU through PyCUDA, or a recording replayed), or one per GPU.

With ``gpus`` (``--gpus all|0,1,…``, :mod:`tuner.backends.gpus`) a run measures with one backend per
GPU: PyCUDA backends each own a measuring process on their GPU and share the first one's compile pool; replay
backends stand for GPUs by index (``all``: one), each answering from the same recording, whose rows carry the
recorded GPU.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path

from tuner.backends.catalog import NAMES
from tuner.backends.gpus import parse_gpus, visible_gpus
from tuner.backends.protocol import Backend, wait_until_ready
from tuner.backends.replay.backend import ReplayBackend, default_recording
from tuner.backends.replay.recorded import RecordedBackend, is_recorded
from tuner.errors import Naming, TunerError, option_name
from tuner.experiment.schema import Experiment
from tuner.kernels.discovery import get_family


def default_backend(experiment: Experiment, replay: str | os.PathLike[str] | None = None) -> str:
    """The backend a run takes unless told: replay with a recording named or for kernels that are recordings, the
    CPU when every kernel family of the experiment is C, else the GPU."""
    if replay is not None or is_recorded(experiment):
        return "replay"
    targets = {get_family(spec.family).target for spec in experiment.kernels}
    return "cpu" if targets == {"c"} else "pycuda"


def open_backend(backend: str | Backend, experiment: Experiment, replay: str | os.PathLike[str] | None,
                 gpu: str | None = None, wait: bool = True, progress: bool = False,
                 name: Naming = option_name) -> Backend:
    """The backend a name stands for (a Backend object is itself); ``gpu``: the GPU of a PyCUDA backend;
    ``wait``: wait until a PyCUDA backend's measuring process is ready (else its ``wait_ready`` does); ``progress``: a
    measuring backend says on stderr what it measures where it measures its device's ceilings; ``name``: how the
    errors name the run's settings (:mod:`tuner.errors`)."""
    if not isinstance(backend, str):
        return backend
    if is_recorded(experiment) and (backend != "replay" or replay is not None):
        raise TunerError(f"the experiment's kernels are recordings, which are only replayed: run it with "
                         f"{name('backend', 'replay')} and without {name('replay')}")
    if backend == "replay" and replay is None and is_recorded(experiment):
        return RecordedBackend(experiment.kernels)
    if backend == "replay":
        recording = replay if replay is not None else default_recording(experiment.name)
        if recording is None:
            raise TunerError(f"{name('backend', 'replay')} needs {name('replay', 'PATH')}: a recorded run folder or "
                             f"results.parquet "
                             f"(experiment '{experiment.name}' has no shipped recording)")
        return ReplayBackend(Path(recording))
    if replay is not None:
        raise TunerError(f"{name('replay')} is only used with {name('backend', 'replay')} (the backend is '{backend}')")
    if backend == "cpu":
        from tuner.backends.cpu.backend import CpuBackend

        return CpuBackend(experiment.measure, experiment.compile, progress=progress)
    if backend != "pycuda":
        raise TunerError(f"unknown backend '{backend}'; choose one of {', '.join(NAMES)}")
    try:
        from tuner.backends.pycuda.backend import PycudaBackend
    except Exception as exc:  # a missing PyCUDA, a missing driver or GPU: all mean no measurements here
        raise TunerError(f"the pycuda backend cannot be loaded ({type(exc).__name__}: {exc}); it needs PyCUDA "
                         f"and a CUDA GPU (pip install -e \".[cuda]\" in the checkout); without a GPU, replay a "
                         f"recorded run with {name('backend', 'replay')} {name('replay', 'PATH')}") from None
    try:
        return PycudaBackend(experiment.measure, experiment.compile, gpu=gpu, wait=wait, progress=progress)
    except TunerError:
        raise
    except Exception as exc:  # driver errors when no device can be opened
        raise TunerError(f"the pycuda backend cannot start ({type(exc).__name__}: {exc}); check that a CUDA "
                         f"GPU and its driver are available") from None


def open_backends(backend: str | Backend, experiment: Experiment, replay: str | os.PathLike[str] | None,
                  gpus: str | None = None, pace: float | None = None,
                  meanwhile: Callable[[], None] | None = None, progress: bool = False,
                  name: Naming = option_name) -> list[Backend]:
    """The run's backends: one, or one per GPU that ``gpus`` names; ``pace``: the replay pace (``replay_pace``).
    Measuring processes start together; ``meanwhile`` runs while they start, before the backends are returned
    ready. Close them in reverse order (the first owns the shared compile pool)."""
    if pace is not None and (backend != "replay" or not 0 <= pace < math.inf):
        raise TunerError(f"{name('replay_pace')} takes a factor ≥ 0 and is only used with {name('backend', 'replay')} "
                         f"(here: "
                         f"{pace!r} with the backend '{backend if isinstance(backend, str) else backend.name}')")
    if gpus is not None and not isinstance(backend, str):
        raise TunerError(f"{name('gpus')} needs a backend by name (pycuda or replay): a backend object measures on "
                         f"its own")
    if gpus is None:
        chosen = [open_backend(backend, experiment, replay, wait=False, progress=progress, name=name)]
    elif backend == "replay":
        count = len(parse_gpus(gpus, [str(i) for i in range(max(_indices(gpus), default=0) + 1)], name))
        chosen = [open_backend(backend, experiment, replay, name=name) for _ in range(count)]
    elif backend != "pycuda":
        raise TunerError(f"{name('gpus')} measures on GPUs: it is used with {name('backend')} pycuda or replay, not "
                         f"'{backend}'")
    else:
        chosen = _gpu_backends(experiment, parse_gpus(gpus, visible_gpus(), name), progress, name)
    for one in chosen:
        if isinstance(one, ReplayBackend) and pace is not None:
            one.pace = pace
    try:
        if meanwhile is not None:
            meanwhile()
        for one in chosen:
            wait_until_ready(one)
    except BaseException:
        for one in reversed(chosen):
            one.close()
        raise
    return chosen


def _indices(spec: str) -> list[int]:
    """The indices ``spec`` lists (none for ``all``, which a replay reads as one GPU: the recording's)."""
    parts = [] if spec.strip() == "all" else spec.split(",")
    return [int(part) for part in parts if part.strip().lstrip("-").isdigit()]


def _gpu_backends(experiment: Experiment, gpus: list[str], progress: bool, name: Naming) -> list[Backend]:
    first = open_backend("pycuda", experiment, None, gpus[0], wait=False, progress=progress, name=name)
    chosen = [first]
    try:
        from tuner.backends.pycuda.backend import PycudaBackend

        assert isinstance(first, PycudaBackend)
        for gpu in gpus[1:]:
            chosen.append(PycudaBackend(experiment.measure, experiment.compile, gpu=gpu, compiler=first.compiler,
                                        wait=False, progress=progress))
    except BaseException:
        for one in reversed(chosen):
            one.close()
        raise
    return chosen
