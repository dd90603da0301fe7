"""Backends evaluate configurations (``tuner.measurement.Backend``): ``pycuda`` measures on the local GPU."""

from tuner.backends.pycuda_backend import PycudaBackend

__all__ = ["PycudaBackend"]
