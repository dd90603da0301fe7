"""The backends of a run, opened through the catalog (:mod:`tuner.backends.catalog`): one by name, or one per GPU.

With ``gpus`` (``--gpus all|0,1,…``, :mod:`tuner.backends.gpus`) a run measures with one backend per GPU: PyCUDA
backends each own a measuring process on their GPU and share the first one's compile pool; replay backends stand
for GPUs by index (``all``: one), each answering from the same recording, whose rows carry the recorded GPU.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable

from tuner.backends import catalog
from tuner.backends.protocol import Backend, Opening, wait_until_ready
from tuner.errors import Naming, TunerError, option_name
from tuner.experiment.schema import Experiment
from tuner.recorded import is_recorded

REPLAY = "replay"
"""The backend that ``--replay`` and ``--replay-pace`` belong to, and the only one of recorded kernel entries."""


def default_backend(experiment: Experiment, replay: str | os.PathLike[str] | None = None) -> str:
    """The backend a run takes unless told: replay with a recording named, else the catalog's default for the
    experiment (replay for kernels that are recordings, the CPU when every kernel family is C, else the GPU)."""
    return REPLAY if replay is not None else catalog.default_for(experiment)


def open_backend(backend: str | Backend, experiment: Experiment, opening: Opening) -> Backend:
    """The backend a name stands for (a Backend object is itself)."""
    if not isinstance(backend, str):
        return backend
    _refuse_misplaced_recordings(backend, experiment, opening)
    return catalog.open_backend(backend, experiment, opening)


def _refuse_misplaced_recordings(backend: str, experiment: Experiment, opening: Opening) -> None:
    """Recorded kernel entries are only replayed, and a recording named (``replay``) only by the replay backend."""
    name = opening.name
    if is_recorded(experiment) and (backend != REPLAY or opening.replay is not None):
        raise TunerError(f"the experiment's kernels are recordings, which are only replayed: run it with "
                         f"{name('backend', REPLAY)} and without {name('replay')}")
    if opening.replay is not None and backend != REPLAY:
        raise TunerError(f"{name('replay')} is only used with {name('backend', REPLAY)} (the backend is '{backend}')")


def open_backends(backend: str | Backend, experiment: Experiment, replay: str | os.PathLike[str] | None,
                  gpus: str | None = None, pace: float | None = None,
                  meanwhile: Callable[[], None] | None = None, progress: bool = False,
                  name: Naming = option_name) -> list[Backend]:
    """The run's backends: one, or one per GPU that ``gpus`` names; ``pace``: the replay pace (``replay_pace``);
    ``progress``: a measuring backend says on stderr what it measures where it measures its device's ceilings;
    ``name``: how the errors name the run's settings (:mod:`tuner.errors`). Measuring processes start together;
    ``meanwhile`` runs while they start, before the backends are returned ready. Close them in reverse order (the
    first owns the shared compile pool)."""
    if pace is not None and (backend != REPLAY or not 0 <= pace < math.inf):
        raise TunerError(f"{name('replay_pace')} takes a factor ≥ 0 and is only used with {name('backend', REPLAY)} "
                         f"(here: "
                         f"{pace!r} with the backend '{backend if isinstance(backend, str) else backend.name}')")
    if gpus is not None and not isinstance(backend, str):
        raise TunerError(f"{name('gpus')} needs a backend by name (pycuda or replay): a backend object measures on "
                         f"its own")
    opening = Opening(replay=replay, wait=False, progress=progress, pace=pace, name=name)
    if gpus is None:
        chosen = [open_backend(backend, experiment, opening)]
    else:
        assert isinstance(backend, str)
        _refuse_misplaced_recordings(backend, experiment, opening)
        chosen = catalog.open_on_gpus(backend, experiment, gpus, opening)
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
