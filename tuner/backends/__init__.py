"""Backends evaluate configurations (:mod:`tuner.backends.protocol`): ``pycuda`` measures on the local GPU,
``replay`` answers from a recorded run."""

from tuner.backends.protocol import Backend, BackendBase, Recording
from tuner.backends.pycuda.backend import PycudaBackend

__all__ = ["Backend", "BackendBase", "PycudaBackend", "Recording"]
