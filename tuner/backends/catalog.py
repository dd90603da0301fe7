"""The backends by name: what ``--backend`` takes, each in one line, and the abilities each declares.

This module imports no backend, so that the command line can list the names; :func:`backend_class` loads one.
A run on a kernel entry that is itself a recording is replayed by
:class:`tuner.backends.replay.recorded.RecordedBackend`, which ``--backend replay`` stands for there.
"""

from __future__ import annotations

import importlib

from tuner.backends.protocol import BackendBase

BACKENDS: dict[str, tuple[str, str]] = {
    "pycuda": ("tuner.backends.pycuda.backend:PycudaBackend",
               "the local NVIDIA GPU through PyCUDA: kernels compiled ahead by nvcc, verified and timed in a worker "
               "process, cuBLAS as the baseline"),
    "cpu": ("tuner.backends.cpu.backend:CpuBackend",
            "this machine's CPU: C kernels compiled by the system compiler, verified and timed in a worker process, "
            "numpy's BLAS as the baseline"),
    "replay": ("tuner.backends.replay.backend:ReplayBackend",
               "a recorded run's answers (its results table), with the environments they were measured in"),
}
NAMES: tuple[str, ...] = tuple(BACKENDS)


def backend_class(name: str) -> type[BackendBase]:
    """The class of a backend, by name (KeyError for another name); importing it needs no device."""
    module, _, attribute = BACKENDS[name][0].partition(":")
    found: type[BackendBase] = getattr(importlib.import_module(module), attribute)
    return found

