"""What the GPU's measuring process is asked to count, and what it answers
(:mod:`tuner.backends.pycuda.in_process_counters`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tuner.config import Config
from tuner.kernels.render import Launch


@dataclass(frozen=True)
class CountedKernel:
    config: Config
    cubin: bytes
    launch: Launch


@dataclass(frozen=True)
class CountRequest:
    """Kernels of one workspace (the same problem, dtype and arguments), counted in one profiling session."""

    kernels: tuple[CountedKernel, ...]
    metrics: tuple[str, ...]


@dataclass(frozen=True)
class KernelCount:
    """One launch's counters: ``status`` ok or wrong (it ran; its output verified or not), refused (it could not
    run here), unavailable (CUPTI could not count: ``reason`` says why), or alone (the session of several failed:
    count it in a session of its own to learn why)."""

    status: str
    reason: str = ""
    values: dict[str, float] = field(default_factory=dict)
    """Each metric's value in its base unit."""
    units: dict[str, str] = field(default_factory=dict)
    """CUPTI's dimension unit of each metric (byte, nanosecond, instruction…)."""
    passes: int = 0
    missing: tuple[str, ...] = ()
    """Metrics asked for that the GPU does not have."""
    version: str = ""
