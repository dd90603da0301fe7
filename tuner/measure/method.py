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

The pure parts (stopping rule, statistics, throttle count) need no GPU and are here; the GPU side, ``Timer`` and the
method's line stored with every result (:mod:`tuner.backends.pycuda.timing`), needs PyCUDA and a context.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from tuner.measure.measurement import Timing
from tuner.settings import MeasureSettings

THROTTLE_FRACTION = 0.05
"""A sample is throttled when the SM clock reads more than this fraction under the starting clock."""


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
