"""The backends by name, the only door to them: what ``--backend`` takes, each in one line; :func:`open_backend`
opens one, :func:`default_for` names an experiment's default and :func:`device` gives a backend's device.

This module imports no backend, so that the command line can list the names; :func:`backend_class` loads one. A
new backend is a folder under ``tuner/backends/`` whose class implements :class:`~tuner.backends.protocol.Backend`
(its class side: ``serves``, ``open``, ``local_device``), plus one line here.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from tuner.backends.protocol import Backend, BackendBase, Opening
from tuner.errors import TunerError

if TYPE_CHECKING:
    from tuner.backends.device import Device
    from tuner.experiment.schema import Experiment

BACKENDS: dict[str, tuple[str, str]] = {
    "pycuda": ("tuner.backends.pycuda.backend:PycudaBackend",
               "the local NVIDIA GPU through PyCUDA: kernels compiled ahead by nvcc, verified and timed in a worker "
               "process, cuBLAS as the baseline"),
    "cpu": ("tuner.backends.cpu.backend:CpuBackend",
            "this machine's CPU: C kernels compiled by the system compiler, verified and timed in a worker process, "
            "numpy's BLAS as the baseline"),
    "replay": ("tuner.backends.replay.backend:ReplayBackend",
               "a recorded run's answers (its results table), with the environments they were measured in; kernel "
               "entries that are themselves recordings are replayed from them"),
}
NAMES: tuple[str, ...] = tuple(BACKENDS)


def backend_class(name: str) -> type[BackendBase]:
    """The class of a backend, by name (KeyError for another name); importing it needs no device."""
    module, _, attribute = BACKENDS[name][0].partition(":")
    found: type[BackendBase] = getattr(importlib.import_module(module), attribute)
    return found


def _known(name: str) -> type[BackendBase]:
    if name not in BACKENDS:
        raise TunerError(f"unknown backend '{name}'; choose one of {', '.join(NAMES)}")
    try:
        return backend_class(name)
    except ImportError as exc:  # an installation that lacks a module the backend's folder needs
        raise TunerError(f"the {name} backend cannot be loaded ({type(exc).__name__}: {exc}); reinstall the "
                         f"package (pip install -e . in the checkout)") from None


def open_backend(name: str, experiment: Experiment, opening: Opening | None = None) -> Backend:
    """The backend ``name`` opened for a run of ``experiment``."""
    return _known(name).open(experiment, opening or Opening())


def open_on_gpus(name: str, experiment: Experiment, gpus: str, opening: Opening | None = None) -> list[Backend]:
    """One backend ``name`` per GPU that ``gpus`` names."""
    opening = opening or Opening()
    cls = _known(name)
    if not cls.on_gpus:
        on_gpus = " or ".join(other for other in NAMES if backend_class(other).on_gpus)
        raise TunerError(f"{opening.name('gpus')} measures on GPUs: it is used with {opening.name('backend')} "
                         f"{on_gpus}, not '{name}'")
    return cls.open_on_gpus(experiment, gpus, opening)


def default_for(experiment: Experiment) -> str:
    """The backend a run of ``experiment`` takes unless told: the one that serves it."""
    return next(name for name in NAMES if backend_class(name).serves(experiment))


def device(name: str) -> Device:
    """The device the backend ``name`` measures on."""
    found = _known(name).local_device()
    if found is None:
        raise TunerError(f"the backend '{name}' measures on no device of this machine")
    return found
