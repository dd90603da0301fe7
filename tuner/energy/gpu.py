"""Energy on an NVIDIA GPU: NVML's total-energy counter of the board, read around an energy window of launches.

``nvmlDeviceGetTotalEnergyConsumption`` counts the board's energy in millijoules since the driver loaded (Volta
and later). The SM clock and the enforced power limit are read beside it, never set: the card is measured as it
is found. :class:`GpuEnergy` is made once per measuring process; its windows (:mod:`tuner.energy.window`) run the
measuring process's own launch function between CUDA events.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tuner.energy.measured import Energy
from tuner.energy.window import CounterFailed, EnergyWindows, method

SOURCE = "nvml"
COUNTER = "NVML total energy of the board (nvmlDeviceGetTotalEnergyConsumption, mJ)"


class NvmlCounter:
    """The energy counter, SM clock and power limit of one GPU (an NVML handle)."""

    def __init__(self, handle: Any):
        import pynvml

        self._nvml, self._handle = pynvml, handle

    def read_mj(self) -> int:
        return int(self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle))

    def unavailable(self) -> str | None:
        """Why the counter cannot be read on this GPU, or None where it can."""
        try:
            self.read_mj()
        except self._nvml.NVMLError as exc:
            return f"energy is not available on this GPU: NVML cannot read its total-energy counter ({exc})"
        return None

    def sm_clock_mhz(self) -> float | None:
        try:
            return float(self._nvml.nvmlDeviceGetClockInfo(self._handle, self._nvml.NVML_CLOCK_SM))
        except self._nvml.NVMLError:
            return None

    def power_limit_w(self) -> float | None:
        try:
            return self._nvml.nvmlDeviceGetEnforcedPowerLimit(self._handle) / 1000.0
        except self._nvml.NVMLError:
            return None


class CudaMarks:
    """Launches of one kernel on the current context's default stream, marked by CUDA events."""

    def __init__(self, launch: Callable[[], None]):
        import pycuda.driver as cuda

        self._cuda, self._launch = cuda, launch

    def mark(self) -> Any:
        event = self._cuda.Event()
        event.record()
        return event

    def queue(self, launches: int) -> Any:
        for _ in range(launches):
            self._launch()
        return self.mark()

    def wait(self, marker: Any) -> None:
        marker.synchronize()

    def elapsed_s(self, first: Any, last: Any) -> float:
        return float(first.time_till(last)) / 1e3


class GpuEnergy:
    """The energy of launches on one GPU, or the reason there is none (``unavailable``)."""

    def __init__(self, handle: Any | None):
        self.counter = NvmlCounter(handle) if handle is not None else None
        self.unavailable = self.counter.unavailable() if self.counter is not None else \
            "energy is not available on this GPU: NVML (nvidia-ml-py) cannot open it"
        self.windows: EnergyWindows | None = None
        if self.counter is not None and self.unavailable is None:
            self.windows = EnergyWindows(self.counter.read_mj, 1e-3, SOURCE, self.counter.sm_clock_mhz,
                                         self.counter.power_limit_w)

    def measure(self, launch: Callable[[], None], seconds_per_launch: float) -> Energy | None:
        """One launch's energy from a window of back-to-back launches (None where energy is unavailable)."""
        if self.windows is None:
            return None
        try:
            return self.windows.measure(CudaMarks(launch), seconds_per_launch)
        except CounterFailed as exc:
            self.unavailable, self.windows = f"energy is not available on this GPU: {exc}", None
            return None

    def describe(self) -> dict[str, Any]:
        """What a run's environment records of its energy measurements."""
        limit = self.counter.power_limit_w() if self.counter is not None else None
        return {"counter": COUNTER, "available": self.unavailable is None, "reason": self.unavailable,
                "power_limit_w": limit, "method": method()}
