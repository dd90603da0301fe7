"""The CPU: its description, the timing method on it, its measured ceilings and the environment of its
measurements (the CPU backend is :mod:`tuner.backends.cpu`)."""
