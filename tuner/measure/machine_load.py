"""What else the machine did while something was measured: other processes' CPU time (``/proc/stat`` and
``/proc/<pid>/stat``, less the run's own process tree: ``other_cpus``) and other processes' work on the GPU (NVML:
``other_gpu_processes``, ``other_gpu_percent``), and whether that may have slowed the measurement (*under load*,
beyond ``LOAD_TOLERANCE`` and ``RESOLUTION_TICKS``). The readers of ``/proc`` and NVML are small classes of their
own, so that the judgement is tested with stand-ins; this module imports nothing of the project."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

LOAD_TOLERANCE = 0.1
"""Others may take this share of the measuring threads' time before a measurement counts as under load."""
RESOLUTION_TICKS = 3
"""Differences of fewer clock ticks than this are within the counters' resolution."""
GPU_BUSY_PERCENT = 1.0
"""Another process's SM utilisation above this puts a GPU measurement under load."""
GPU_LOOKBACK_S = 1.0
"""NVML samples each process's utilisation every fraction of a second: a window reads the samples from this long
before it started, so that a short one sees the latest."""
BUSY_FIELDS = (0, 1, 2, 5, 6, 7)
"""user, nice, system, irq, softirq, steal of a cpuN line of /proc/stat (idle and iowait are not busy)."""


@dataclass(frozen=True)
class Load:
    """What other processes did during one measurement."""

    window_s: float | None
    """How long the measurement was watched (None: read back from a results row, which keeps no window)."""
    cpus: int | None = None
    """The CPUs this process may run on (None: /proc could not be read)."""
    threads: int | None = None
    """The measurement's own threads on them (None: a GPU measurement, whose host thread mostly waits)."""
    other_cpus: float | None = None
    """The CPUs' worth of time other processes took during the window."""
    other_gpu_processes: int | None = None
    """Other processes holding a context on the measuring GPU (None: not a GPU measurement, or no NVML)."""
    other_gpu_percent: float | None = None
    """The highest SM utilisation NVML sampled of another process during the window."""
    under_load: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Load | None:
        if not isinstance(data, Mapping):
            return None
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known) if "window_s" in known else None

    def describe(self) -> str:
        """The load in words, e.g. "other processes kept 1.3 of 2 CPUs busy"."""
        parts = []
        if self.other_cpus is not None:
            parts.append(f"other processes kept {self.other_cpus:.1f} of {self.cpus} CPUs busy")
        if self.other_gpu_processes:
            busy = f", up to {self.other_gpu_percent:.0f}% of its SMs" if self.other_gpu_percent is not None else ""
            parts.append(f"{self.other_gpu_processes} other process(es) used the GPU{busy}")
        return "; ".join(parts) or "no other work seen"


def cpu_contended(other_ticks: float, window_ticks: float, cpus: int, threads: int) -> bool:
    """Whether others' ``other_ticks`` over a window of ``window_ticks`` (both in clock ticks) reached into the
    ``threads`` of ``cpus`` CPUs a measurement used."""
    idle = max(cpus - threads, 0) * window_ticks
    return other_ticks - idle > max(LOAD_TOLERANCE * threads * window_ticks, RESOLUTION_TICKS)


def gpu_others(seen: Mapping[int, float | None], own: set[int]) -> dict[int, float | None]:
    """The other processes among those NVML saw on the GPU (pid → their highest SM utilisation in %, None where it
    keeps no samples): all but the run's own; where none of the pids is the run's own (NVML names them in another
    namespace), all but the busiest, which stands for the run's measuring process."""
    if own & seen.keys():
        return {pid: busy for pid, busy in seen.items() if pid not in own}
    ordered = sorted(seen, key=lambda pid: seen[pid] or 0.0)
    return {pid: seen[pid] for pid in ordered[:-1]}


def gpu_contended(others: Mapping[int, float | None]) -> bool:
    """Whether other processes' work on the GPU may have slowed a measurement: one of them used its SMs, or NVML
    keeps no samples of one that holds a context."""
    return any(busy is None or busy > GPU_BUSY_PERCENT for busy in others.values())


# --- the readers ----------------------------------------------------------------------------------------------


class ProcCounters:
    """CPU time from /proc (``root``: another folder laid out as /proc, for tests)."""

    def __init__(self, root: Path = Path("/proc")):
        self.root = root

    def busy_ticks(self, cpus: set[int]) -> int:
        """The busy clock ticks of these CPUs since boot."""
        total = 0
        for line in (self.root / "stat").read_text().splitlines():
            name, *fields = line.split()
            if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
                total += sum(int(fields[i]) for i in BUSY_FIELDS if i < len(fields))
        return total

    def tree_ticks(self, root_pid: int) -> int:
        """The clock ticks of ``root_pid`` and every process under it (their own and their waited-for children's)."""
        parents: dict[int, int] = {}
        ticks: dict[int, int] = {}
        for entry in self.root.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue  # gone meanwhile
            pid = int(entry.name)
            parents[pid] = int(fields[1])
            ticks[pid] = sum(int(fields[i]) for i in (11, 12, 13, 14))
        children: dict[int, list[int]] = {}
        for pid, parent in parents.items():
            children.setdefault(parent, []).append(pid)
        total, stack = 0, [root_pid]
        while stack:
            pid = stack.pop()
            total += ticks.get(pid, 0)
            stack.extend(children.get(pid, ()))
        return total


