"""What the machine was doing while a command ran: the share of all CPU cores busy (``/proc/stat``) and the GPU's
utilisation as NVML reports it (the share of each sample period in which a kernel ran), sampled every 0.25 s.

Used by the benchmarks to tell a search that waits on its compilers (every core busy) from one that waits on
itself (cores idle while the GPU is).
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

PERIOD_S = 0.25
PROC_STAT = Path("/proc/stat")


def _cpu_ticks() -> tuple[int, int] | None:
    """(all, idle) jiffies of every core since boot, or None without /proc/stat."""
    try:
        fields = [int(v) for v in PROC_STAT.read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    return sum(fields), fields[3] + fields[4]  # idle and iowait


def _gpu_reader() -> Callable[[], float] | None:
    """A function giving the first GPU's NVML utilisation in percent, or None without NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        pynvml.nvmlDeviceGetUtilizationRates(handle)
    except Exception:  # no NVML library, no driver or no GPU: the CPU share alone
        return None
    return lambda: float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)


class MachineUsage:
    """Samples CPU and GPU usage in a thread while the ``with`` block runs; ``mean(start, end)`` averages the
    samples taken between two ``time.time()`` instants."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float | None, float | None]] = []
        """(time.time() at the end of the period, CPU busy %, GPU utilisation %)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="machine-usage", daemon=True)
        self._gpu = _gpu_reader()

    def __enter__(self) -> MachineUsage:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        last = _cpu_ticks()
        while not self._stop.wait(PERIOD_S):
            now = _cpu_ticks()
            cpu = None
            if now is not None and last is not None and now[0] > last[0]:
                cpu = 100.0 * (1.0 - (now[1] - last[1]) / (now[0] - last[0]))
            last = now
            gpu = self._gpu() if self._gpu is not None else None
            self.samples.append((time.time(), cpu, gpu))

    def mean(self, start: float, end: float) -> tuple[float | None, float | None]:
        """Mean CPU busy % and GPU utilisation % of the samples within [start, end] (None where none)."""
        inside = [s for s in self.samples if start <= s[0] <= end]
        cpu = [s[1] for s in inside if s[1] is not None]
        gpu = [s[2] for s in inside if s[2] is not None]
        return (statistics.fmean(cpu) if cpu else None, statistics.fmean(gpu) if gpu else None)
