"""The CPU backend: C families compiled by the system compiler, measured in a worker process it can replace.

Each configuration is rendered and compiled once to a shared library (:mod:`tuner.compile.cc`, with the
compiler's report: code size, vectorized loops), cached like a cubin; the worker
(:mod:`tuner.backends.cpu.worker`) loads it with ctypes, verifies and times it.

Threads: the kernels' OpenMP loops and numpy's BLAS run on ``threads`` threads (default: ``OMP_NUM_THREADS``
when set, else every core this process may use), fixed when the worker starts.

Compiling ahead: a pool of compiler processes builds the configurations the study asks ahead. When the
measurement leaves cores idle (fewer threads than cores), the pool runs on those cores while the worker
measures; when it uses every core, the sources handed to ``prefetch`` wait and are compiled together, in
parallel, right before the next measurement, so that no compiler shares a core with a timed kernel.

A fault in a kernel (SIGSEGV, SIGBUS) ends only the worker; a kernel still running
``MeasureSettings.timeout_s`` after its first call is a hang and its worker is killed. Either way the
configuration is recorded as crashed and the next request starts a fresh worker.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from tuner.backends.energy_capability import environment_refusal
from tuner.backends.measuring_worker import MeasuringWorker
from tuner.backends.protocol import BackendBase
from tuner.backends.worker_process import THREAD_VARIABLES, WorkerProcess
from tuner.compile.cc import compile_source, find_cc, flags
from tuner.compile.pool import CompilePool
from tuner.compile.result import CompileResult
from tuner.config import Config, Problem
from tuner.cpu.info import usable_cpus
from tuner.errors import TunerError
from tuner.kernels.discovery import family_dirs, get_family
from tuner.kernels.render import render
from tuner.measure.measurement import Measurement, Status
from tuner.settings import CompileSettings, MeasureSettings
from tuner.space.entry_space import violations

START_TIMEOUT_S = 120.0
"""Starting a worker: Python, numpy, the eviction kernel and its buffer."""


def default_threads() -> int:
    """``OMP_NUM_THREADS`` when it is set (a positive count, or OpenMP's list of counts per nesting level, whose
    first counts here), else every usable core; TunerError for any other value, which OpenMP would ignore."""
    given = os.environ.get("OMP_NUM_THREADS")
    if given is None or not given.strip():
        return usable_cpus()
    first = given.split(",")[0].strip()
    if not first.isascii() or not first.isdigit() or int(first) < 1:
        raise TunerError(f"OMP_NUM_THREADS={given!r}: the CPU backend's thread count must be a whole number of at "
                         f"least 1 (such as OMP_NUM_THREADS=2); unset it to run on every usable core "
                         f"({usable_cpus()} here)")
    return int(first)


class CpuBackend(BackendBase):
    """Measures C configurations on this machine's CPU (see the module text)."""

    name = "cpu"

    def __init__(self, measure_settings: MeasureSettings | None = None,
                 compile_settings: CompileSettings | None = None, threads: int | None = None,
                 progress: bool = False):
        """``progress``: say on stderr what is measured where the CPU's ceilings are measured (a first run)."""
        if threads is not None and threads < 1:
            raise TunerError(f"the CPU backend needs at least one thread, not {threads}")
        flags(find_cc())  # fail now without a compiler; probe OpenMP once, here
        self.measure = measure_settings or MeasureSettings()
        self.compile = compile_settings or CompileSettings()
        self.threads = threads or default_threads()
        self.progress = progress
        idle = usable_cpus() - self.threads
        self.overlap = idle > 0
        self.compiler = CompilePool(lambda source: compile_source(source),
                                    self.compile.workers or (idle if self.overlap else usable_cpus()))
        self._waiting: list[str] = []
        self.worker = MeasuringWorker(self._start_worker, "CPU", self.measure.timeout_s)
        self._device: dict[str, Any] | None = None
        self._environment: dict[str, Any] | None = None
        self.worker.live()  # fail now, in one paragraph, when the worker cannot start

    @property
    def busy_seconds(self) -> float:  # type: ignore[override]
        return self.worker.busy_seconds

    # --- the Backend protocol ----------------------------------------------------------------------------

    def prefetch(self, configs: list[Config]) -> None:
        for config in configs:
            if get_family(config.family).target != "c":
                continue
            if self.overlap:
                self.compiler.submit(render(config))
            else:
                self._waiting.append(render(config))

    def evaluate(self, config: Config, source: str | None = None) -> Measurement:
        """Compile (or take from the cache), verify and time one configuration.

        ``source`` replaces the family's rendered source by a raw C kernel of the same signature: for tests of
        the failure paths, never registered as a family.
        """
        family = get_family(config.family)
        if source is None and family.target != "c":
            return Measurement(Status.INVALID, f"the CPU backend runs C families; '{family.name}' is a "
                                               f"{family.target} family")
        broken = [] if source is not None else violations(family, config.param_dict, config.dtype)
        if broken:
            return Measurement(Status.INVALID, "; ".join(broken))
        compiled = self._compiled(render(config) if source is None else source)
        if not compiled.ok or compiled.path is None:
            return Measurement(Status.COMPILE_ERROR, compiled.log, compile_time_s=compiled.compile_time_s)
        payload = (config, str(compiled.path), compiled.resources)
        result = self.worker.request("evaluate", payload, Measurement(Status.CRASHED, resources=compiled.resources))
        return replace(result, compile_time_s=compiled.compile_time_s)

    def baseline(self, problem: Problem, dtype: str) -> Measurement | None:
        """numpy's BLAS (matmul) for this problem and dtype on the backend's threads, verified and timed by the
        same method as the kernels."""
        return self.worker.request("baseline", (problem, dtype), Measurement(Status.CRASHED))

    def device(self, remeasure: bool = False) -> dict[str, Any]:
        """The CPU's summary (:func:`tuner.cpu.ceilings.summary`): description, compiler, peaks, ceilings."""
        if self._device is None or remeasure:
            self._device = self.worker.describe(remeasure, self.progress)
        return self._device

    def metadata(self) -> dict[str, Any]:
        if self._environment is None:
            from tuner.cpu.environment import cpu_environment

            self._environment = cpu_environment(self.device(), self.threads, self.measure)
        return self._environment

    def energy_unavailable(self) -> str | None:
        return environment_refusal(self.metadata())

    def close(self) -> None:
        self.worker.stop()
        self.compiler.close()

    def __enter__(self) -> CpuBackend:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- compiling and the worker --------------------------------------------------------------------------

    def _compiled(self, source: str) -> CompileResult:
        if not self.overlap:
            # Everything waiting compiles now, in parallel, while nothing is being timed.
            waiting, self._waiting = self._waiting, []
            for text in waiting:
                self.compiler.submit(text)
        return self.compiler.result(source)

    def _start_worker(self) -> WorkerProcess:
        from tuner.backends.cpu.worker import serve

        return WorkerProcess(serve, (self.measure, self.threads, family_dirs()), "tuner-cpu-worker", START_TIMEOUT_S,
                             dict.fromkeys(THREAD_VARIABLES, str(self.threads)), wait=False)
