"""The GPU measurer: what the GPU's measuring process runs; it owns the CUDA context, verifies and times one request
at a time.

Requests (:mod:`tuner.backends.measuring_process`): ``("evaluate", (config, cubin, resources, launch))`` — the
cubin the one compiler made, loaded with ``module_from_buffer`` —, ``("baseline", (problem, dtype))``,
``("prepare", (problem, dtype))`` (inputs and reference made ahead in a thread, the baseline's library loaded),
``("device", (remeasure, progress))``, ``("count", CountRequest)`` (one launch's hardware counters, read in this
process: :mod:`tuner.backends.pycuda.in_process_counters`), ``("count_end", None)`` (the profiler off, the GPU's
counters free for other tools), ``("stop", None)``. The kernel's arguments come from
its family's declaration: buffers are allocated, inputs filled with the same random values the reference was
computed from, outputs poisoned before the verified launch and before each timed sample
(:mod:`tuner.backends.verify_and_time`).
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuner.backends.measuring_process import Fatal, Handlers, Served, run_measurer
from tuner.backends.pycuda.kernel_count import CountRequest, KernelCount
from tuner.backends.pycuda.workspace import HostData, Workspace, device_bytes, host_data
from tuner.backends.verify_and_time import Bench, verify_and_time
from tuner.config import Config, Problem
from tuner.kernels.arguments import Buffer
from tuner.kernels.discovery import get_family, use_family_dirs
from tuner.kernels.family import MATMUL, Dim3, Kernel
from tuner.kernels.occupancy import blocks_per_sm
from tuner.kernels.render import Launch
from tuner.kernels.targets import STATIC_SHARED_LIMIT, runs_on
from tuner.kernels.verify import Verdict
from tuner.measure.machine_load import LoadMeter, NvmlProcesses
from tuner.measure.measurement import Measurement, Resources, Status
from tuner.settings import CompileSettings, MeasureSettings

if TYPE_CHECKING:
    from tuner.backends.pycuda.range_profiler import RangeProfiler

LAUNCH_RESOURCE_MARKERS = ("too many resources requested", "invalid argument", "out of resources")
"""Errors cuLaunchKernel returns, before anything runs, for a launch the hardware cannot take."""
KEPT_WORKSPACES = 2
"""Workspaces kept on the device, the most recently used: while the last configurations of one study compile,
the search measures the next study's, going back and forth between two problems."""
HOSTS_KEPT_BYTES = 1 << 30
"""The inputs of freed workspaces kept on the host (with their references), the most recently freed: a workspace
made again, as when the counters after the search go back to every problem, skips making its inputs and its
reference (0.6 s for 4096³ float32)."""
SPARE_DEVICE_BYTES = 512 << 20
"""Device memory left free beside the workspaces, for the kernels' and the baseline library's own needs."""


class LaunchRejected(Exception):
    """The driver refused the launch for its resources (a configuration limit, not a fault)."""


WorkspaceKey = tuple[Kernel, Problem, str]


class ExtendedLaunch:
    """A kernel launched with clusters or tensor maps (:mod:`tuner.backends.cuda_driver`) on a workspace: the maps
    encoded on its buffers, the kernel loaded through the driver and launched with cuLaunchKernelEx. Raises
    TensorMapRefused (a buffer TMA cannot describe) or cuda_driver.DriverError (a map the driver refuses)."""

    def __init__(self, cubin: bytes, launch: Launch, ws: Workspace, multiprocessors: int | None):
        from tuner.backends import cuda_driver
        from tuner.kernels.tensor_maps import tensor_map_fields

        self.driver, self.launch = cuda_driver, launch
        buffers = {b.name: b for b in ws.kernel.arguments if isinstance(b, Buffer)}
        maps = [cuda_driver.TensorMapBuffer(tensor_map_fields(spec, buffers[spec.buffer].shape(ws.problem),
                                                         buffers[spec.buffer].dtype_of(ws.dtype)),
                                       int(ws.device[spec.buffer]))
                for spec in launch.tensor_maps]
        values = [int(ws.device[a.name]) if isinstance(a, Buffer) else a.value(ws.problem) for a in ws.kernel.arguments]
        self.parameters = cuda_driver.parameters(maps, ws.signature, values)
        self.kernel = cuda_driver.ExtendedKernel(cubin, launch.kernel_name, launch.dynamic_shared_bytes)
        self.grid = cuda_driver.launch_grid(self.kernel, launch, multiprocessors)

    def run(self) -> None:
        launch = self.launch
        try:
            self.kernel.launch(self.grid, launch.block, launch.dynamic_shared_bytes, launch.cluster, self.parameters)
        except self.driver.DriverError as exc:
            if exc.code in self.driver.LAUNCH_REFUSALS:
                raise LaunchRejected(f"the driver refused the launch: {exc}") from exc
            raise Fatal(str(exc)) from exc

    def close(self) -> None:
        self.kernel.close()


