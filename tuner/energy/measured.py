"""What one energy window measured: the energy of one launch (or call), the mean power, and its conditions.

A window runs the kernel back to back, apart from the timed samples (whose timing it leaves as it was), and
reads the device's energy counter around it (:mod:`tuner.energy.gpu`, :mod:`tuner.energy.cpu`). Pure data: the
measuring process makes it, the results table and the replay backend read it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Energy:
    joules: float
    """Energy of one launch: the window's mean power times its time per launch (J)."""
    power_w: float
    """Mean power over the part of the window the counter covered (W)."""
    launches: int
    """Launches in the window."""
    window_s: float
    """The window's duration on the device's clock (CUDA events) or the host's (CPU)."""
    counted_s: float
    """The part of the window the counter's readings span (whole update periods of the counter, on the GPU)."""
    updates: int
    """Counter update periods inside ``counted_s`` (on the CPU: readings, one at each end)."""
    source: str
    """Which counter: "nvml" (the GPU board's total-energy counter) or "rapl" (the CPU packages')."""
    sm_clock_mhz: float | None = None
    """The SM clock read during the window (GPU)."""
    power_limit_w: float | None = None
    """The power limit the driver enforced during the window (read, never set)."""

    @property
    def seconds_per_launch(self) -> float:
        return self.window_s / self.launches if self.launches else float("nan")
