"""The timing method on the CPU: warm-up, the caches evicted before every sample, a monotonic clock around each
call, and the noise-based stopping rule and statistics of ``tuner.measure.method``.

One sample is ``[reset outputs] → [evict] → perf_counter_ns → call → perf_counter_ns``: with verification the
outputs are poisoned again before each sample (:mod:`tuner.backends.verify_and_time`), then evicted. Eviction
(``tuner/ceiling_kernels/evict.c``) reads and writes one word per cache line of a buffer twice the size of all
caches together, spread over every usable core, so neither the shared last level nor any core's private levels keep
the kernel's data; it runs before the first clock reading and is never timed. The call is a ctypes call (or a numpy
one for the BLAS baseline), which returns when the kernel has finished, OpenMP threads included. Samples are taken
until the standard error of the mean falls under ``target_noise`` of the mean (after ``min_samples``), or at
``max_samples`` or ``max_time_s``.
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable

import numpy as np

from tuner.backends.cpu.info import total_cache_bytes, usable_cpus
from tuner.compile.cc import own_kernel
from tuner.energy.cpu import METHOD as ENERGY_METHOD
from tuner.measure.measurement import Timing
from tuner.measure.method import StoppingRule, summarize
from tuner.settings import MeasureSettings

EVICT_FACTOR = 2
"""The eviction buffer is this many times all caches together."""


def eviction_bytes() -> int:
    return EVICT_FACTOR * total_cache_bytes()


def describe_method(settings: MeasureSettings, threads: int) -> str:
    """One line naming the method and its settings, stored with every result."""
    evict = (f"caches evicted before each sample (a {eviction_bytes() // 2**20} MiB buffer read and written on "
             f"{usable_cpus()} cores: cold)" if settings.cold_caches else "no eviction (hot)")
    verified = (" (the verified call into poisoned outputs the first); outputs poisoned again before each sample "
                "and the last sample's checked") if settings.verify else ""
    return (f"time.perf_counter_ns around each call, {threads} thread(s); {settings.warmup} warm-up calls{verified}; "
            f"{evict}; samples until the standard error of the mean < {settings.target_noise:g} of the mean after "
            f"{settings.min_samples}, at most {settings.max_samples} samples or {settings.max_time_s:g} s; "
            f"median reported" + (f"; {ENERGY_METHOD}" if settings.energy else ""))


class CpuTimer:
    """The eviction buffer and its kernel, made once per measuring process; ``time`` measures one callable."""

    def __init__(self) -> None:
        self._evict = own_kernel("evict.c").evict
        self._evict.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        self._evict.restype = None
        self.buffer = np.zeros(eviction_bytes() // 8, np.uint64)
        self.cores = usable_cpus()

    def evict(self) -> None:
        self._evict(self.buffer.ctypes.data, self.buffer.size, self.cores)

    def time(self, run: Callable[[], object], settings: MeasureSettings, warmup: int | None = None,
             before_each: Callable[[], None] | None = None) -> Timing:
        """Time ``run`` (one complete call of the kernel) by the method above, after ``warmup`` calls (default: the
        settings'); ``before_each`` runs before each sample's eviction, untimed."""
        for _ in range(settings.warmup if warmup is None else warmup):
            run()
        rule = StoppingRule.from_settings(settings)
        samples: list[float] = []
        started = time.perf_counter()
        while rule.stop_reason(samples, time.perf_counter() - started) is None:
            if before_each is not None:
                before_each()
            if settings.cold_caches:
                self.evict()
            before = time.perf_counter_ns()
            run()
            samples.append((time.perf_counter_ns() - before) / 1e6)
        return summarize(samples)
