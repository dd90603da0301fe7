"""The PyCUDA backend: compiles ahead with nvcc, measures in a GPU measuring process it can replace
(:mod:`tuner.backends.compile_ahead`).

Each configuration is rendered and compiled once to a cubin (:mod:`tuner.compile.nvcc`, with ptxas's resource report:
registers, shared and local memory, spills), while the GPU measures the one before; the measuring process loads the
cubin and verifies and times it while the parent records the evaluation before (``submit``). The parent holds no CUDA
context. A fault in a kernel (illegal address, launch failure) ends only the measuring process; a kernel still running
``MeasureSettings.timeout_s`` after its first launch is a hang and its measuring process is killed. Either way the
configuration is recorded as crashed and the next request starts a fresh measuring process, which re-creates its
buffers.
"""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tuner.backends.abilities import Ability
from tuner.backends.compile_ahead import CompileAheadBackend
from tuner.backends.measuring_process import THREAD_VARIABLES, MeasuringProcess
from tuner.backends.protocol import LOOKAHEAD, Done, Pending
from tuner.backends.pycuda.environment import gpu_environment
from tuner.compile.nvcc import compile_source, find_nvcc
from tuner.compile.pool import CompilePool
from tuner.compile.result import CompileResult
from tuner.config import Config, Problem
from tuner.errors import TunerError
from tuner.kernels.discovery import family_dirs
from tuner.kernels.render import Launch, render
from tuner.kernels.render import launch as launch_geometry
from tuner.measure.measurement import Measurement, Status
from tuner.recorded import is_recorded
from tuner.settings import CompileSettings, MeasureSettings
from tuner.space.entry_space import entry_families

if TYPE_CHECKING:
    from tuner.backends.device import Device
    from tuner.backends.protocol import Backend, Opening
    from tuner.backends.pycuda.in_process_counters import MeasuringProcessCounters
    from tuner.backends.pycuda.kernel_count import CountRequest, KernelCount
    from tuner.experiment.schema import Experiment

START_TIMEOUT_S = 180.0
"""Starting a measuring process: Python, PyCUDA, the context, the timing helpers."""
MEASURER_BLAS_THREADS = 1
"""The GPU measuring process's numpy BLAS threads. Its BLAS work is the float64 reference of a small problem or of
sampled rows and columns, once per problem; a pool of one thread per core spins for a while after each call, and when
the comparisons still used BLAS it took 13 of the 16 cores of an H100 host from the compilers."""
ASK_AHEAD_PER_COMPILER = 2
MOST_ASKED_AHEAD = 64
INSTALL_HINT = 'pip install -e ".[cuda]"'