PROC = ProcCounters()


class GpuReader(Protocol):
    def processes(self, since_us: int) -> dict[int, float | None]:
        """pid → highest SM utilisation (%) sampled since ``since_us`` (NVML's clock), None without samples."""
        ...

    def now_us(self) -> int:
        """NVML's sampling clock, in microseconds."""
        ...


class NvmlProcesses:
    """The processes on one GPU, through NVML (nvidia-ml-py)."""

    def __init__(self, handle: object):
        import pynvml

        self._nvml = pynvml
        self._handle = handle

    def now_us(self) -> int:
        return int(time.time() * 1e6)

    def processes(self, since_us: int) -> dict[int, float | None]:
        nvml = self._nvml
        seen: dict[int, float | None] = {}
        for listing in (nvml.nvmlDeviceGetComputeRunningProcesses, nvml.nvmlDeviceGetGraphicsRunningProcesses):
            try:
                seen.update({int(process.pid): None for process in listing(self._handle)})
            except nvml.NVMLError:
                continue
        try:
            samples, sampled = nvml.nvmlDeviceGetProcessUtilization(self._handle, since_us), True
        except getattr(nvml, "NVMLError_NotFound", ()):  # no sample since then: no process used the SMs
            samples, sampled = [], True
        except nvml.NVMLError:  # per-process samples are not kept on this GPU or driver
            samples, sampled = [], False
        if sampled:
            seen = dict.fromkeys(seen, 0.0)
        for sample in samples:
            pid = int(sample.pid)
            seen[pid] = max(seen.get(pid) or 0.0, float(sample.smUtil))
        return seen


# --- watching a window ----------------------------------------------------------------------------------------


def usable_cpu_set() -> set[int]:
    """The CPUs this process may run on (its affinity mask)."""
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return set(range(os.cpu_count() or 1))


class LoadMeter:
    """Watches windows of measurement: ``window()`` starts one, its ``close()`` says what others did meanwhile.

    ``threads``: the measurement's own threads on the CPU (None: judge the GPU only); ``root_pid``: the run's main
    process, whose tree is the run's own (default: this process); ``counters``: the reader of CPU time (None:
    CPU time is not watched, as for a GPU measurement, where reading every process's counters would cost more than
    it tells); ``gpu``: a reader of the GPU's processes, and ``own_gpu_pids`` the run's processes on it (default:
    this process).
    """

    def __init__(self, threads: int | None = None, root_pid: int | None = None, gpu: GpuReader | None = None,
                 counters: ProcCounters | None = PROC, clock: Callable[[], float] = time.monotonic,
                 cpus: set[int] | None = None, own_gpu_pids: set[int] | None = None):
        self.threads = threads
        self.root_pid = root_pid or os.getpid()
        self.gpu = gpu
        self.counters = counters
        self.clock = clock
        self.cpus = cpus or usable_cpu_set()
        self.own_gpu_pids = own_gpu_pids or {os.getpid()}
        self.hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def window(self, threads: int | None = None) -> Window:
        """A window starting now; ``threads`` overrides the meter's for this one (a ceiling on one core, say)."""
        return Window(self, self.threads if threads is None else threads)

    def _cpu_ticks(self) -> tuple[int, int] | None:
        if self.counters is None:
            return None
        try:
            return self.counters.busy_ticks(self.cpus), self.counters.tree_ticks(self.root_pid)
        except (OSError, ValueError, IndexError):  # no /proc (not Linux), or a layout this reader does not know
            return None


class Window:
    """One window of a LoadMeter (see there)."""

    def __init__(self, meter: LoadMeter, threads: int | None):
        self.meter, self.threads = meter, threads
        self.started = meter.clock()
        self.ticks = meter._cpu_ticks()
        self.gpu_since = meter.gpu.now_us() - int(GPU_LOOKBACK_S * 1e6) if meter.gpu is not None else 0

    def close(self) -> Load:
        meter = self.meter
        seconds = max(meter.clock() - self.started, 1e-9)
        ticks = meter._cpu_ticks()
        other_cpus, loaded = None, False
        if self.ticks is not None and ticks is not None:
            other = max(0, (ticks[0] - self.ticks[0]) - (ticks[1] - self.ticks[1]))
            other_cpus = round(other / meter.hz / seconds, 3)
            if self.threads is not None:
                loaded = cpu_contended(other, seconds * meter.hz, len(meter.cpus), self.threads)
        gpu_processes = gpu_percent = None
        if meter.gpu is not None:
            try:
                others = gpu_others(meter.gpu.processes(self.gpu_since), meter.own_gpu_pids)
            except Exception:  # NVML may fail in many ways: the GPU's load is then unknown
                others = None
            if others is not None:
                gpu_processes = len(others)
                busy = [b for b in others.values() if b is not None]
                gpu_percent = max(busy) if busy else None
                loaded = loaded or gpu_contended(others)
        return Load(round(seconds, 4), len(meter.cpus) if other_cpus is not None else None, self.threads,
                    other_cpus, gpu_processes, gpu_percent, loaded)
