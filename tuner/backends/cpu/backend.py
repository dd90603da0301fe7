"""The CPU backend: C families compiled by the system compiler, measured in a measuring process it can replace.

Each configuration is rendered and compiled once to a shared library (:mod:`tuner.compile.cc`, with the
compiler's report: code size, vectorized loops), cached like a cubin; the measuring process
(:mod:`tuner.backends.cpu.measurer`) loads it with ctypes, verifies and times it.

Threads: the kernels' OpenMP loops and numpy's BLAS run on ``threads`` threads (default: ``OMP_NUM_THREADS``
when set, else every core this process may use), fixed when the measuring process starts.

Compiling ahead (:mod:`tuner.backends.compile_ahead`): a pool of compiler processes builds the configurations the
study asks ahead. When the measurement leaves cores idle (fewer threads than cores), the pool runs on those cores
while the measuring process measures; when it uses every core, the sources handed to ``prefetch`` wait and are compiled
together, in parallel, right before the next measurement, so that no compiler shares a core with a timed kernel.

A fault in a kernel (SIGSEGV, SIGBUS) ends only the measuring process; a kernel still running
``MeasureSettings.timeout_s`` after its first call is a hang and its measuring process is killed. Either way the
configuration is recorded as crashed and the next request starts a fresh measuring process.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tuner.backends.compile_ahead import CompileAheadBackend
from tuner.backends.cpu.info import usable_cpus
from tuner.backends.energy_capability import cpu_energy_refusal
from tuner.backends.measuring_process import THREAD_VARIABLES, MeasuringProcess
from tuner.compile.cc import compile_source, find_cc, flags
from tuner.compile.pool import CompilePool
from tuner.config import Config, Problem
from tuner.errors import TunerError
from tuner.kernels.discovery import family_dirs, get_family
from tuner.kernels.render import render
from tuner.measure.measurement import Measurement, Status
from tuner.settings import CompileSettings, MeasureSettings
from tuner.space.entry_space import entry_families, violations

if TYPE_CHECKING:
    from tuner.backends.device import Device
    from tuner.backends.protocol import Opening
    from tuner.experiment.schema import Experiment

START_TIMEOUT_S = 120.0
"""Starting a measuring process: Python, numpy, the eviction kernel and its buffer."""


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


class CpuBackend(CompileAheadBackend):
    """Measures C configurations on this machine's CPU (see the module text)."""

    name = "cpu"
    target = "c"

    def __init__(self, measure_settings: MeasureSettings | None = None,
                 compile_settings: CompileSettings | None = None, threads: int | None = None,
                 progress: bool = False):
        """``progress``: say on stderr what is measured where the CPU's ceilings are measured (a first run)."""
        if threads is not None and threads < 1:
            raise TunerError(f"the CPU backend needs at least one thread, not {threads}")
        flags(find_cc())  # fail now without a compiler; probe OpenMP once, here
        settings = compile_settings or CompileSettings()
        self.threads = threads or default_threads()
        idle = usable_cpus() - self.threads
        compiler = CompilePool(lambda source: compile_source(source),
                               settings.workers or (idle if idle > 0 else usable_cpus()))
        super().__init__(measure_settings or MeasureSettings(), settings, compiler, "CPU", overlap=idle > 0,
                         progress=progress)
        self.channel.live()  # fail now, in one paragraph, when the measuring process cannot start

    def energy_unavailable(self) -> str | None:
        """Why there is no energy here: this machine's lack of RAPL is known before the CPU's ceilings are measured."""
        return cpu_energy_refusal() or super().energy_unavailable()

    @classmethod
    def serves(cls, experiment: Experiment) -> bool:
        """The default of an experiment whose kernel families are all C."""
        return {family.target for family in entry_families(experiment).values()} == {"c"}

    @classmethod
    def open(cls, experiment: Experiment, opening: Opening) -> CpuBackend:
        return cls(experiment.measure, experiment.compile, progress=opening.progress)

    @classmethod
    def local_device(cls) -> Device:
        from tuner.backends.cpu import summary

        return summary

    # --- the Backend protocol ----------------------------------------------------------------------------

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
        compiled = self.compiled(render(config) if source is None else source)
        if not compiled.ok or compiled.path is None:
            return Measurement(Status.COMPILE_ERROR, compiled.log, compile_time_s=compiled.compile_time_s)
        payload = (config, str(compiled.path), compiled.resources)
        result = self.channel.request("evaluate", payload, Measurement(Status.CRASHED, resources=compiled.resources))
        return replace(result, compile_time_s=compiled.compile_time_s)

    def baseline(self, problem: Problem, dtype: str) -> Measurement | None:
        """numpy's BLAS (matmul) for this problem and dtype on the backend's threads, verified and timed by the
        same method as the kernels."""
        return self.channel.request("baseline", (problem, dtype), Measurement(Status.CRASHED))

    def environment_of(self, device: dict[str, Any]) -> dict[str, Any]:
        from tuner.backends.cpu.environment import cpu_environment

        return cpu_environment(device, self.threads, self.measure)

    def start_measuring_process(self) -> MeasuringProcess:
        from tuner.backends.cpu.measurer import serve

        return MeasuringProcess(serve, (self.measure, self.threads, family_dirs()), "tuner-cpu-worker", START_TIMEOUT_S,
                             dict.fromkeys(THREAD_VARIABLES, str(self.threads)), wait=False)
