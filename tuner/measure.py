"""The timing method: warm-up, CUDA events around each launch, the L2 flushed between samples, a stopping rule.

One sample is ``[reset outputs] → [flush L2] → start event → launch → end event``; the flush runs before the
start event, so it is never timed, and it keeps the GPU busy while the host queues the launch, so host latency
is not timed either (the outputs are reset, poisoned for verification, before the flush, so they start cold).
Samples are queued in batches behind a short spin kernel (the queue fills while the GPU spins), then read back.
After each batch the stopping rule decides whether the noise is low enough: it stops when
the standard error of the mean falls under ``target_noise`` of the mean (after ``min_samples``), or at
``max_samples`` or ``max_time_s``. The SM clock is read through NVML once per batch (at least every
``CLOCK_PERIOD_S``); samples of a batch whose clock reads more than ``THROTTLE_FRACTION`` under the clock
right after the warm-up count as throttled.

The pure parts (stopping rule, statistics, throttle count) need no GPU; ``Timer`` needs PyCUDA and a context.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tuner.energy.window import method as energy_method
from tuner.measurement import Timing
from tuner.settings import MeasureSettings

THROTTLE_FRACTION = 0.05
"""A sample is throttled when the SM clock reads more than this fraction under the starting clock."""
CLOCK_PERIOD_S = 0.05
"""Batches are cut so that the SM clock is read at least this often (when a sample is shorter)."""
HOLD_NS_PER_SAMPLE = 40_000
"""The spin before a batch lasts this long per queued sample (covering the host's cost to queue one)."""
HOLD_MAX_NS = 20_000_000


def describe_method(settings: MeasureSettings) -> str:
    """One line naming the method and its settings, stored with every result."""
    flush = "L2 flushed before each sample (cold)" if settings.flush_l2 else "no L2 flush (hot)"
    verified = (" (the verified launch into poisoned outputs the first); outputs poisoned again before each sample "
                "and the last sample's checked") if settings.verify else ""
    return (
        f"CUDA events around each launch; {settings.warmup} warm-up launches{verified}; {flush}; samples until "
        f"the standard error of the mean < {settings.target_noise:g} of the mean after {settings.min_samples}, "
        f"at most {settings.max_samples} samples or {settings.max_time_s:g} s; median reported"
        + (f"; {energy_method()}" if settings.energy else "")
    )


def relative_noise(samples: Sequence[float]) -> float:
    """Standard error of the mean over the mean; infinite with fewer than two samples."""
    if len(samples) < 2:
        return math.inf
    mean = statistics.fmean(samples)
    if mean <= 0:
        return math.inf
    return statistics.stdev(samples) / math.sqrt(len(samples)) / mean


@dataclass(frozen=True)
class StoppingRule:
    min_samples: int
    max_samples: int
    max_time_s: float
    target_noise: float

    @classmethod
    def from_settings(cls, settings: MeasureSettings) -> StoppingRule:
        return cls(settings.min_samples, settings.max_samples, settings.max_time_s, settings.target_noise)

    def stop_reason(self, samples: Sequence[float], elapsed_s: float) -> str | None:
        """Why sampling stops now ("max_samples", "noise", "max_time"), or None to go on."""
        n = len(samples)
        if n >= self.max_samples:
            return "max_samples"
        if n < self.min_samples:
            return None
        if relative_noise(samples) <= self.target_noise:
            return "noise"
        if elapsed_s >= self.max_time_s:
            return "max_time"
        return None

    def next_batch(self, samples: Sequence[float], elapsed_s: float, seconds_per_sample: float | None) -> int:
        """How many samples to take before looking again: up to ``min_samples`` first, then the number the
        current noise predicts (n ∝ (CV / target)²), at least a quarter more, within the sample and time limits."""
        n = len(samples)
        room = self.max_samples - n
        if n < self.min_samples:
            return min(self.min_samples - n, room)
        cv = statistics.stdev(samples) / statistics.fmean(samples) if n >= 2 else math.inf
        needed = math.ceil((cv / self.target_noise) ** 2) if math.isfinite(cv) else self.max_samples
        batch = max(needed - n, math.ceil(n / 4), 1)
        if seconds_per_sample:
            batch = min(batch, max(1, int((self.max_time_s - elapsed_s) / seconds_per_sample)))
        return max(1, min(batch, room))


class ThrottleCounter:
    """Counts samples taken while the SM clock read more than ``fraction`` under the reference clock."""

    def __init__(self, reference_mhz: float | None, fraction: float = THROTTLE_FRACTION):
        self.reference_mhz = reference_mhz
        self.fraction = fraction
        self.count = 0

    def observe(self, clock_mhz: float | None, samples: int) -> None:
        if self.reference_mhz and clock_mhz is not None and clock_mhz < self.reference_mhz * (1 - self.fraction):
            self.count += samples


def summarize(samples_ms: Sequence[float], throttled: int = 0, clock_before: float | None = None,
              clock_after: float | None = None) -> Timing:
    if not samples_ms:
        raise ValueError("no samples to summarize")
    return Timing(
        median_ms=statistics.median(samples_ms),
        mean_ms=statistics.fmean(samples_ms),
        min_ms=min(samples_ms),
        stdev_ms=statistics.stdev(samples_ms) if len(samples_ms) > 1 else 0.0,
        samples_ms=tuple(samples_ms),
        throttled_samples=throttled,
        sm_clock_mhz_before=clock_before,
        sm_clock_mhz_after=clock_after,
    )


# --- on the GPU ----------------------------------------------------------------------------------------------

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
            samples += self._batch(launch, count, settings.flush_l2, before_each)
            seconds_per_sample = (time.perf_counter() - batch_started) / count
            throttle.observe(self._read_clock(), count)
        return summarize(samples, throttle.count, clock_before, self._read_clock())

    def close(self) -> None:
        self._flush_buffer.free()
