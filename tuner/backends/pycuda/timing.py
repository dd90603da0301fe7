"""The timing method on the GPU (:mod:`tuner.measure.method` holds its device-neutral rule): CUDA events around
each launch, the L2 flushed between samples, samples queued in batches behind a short spin kernel, and the SM
clock read through NVML once per batch."""

from __future__ import annotations

import time
from collections.abc import Callable

from tuner.energy.window import method as energy_method
from tuner.measure.measurement import Timing
from tuner.measure.method import StoppingRule, ThrottleCounter, summarize
from tuner.settings import MeasureSettings

CLOCK_PERIOD_S = 0.05
"""Batches are cut so that the SM clock is read at least this often (when a sample is shorter)."""
HOLD_NS_PER_SAMPLE = 40_000
"""The spin before a batch lasts this long per queued sample (covering the host's cost to queue one)."""
HOLD_MAX_NS = 20_000_000


def describe_method(settings: MeasureSettings) -> str:
    """One line naming the method and its settings, stored with every result."""
    flush = "L2 flushed before each sample (cold)" if settings.cold_caches else "no L2 flush (hot)"
    verified = (" (the verified launch into poisoned outputs the first); outputs poisoned again before each sample "
                "and the last sample's checked") if settings.verify else ""
    return (
        f"CUDA events around each launch; {settings.warmup} warm-up launches{verified}; {flush}; samples until "
        f"the standard error of the mean < {settings.target_noise:g} of the mean after {settings.min_samples}, "
        f"at most {settings.max_samples} samples or {settings.max_time_s:g} s; median reported"
        + (f"; {energy_method()}" if settings.energy else "")
    )


_HOLD_SOURCE = r"""
extern "C" __global__ void hold(unsigned long long nanoseconds)
{
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < nanoseconds);
}
"""


class SmClock:
    """Reads the current SM clock of one GPU through NVML (nvidia-ml-py)."""

    def __init__(self, handle: object):
        import pynvml

        self._nvml = pynvml
        self._handle = handle

    def read(self) -> float | None:
        try:
            return float(self._nvml.nvmlDeviceGetClockInfo(self._handle, self._nvml.NVML_CLOCK_SM))
        except self._nvml.NVMLError:
            return None


class Timer:
    """The GPU side of the method, made once per CUDA context: the flush buffer, the spin kernel, the clock."""

    def __init__(self, l2_bytes: int, clock: SmClock | None, arch: str):
        import numpy as np
        import pycuda.driver as cuda

        from tuner.backends.pycuda.modules import compiled_function

        self._cuda = cuda
        self._np = np
        self.flush_bytes = max(2 * l2_bytes, 32 * 2**20)
        self._flush_buffer = cuda.mem_alloc(self.flush_bytes)
        self._hold = compiled_function(_HOLD_SOURCE, arch, "hold")
        self._hold.prepare("Q")
        self.clock = clock

    def flush_l2(self) -> None:
        """Overwrite a buffer twice the L2's size, evicting whatever the last launch left in the L2."""
        self._cuda.memset_d32_async(self._flush_buffer, 0, self.flush_bytes // 4)

    def _read_clock(self) -> float | None:
        return self.clock.read() if self.clock else None

    def _batch(self, launch: Callable[[], None], count: int, flush: bool,
               before_each: Callable[[], None] | None) -> list[float]:
        cuda = self._cuda
        events = [(cuda.Event(), cuda.Event()) for _ in range(count)]
        hold_ns = min(HOLD_MAX_NS, HOLD_NS_PER_SAMPLE * count)
        self._hold.prepared_call((1, 1, 1), (1, 1, 1), self._np.uint64(hold_ns))
        for start, end in events:
            if before_each is not None:
                before_each()
            if flush:
                self.flush_l2()
            start.record()
            launch()
            end.record()
        events[-1][1].synchronize()
        return [start.time_till(end) for start, end in events]

    def time(self, launch: Callable[[], None], settings: MeasureSettings, warmup: int | None = None,
             before_each: Callable[[], None] | None = None) -> Timing:
        """Time ``launch`` (which queues one kernel on the default stream) by the method above, after ``warmup``
        launches (default: the settings'); ``before_each`` queues work before each sample's flush, untimed."""
        for _ in range(settings.warmup if warmup is None else warmup):
            launch()
        self._cuda.Context.synchronize()
        rule = StoppingRule.from_settings(settings)
        clock_before = self._read_clock()
        throttle = ThrottleCounter(clock_before)
        samples: list[float] = []
        seconds_per_sample: float | None = None
        started = time.perf_counter()
        while rule.stop_reason(samples, time.perf_counter() - started) is None:
            count = rule.next_batch(samples, time.perf_counter() - started, seconds_per_sample)
            if seconds_per_sample:
                count = min(count, max(1, int(CLOCK_PERIOD_S / seconds_per_sample)))
            batch_started = time.perf_counter()
            samples += self._batch(launch, count, settings.cold_caches, before_each)
            seconds_per_sample = (time.perf_counter() - batch_started) / count
            throttle.observe(self._read_clock(), count)
        return summarize(samples, throttle.count, clock_before, self._read_clock())

    def close(self) -> None:
        self._flush_buffer.free()
