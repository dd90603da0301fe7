"""The CPU backend: C families compiled by the system compiler, measured in a measuring process; the CPU's
description, the timing method on it, its measured ceilings and the environment of its measurements."""