class PycudaBackend(CompileAheadBackend):
    """Measures configurations on the local GPU through PyCUDA (see the module text)."""

    name = "pycuda"
    abilities = CompileAheadBackend.abilities | {Ability.SUBMITS, Ability.COMPILES_AHEAD, Ability.PREPARES,
                                                 Ability.STARTS_IN_BACKGROUND, Ability.READS_COUNTERS}
    on_gpus = True

    def __init__(self, measure_settings: MeasureSettings | None = None,
                 compile_settings: CompileSettings | None = None, gpu: str | None = None,
                 compiler: CompilePool | None = None, wait: bool = True, progress: bool = False):
        """``gpu``: the CUDA_VISIBLE_DEVICES value of the one GPU the measuring process measures on (None: the default
        GPU);
        ``compiler``: a compile pool shared with the backends of other GPUs (closed by its owner), else its own;
        ``wait``: wait for the GPU measuring process to be ready (else ``wait_ready`` does, or the first request);
        ``progress``: say on stderr what is measured where the GPU's ceilings are measured (a first run)."""
        if importlib.util.find_spec("pycuda") is None:
            raise TunerError(f"the pycuda backend needs PyCUDA, which is not installed here; install it with "
                             f"{INSTALL_HINT} (from the checkout) on a machine with an NVIDIA GPU and nvcc, or use "
                             f"--backend replay to work from a recorded run")
        find_nvcc()
        measure = measure_settings or MeasureSettings()
        settings = compile_settings or CompileSettings()
        self.gpu = gpu
        super().__init__(measure, settings, compiler or CompilePool(self._compile, settings.workers), "GPU",
                         owns_compiler=compiler is None, progress=progress)
        self.ask_ahead = max(LOOKAHEAD, min(ASK_AHEAD_PER_COMPILER * self.compiler.workers + 1, MOST_ASKED_AHEAD))
        """Configurations a search asks ahead: enough to keep every compiler busy, and a new configuration's compile
        (seconds for a register-blocked kernel) behind the measurements of those asked before it (a tenth of a
        second each)."""
        self.channel.start()
        if wait:
            self.wait_ready()

    @classmethod
    def serves(cls, experiment: Experiment) -> bool:
        """The default of an experiment with a CUDA kernel family and no recorded kernel entry."""
        return not is_recorded(experiment) and any(family.target == "cuda"
                                                   for family in entry_families(experiment).values())

    @classmethod
    def open(cls, experiment: Experiment, opening: Opening) -> Backend:
        return cls._started(experiment, opening, None, None)

    @classmethod
    def open_on_gpus(cls, experiment: Experiment, gpus: str, opening: Opening) -> list[Backend]:
        """One backend per GPU, each with a measuring process on its GPU, sharing the first one's compile pool."""
        from tuner.backends.gpus import parse_gpus, visible_gpus

        chosen = parse_gpus(gpus, visible_gpus(), opening.name)
        first = cls._started(experiment, opening, chosen[0], None)
        started: list[Backend] = [first]
        try:
            started += [cls._started(experiment, opening, gpu, first.compiler) for gpu in chosen[1:]]
        except BaseException:
            for one in reversed(started):
                one.close()
            raise
        return started

    @classmethod
    def _started(cls, experiment: Experiment, opening: Opening, gpu: str | None,
                 compiler: CompilePool | None) -> PycudaBackend:
        try:
            return cls(experiment.measure, experiment.compile, gpu=gpu, compiler=compiler, wait=opening.wait,
                       progress=opening.progress)
        except TunerError:
            raise
        except Exception as exc:  # driver errors when no device can be opened
            raise TunerError(f"the pycuda backend cannot start ({type(exc).__name__}: {exc}); check that a CUDA "
                             f"GPU and its driver are available") from None

    @classmethod
    def local_device(cls) -> Device:
        from tuner.backends.pycuda import summary

        return summary

    def wait_ready(self) -> None:
        """Wait for the GPU measuring process; TunerError, in one paragraph, when there is no usable GPU."""
        self.channel.live()

    def _compile(self, source: str) -> CompileResult:
        return compile_source(source, self.compile.arch, self.compile.options)

    def start_measuring_process(self) -> MeasuringProcess:
        from tuner.backends.pycuda.measurer import serve

        return MeasuringProcess(serve, (self.measure, self.compile, family_dirs(), self.gpu), "tuner-gpu-worker",
                             START_TIMEOUT_S, dict.fromkeys(THREAD_VARIABLES, str(MEASURER_BLAS_THREADS)), wait=False)

    def environment_of(self, device: dict[str, Any]) -> dict[str, Any]:
        return gpu_environment(self.name, device, self.measure, self.compile)

    # --- the Backend protocol and the declared abilities -----------------------------------------------------

    def submit(self, config: Config, source: str | None = None, launch: Launch | None = None) -> Pending:
        """Start evaluating one configuration: compile it (or take it from the cache, waiting for a compile
        under way), then send it to the GPU measuring process, which verifies and times it while the caller goes on.

        ``source`` replaces the family's rendered source by a raw kernel of the same signature, and ``launch``
        its launch geometry: for tests of the failure paths, never registered as a family.
        """
        compiled = self.compiled(render(config) if source is None else source)
        if not compiled.ok or compiled.binary is None:
            status = Status.INVALID if compiled.resource_limit else Status.COMPILE_ERROR
            return Done(Measurement(status, compiled.log, compile_time_s=compiled.compile_time_s,
                                    resources=compiled.resources))
        payload = (config, compiled.binary, compiled.resources, launch or launch_geometry(config))
        return self.channel.submit("evaluate", payload, Measurement(Status.CRASHED, resources=compiled.resources),
                                  lambda result: replace(result, compile_time_s=compiled.compile_time_s))

    def evaluate(self, config: Config, source: str | None = None, launch: Launch | None = None) -> Measurement:
        """Compile (or take from the cache), verify and time one configuration (see ``submit``)."""
        return self.submit(config, source, launch).wait()

    def baseline(self, problem: Problem, dtype: str) -> Measurement | None:
        """cuBLAS GEMM for this problem and dtype, verified and timed by the same method as the kernels."""
        return self.channel.request("baseline", (problem, dtype), Measurement(Status.CRASHED))

    def rival(self, problem: Problem, dtype: str, name: str, count: int = 8) -> Measurement | None:
        """A rival GEMM verified and timed by the same method as the kernels: ``cublaslt``, the fastest of the
        first ``count`` algorithms cuBLASLt's heuristic proposes (the vendor's own autotuning), or ``triton``,
        Triton's autotuned GEMM; the reason names what ran. KeyError for another name."""
        from tuner.backends.pycuda.rivals import RIVALS

        if name not in RIVALS:
            raise KeyError(f"no rival {name!r}; there are {', '.join(RIVALS)}")
        return self.channel.request("rival", (problem, dtype, name, count), Measurement(Status.CRASHED))

    def prepare(self, problem: Problem, dtype: str) -> None:
        """A hint: the first requests are about this problem and dtype; the measuring process makes their inputs,
        reference and buffers and loads the baseline's library while the caller goes on."""
        self.channel.submit("prepare", (problem, dtype), Measurement(Status.CRASHED))

    def counters(self) -> MeasuringProcessCounters:
        """The measuring process counts with CUPTI's range profiler; Nsight Compute, on this backend's GPU with its
        compile settings and inputs, where CUPTI cannot (tuner.counters)."""
        from tuner.backends.pycuda.in_process_counters import MeasuringProcessCounters
        from tuner.counters.sources import NcuCounters

        return MeasuringProcessCounters(self, NcuCounters(self.compile, self.measure.input_seed, self.gpu,
                                                          family_dirs(), str(self.device()["device"].get("name")
                                                                             or "")))

    def count_launches(self, request: CountRequest) -> tuple[KernelCount, ...]:
        """One launch's counters of each kernel, read in the measuring process in one session (a crash is every
        answer's reason, and the next request starts a fresh process)."""
        from tuner.backends.pycuda.kernel_count import KernelCount

        answer = self.channel.request("count", request, Measurement(Status.CRASHED))
        if isinstance(answer, Measurement):
            return (KernelCount("crashed", answer.reason or "the measuring process crashed"),) * len(request.kernels)
        return tuple(answer)

    def end_counting(self) -> None:
        """The measuring process's profiler off: the GPU's counters free for another tool, the timing unaffected
        (a process that crashed took its profiler with it: none is started to be told)."""
        if self.channel.running():
            self.channel.request("count_end", None, Measurement(Status.CRASHED))