@dataclass(frozen=True)
class Loaded:
    """A kernel ready to launch on its workspace; ``close`` releases what loading it took."""

    run: Callable[[], None]
    ws: Workspace
    resources: Resources
    close: Callable[[], None] = lambda: None


class GpuMeasurer:
    def __init__(self, served: Served, measure: MeasureSettings, compile_settings: CompileSettings,
                 family_dirs: tuple[Path, ...]):
        import pycuda.driver as cuda

        from tuner.backends.pycuda.device import describe, nvml_handle, require_gpu
        from tuner.backends.pycuda.timing import SmClock, Timer
        from tuner.energy.gpu import GpuEnergy

        use_family_dirs(family_dirs)
        require_gpu()
        self.cuda = cuda
        self.served = served
        self.measure = measure
        self.compile = compile_settings
        self.device = describe()
        handle = nvml_handle(self.device["pci_bus_id"])
        self.timer = Timer(self.device["l2_bytes"] or 0, SmClock(handle) if handle else None, self.device["arch"])
        self.energy = GpuEnergy(handle) if measure.energy else None
        self.load = LoadMeter(gpu=NvmlProcesses(handle) if handle else None, counters=None)
        """Other processes' work on this GPU during each measurement (through NVML, where it is installed)."""
        energy = self.energy
        self.bench = Bench(served, measure, self.timer, self.load,
                           energy=(lambda run, timing: energy.measure(run, timing.median_ms * 1e-3))
                           if energy is not None else None,
                           settle=cuda.Context.synchronize, rejected=(LaunchRejected,),
                           run_words=("launch", "launches"))
        self.workspaces: OrderedDict[WorkspaceKey, Workspace] = OrderedDict()
        """The workspaces on the device, least recently used first."""
        self.upcoming: dict[WorkspaceKey, Future[HostData]] = {}
        """Host data of workspaces asked for ahead (``prepare``), being made or made."""
        self._maker: ThreadPoolExecutor | None = None
        self.hosts_kept: OrderedDict[WorkspaceKey, HostData] = OrderedDict()
        """The host data of freed workspaces, least recently used first, for a workspace made again."""
        self.counting: RangeProfiler | None = None
        """CUPTI's range profiler while configurations are counted (``count``), off before anything is timed."""
        self.counting_metrics: tuple[str, ...] = ()
        self.counted: list[Loaded] = []

    # --- requests --------------------------------------------------------------------------------------------

    def evaluate(self, config: Config, cubin: bytes, compiled: Resources, launch: Launch) -> Measurement:
        self._stop_counting()
        loaded = self._load(config, cubin, compiled, launch)
        if isinstance(loaded, Measurement):
            return loaded
        try:
            return self._verify_and_time(loaded.run, loaded.ws, loaded.resources)
        finally:
            loaded.close()

    def count(self, request: CountRequest) -> tuple[KernelCount, ...]:
        """The hardware counters of one launch of each kernel, read by CUPTI's range profiler in this process, in
        one session (:mod:`tuner.backends.pycuda.in_process_counters`): before each launch its outputs poisoned and
        the L2 flushed, after it the output verified."""
        from tuner.backends.pycuda.range_profiler import ProfilerUnavailable

        try:
            profiler = self._profiler(request.metrics)  # before loading: a new profiler closes what was loaded
        except ProfilerUnavailable as exc:
            self._stop_counting()
            return (KernelCount("unavailable", str(exc)),) * len(request.kernels)
        answers: list[KernelCount | None] = [None] * len(request.kernels)
        loaded: list[tuple[int, Loaded]] = []
        for index, kernel in enumerate(request.kernels):
            made = self._load(kernel.config, kernel.cubin, Resources(), kernel.launch)
            if isinstance(made, Measurement):
                answers[index] = KernelCount("refused", made.reason or made.status.value)
            else:
                loaded.append((index, made))
        if not loaded:
            return tuple(answer for answer in answers if answer is not None)
        self.counted += [made for _, made in loaded]  # their modules stay loaded while the profiler is on
        verdicts: dict[int, Verdict] = {}
        try:
            values, passes = profiler.count([made.run for _, made in loaded], lambda i: self._before(loaded[i][1]),
                                            lambda i: verdicts.__setitem__(i, loaded[i][1].ws.check()),
                                            self.cuda.Context.synchronize)
        except ProfilerUnavailable as exc:
            self._stop_counting()
            status = "alone" if len(loaded) > 1 else "unavailable"
            return tuple(answer or KernelCount(status, str(exc)) for answer in answers)
        except LaunchRejected as exc:
            self._stop_counting()
            return tuple(answer or KernelCount("alone" if len(loaded) > 1 else "refused", str(exc))
                         for answer in answers)
        except self.cuda.Error as exc:
            raise Fatal(f"{type(exc).__name__}: {exc}") from exc
        for position, (index, _) in enumerate(loaded):
            verdict = verdicts[position]
            answers[index] = KernelCount("ok" if verdict.ok else "wrong", verdict.reason or "", values[position],
                                         dict(profiler.units), passes, tuple(profiler.missing), profiler.version)
        return tuple(answer for answer in answers if answer is not None)

    def _before(self, loaded: Loaded) -> None:
        loaded.ws.prepare_outputs()
        self.timer.flush_l2()

    def _profiler(self, metrics: tuple[str, ...]) -> RangeProfiler:
        from tuner.backends.pycuda.range_profiler import RangeProfiler

        if self.counting is None or self.counting_metrics != metrics:
            self._stop_counting()
            self.counting = RangeProfiler(self.cuda.Context.get_current().handle, metrics)
            self.counting_metrics = metrics
        return self.counting

    def _stop_counting(self) -> None:
        """Profiling off before anything is timed again."""
        counting, self.counting = self.counting, None
        if counting is not None:
            with contextlib.suppress(Exception):
                counting.close()
        for loaded in self.counted:
            loaded.close()
        self.counted = []

    def _load(self, config: Config, cubin: bytes, compiled: Resources, launch: Launch) -> Loaded | Measurement:
        """The configuration's kernel loaded and ready to launch on its workspace, or the measurement that says
        why it cannot run here."""
        family = get_family(config.family)
        if launch.arch is not None and not runs_on(launch.arch, self.device["arch"]):
            return Measurement(Status.INVALID, f"the kernel is compiled for {launch.arch}, which runs only on GPUs "
                                               f"of that architecture; this one is {self.device['arch']}")
        ws = self._workspace(family.kernel, config.problem, config.dtype)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                func = self.cuda.module_from_buffer(cubin).get_function(launch.kernel_name)
        except self.cuda.Error as exc:
            return Measurement(Status.COMPILE_ERROR, f"the compiled module does not load on this GPU "
                                                     f"({self.device['arch']}): {exc}")
        attribute = self.cuda.function_attribute
        static_shared = func.get_attribute(attribute.SHARED_SIZE_BYTES)
        resources = replace(compiled, registers=func.get_attribute(attribute.NUM_REGS),
                            shared_bytes=static_shared + launch.dynamic_shared_bytes,
                            local_bytes=func.get_attribute(attribute.LOCAL_SIZE_BYTES))
        grid = launch.grid_on(self.device["multiprocessors"])
        refusal = self._launch_limits(func, launch, grid, resources)
        if refusal:
            return Measurement(Status.INVALID, refusal, resources=resources)
        if launch.extended:
            return self._load_extended(cubin, launch, ws, resources)
        func.prepare(ws.signature)
        args = ws.arguments()

        def run() -> None:
            try:
                func.prepared_call(grid, launch.block, *args, shared_size=launch.dynamic_shared_bytes)
            except self.cuda.Error as exc:
                if any(marker in str(exc) for marker in LAUNCH_RESOURCE_MARKERS):
                    raise LaunchRejected(f"the driver refused the launch: {exc}") from exc
                raise

        return Loaded(run, ws, resources)

    def _load_extended(self, cubin: bytes, launch: Launch, ws: Workspace, resources: Resources) -> Loaded | Measurement:
        """A launch with clusters or tensor maps (:mod:`tuner.backends.cuda_driver`): the maps encoded on this
        workspace's buffers, the kernel loaded through the driver and launched with cuLaunchKernelEx."""
        from tuner.backends import cuda_driver
        from tuner.kernels.tensor_maps import TensorMapRefused

        try:
            launcher = ExtendedLaunch(cubin, launch, ws, self.device["multiprocessors"])
        except TensorMapRefused as exc:
            return Measurement(Status.INVALID, str(exc), resources=resources)
        except cuda_driver.DriverError as exc:
            return Measurement(Status.INVALID, f"the driver refused a tensor map: {exc}", resources=resources)
        return Loaded(launcher.run, ws, resources, launcher.close)

    def baseline(self, problem: Problem, dtype: str) -> Measurement:
        from tuner.backends.pycuda.cublas import BaselineUnavailable
        from tuner.backends.pycuda.vendor_gemm import baseline_kernel, baseline_launcher

        self._stop_counting()
        ws = self._workspace(baseline_kernel(dtype), problem, dtype)
        try:
            run, library = baseline_launcher(ws.device, problem, dtype)
        except BaselineUnavailable as exc:
            return Measurement(Status.INVALID, str(exc))
        result = self._verify_and_time(run, ws, Resources())
        return result if result.status is not Status.OK else replace(result, reason=library)

    def rival(self, problem: Problem, dtype: str, name: str, count: int) -> Measurement:
        """A rival GEMM of tuner.backends.pycuda.rivals (cuBLASLt's autotuning, Triton's), on this problem's
        workspace, verified and timed like the kernels."""
        from tuner.backends.pycuda.rivals import RIVALS

        self._stop_counting()
        ws = self._workspace(MATMUL, problem, dtype)
        pointers = int(ws.device["A"]), int(ws.device["B"]), int(ws.device["C"])
        return RIVALS[name](pointers, problem, dtype, count, lambda run: self._verify_and_time(run, ws, Resources()))

    def prepare(self, problem: Problem, dtype: str) -> None:
        """Start making a problem's inputs and reference, in a thread of their own (numpy and BLAS leave the
        measuring thread the interpreter while they compute), and load the baseline's library: the next
        requests about the problem find them made."""
        from tuner.backends.pycuda.cublas import BaselineUnavailable
        from tuner.backends.pycuda.vendor_gemm import baseline_kernel, load_baseline_library

        kernel = baseline_kernel(dtype)
        key = (kernel, problem, dtype)
        if key not in self.workspaces and key not in self.upcoming:
            if self._maker is None:
                self._maker = ThreadPoolExecutor(1, thread_name_prefix="tuner-inputs")
            self.upcoming[key] = self._maker.submit(host_data, kernel, problem, dtype, self.measure.input_seed)
        with contextlib.suppress(BaselineUnavailable):
            load_baseline_library(dtype)

    def device_summary(self, request: tuple[bool, bool]) -> dict[str, Any]:
        """The GPU's summary; ``request``: (measure the ceilings again, say what is measured)."""
        from tuner.backends.pycuda.summary import summary

        remeasure, progress = request
        self._stop_counting()
        self._free_workspaces(0)  # the copy ceiling wants the memory
        found = summary(remeasure=remeasure, timer=self.timer, load=self.load, progress=progress)
        return found if self.energy is None else {**found, "energy": self.energy.describe()}

    # --- the steps -------------------------------------------------------------------------------------------

    def _workspace(self, kernel: Kernel, problem: Problem, dtype: str) -> Workspace:
        key = (kernel, problem, dtype)
        ws = self.workspaces.get(key)
        if ws is not None:
            self.workspaces.move_to_end(key)
            return ws
        made = self.upcoming.pop(key, None)
        kept = self.hosts_kept.pop(key) if key in self.hosts_kept else None
        host = made.result() if made is not None else kept or host_data(kernel, problem, dtype, self.measure.input_seed)
        self._free_workspaces(KEPT_WORKSPACES - 1)
        if self.workspaces and self.cuda.mem_get_info()[0] < device_bytes(kernel, problem, dtype) + \
                SPARE_DEVICE_BYTES:
            self._free_workspaces(0)
        self.workspaces[key] = ws = Workspace(kernel, problem, dtype, host)
        return ws

    def _free_workspaces(self, keep: int) -> None:
        """Free the least recently used workspaces until ``keep`` are left."""
        while len(self.workspaces) > keep:
            key, ws = self.workspaces.popitem(last=False)
            ws.free()
            self.hosts_kept[key] = HostData(ws.inputs, ws.expected, ws.tolerance)
        while sum(a.nbytes for host in self.hosts_kept.values() for a in host.inputs.values()) > HOSTS_KEPT_BYTES:
            self.hosts_kept.popitem(last=False)

    def _launch_limits(self, func: Any, launch: Launch, grid: Dim3, resources: Resources) -> str | None:
        """Why this launch (on ``grid``) cannot run on this device with this compiled kernel, or None when it can."""
        d = self.device
        threads = launch.block[0] * launch.block[1] * launch.block[2]
        if threads > d["max_threads_per_block"]:
            return f"a block of {threads} threads exceeds the device's {d['max_threads_per_block']}"
        most = func.get_attribute(self.cuda.function_attribute.MAX_THREADS_PER_BLOCK)
        if threads > most:
            return (f"too many resources requested for launch: the kernel uses {resources.registers} registers "
                    f"per thread, so at most {most} threads per block can launch; the block has {threads}")
        for axis, size, limit in zip("xyz", grid, d["max_grid"], strict=True):
            if limit and size > limit:
                return f"grid {axis} = {size} exceeds the device's limit of {limit} blocks"
        if launch.resident_blocks_per_sm:
            fit = blocks_per_sm(threads, resources.registers or 0, resources.shared_bytes or 0, d)
            if fit is not None and fit < launch.resident_blocks_per_sm:
                return (f"the persistent schedule needs {launch.resident_blocks_per_sm} blocks resident on each SM, "
                        f"but with {resources.registers} registers per thread and {resources.shared_bytes} bytes of "
                        f"shared memory per block only {fit} fit")
        dynamic = launch.dynamic_shared_bytes
        optin = d["shared_per_block_optin_bytes"] or STATIC_SHARED_LIMIT
        if (resources.shared_bytes or 0) > optin:
            return f"{resources.shared_bytes} bytes of shared memory per block exceed the device's {optin}"
        if dynamic > STATIC_SHARED_LIMIT:
            try:
                func.set_attribute(self.cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic)
            except self.cuda.Error as exc:
                return f"the driver refused {dynamic} bytes of dynamic shared memory: {exc}"
        return None

    def _verify_and_time(self, run: Callable[[], None], ws: Workspace, resources: Resources) -> Measurement:
        """The measurement of ``run`` (tuner.backends.verify_and_time); a CUDA error leaves the context unusable."""
        try:
            return verify_and_time(run, ws, self.bench, resources)
        except self.cuda.Error as exc:
            raise Fatal(f"{type(exc).__name__}: {exc}") from exc


def serve(conn: Connection, measure: MeasureSettings, compile_settings: CompileSettings,
          family_dirs: tuple[Path, ...], gpu: str | None = None) -> None:
    """The measuring process's entry point; ``gpu``: the CUDA_VISIBLE_DEVICES value of its one GPU (None: as
    inherited), set before CUDA is first loaded."""
    if gpu is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpu

    def make(served: Served) -> tuple[str, Handlers]:
        measurer = GpuMeasurer(served, measure, compile_settings, family_dirs)
        return measurer.device["name"], {
            "evaluate": lambda payload: measurer.evaluate(*payload),
            "baseline": lambda payload: measurer.baseline(*payload),
            "rival": lambda payload: measurer.rival(*payload),
            "prepare": lambda payload: measurer.prepare(*payload),
            "device": measurer.device_summary,
            "count": measurer.count,
            "count_end": lambda _: measurer._stop_counting(),
        }

    run_measurer(conn, make)
