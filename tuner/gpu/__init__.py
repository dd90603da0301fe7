"""The GPU: its description, the timing method on it, its measured ceilings, the modules it compiles for itself, and
which GPUs a run measures on (the GPU backend is :mod:`tuner.backends.pycuda`)."""
