"""Backends evaluate configurations (:mod:`tuner.backends.protocol`), each in a folder of its own, opened through
the catalog (:mod:`tuner.backends.catalog`): ``pycuda`` measures on the local GPU, ``cpu`` on this CPU, ``replay``
answers from a recorded run. This face imports no backend."""

from tuner.backends.catalog import NAMES, backend_class, default_for, device, open_backend, open_on_gpus
from tuner.backends.device import Device
from tuner.backends.protocol import Backend, BackendBase, Opening, Recording

__all__ = ["NAMES", "Backend", "BackendBase", "Device", "Opening", "Recording", "backend_class", "default_for",
           "device", "open_backend", "open_on_gpus"]
