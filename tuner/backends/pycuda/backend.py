"""The PyCUDA backend: compiles ahead with nvcc, measures in a GPU worker process it can replace.

Each configuration is rendered and compiled once to a cubin (:mod:`tuner.compile.nvcc`, with ptxas's resource
report: registers, shared and local memory, spills), while the GPU measures the one before; the worker loads
the cubin and verifies and times it. The parent holds no CUDA context. A fault in a kernel (illegal address,
launch failure) ends only the worker; a kernel still running ``MeasureSettings.timeout_s`` after its first
launch is a hang and its worker is killed. Either way the configuration is recorded as crashed and the next
request starts a fresh worker, which re-creates its buffers.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace
from typing import Any

from tuner.backends.protocol import BackendBase
from tuner.backends.worker_process import WorkerCrashed, WorkerProcess
from tuner.compile.nvcc import compile_source, find_nvcc
from tuner.compile.pool import CompilePool
from tuner.compile.result import CompileResult
from tuner.config import Config, Problem
from tuner.errors import TunerError
from tuner.kernels.discovery import family_dirs
from tuner.kernels.render import Launch, render
from tuner.kernels.render import launch as launch_geometry
from tuner.measurement import Measurement, Status
from tuner.metadata import environment
from tuner.settings import CompileSettings, MeasureSettings

START_TIMEOUT_S = 180.0
"""Starting a worker: Python, PyCUDA, the context, the timing helpers."""
SETUP_TIMEOUT_S = 300.0
"""Before the first launch of a request: inputs, reference, buffers, module load."""
DEVICE_TIMEOUT_S = 600.0
"""Describing the device, measuring its ceilings when they are not cached."""
INSTALL_HINT = 'pip install -e ".[cuda]"'


class PycudaBackend(BackendBase):
    """Measures configurations on the local GPU through PyCUDA (see the module text)."""

    name = "pycuda"

    def __init__(self, measure_settings: MeasureSettings | None = None,
                 compile_settings: CompileSettings | None = None, gpu: str | None = None,
                 compiler: CompilePool | None = None):
        """``gpu``: the CUDA_VISIBLE_DEVICES value of the one GPU the worker measures on (None: the default GPU);
        ``compiler``: a compile pool shared with the backends of other GPUs (closed by its owner), else its own."""
        if importlib.util.find_spec("pycuda") is None:
            raise TunerError(f"the pycuda backend needs PyCUDA, which is not installed here; install it with "
                             f"{INSTALL_HINT} (from the checkout) on a machine with an NVIDIA GPU and nvcc, or use "
                             f"--backend replay to work from a recorded run")
        find_nvcc()
        self.measure = measure_settings or MeasureSettings()
        self.compile = compile_settings or CompileSettings()
        self.busy_seconds = 0.0
        self.gpu = gpu
        self._owns_compiler = compiler is None
        self.compiler = compiler or CompilePool(self._compile, self.compile.workers)
        self._worker: WorkerProcess | None = None
        self._device: dict[str, Any] | None = None
        self._environment: dict[str, Any] | None = None
        self._live_worker()  # fail now, in one paragraph, when there is no usable GPU

    def _compile(self, source: str) -> CompileResult:
        return compile_source(source, self.compile.arch, self.compile.options)

    # --- the Backend protocol ----------------------------------------------------------------------------

    def prefetch(self, configs: list[Config]) -> None:
        for config in configs:
            self.compiler.submit(render(config))

    def evaluate(self, config: Config, source: str | None = None, launch: Launch | None = None) -> Measurement:
        """Compile (or take from the cache), verify and time one configuration.

        ``source`` replaces the family's rendered source by a raw kernel of the same signature, and ``launch``
        its launch geometry: for tests of the failure paths, never registered as a family.
        """
        compiled = self.compiler.result(render(config) if source is None else source)
        if not compiled.ok or compiled.binary is None:
            status = Status.INVALID if compiled.resource_limit else Status.COMPILE_ERROR
            return Measurement(status, compiled.log, compile_time_s=compiled.compile_time_s,
                               resources=compiled.resources)
        payload = (config, compiled.binary, compiled.resources, launch or launch_geometry(config))
        result = self._request("evaluate", payload, crashed=Measurement(Status.CRASHED, resources=compiled.resources))
        return replace(result, compile_time_s=compiled.compile_time_s)

    def baseline(self, problem: Problem, dtype: str) -> Measurement | None:
        """cuBLAS GEMM for this problem and dtype, verified and timed by the same method as the kernels."""
        return self._request("baseline", (problem, dtype), crashed=Measurement(Status.CRASHED))

    def device(self, remeasure: bool = False) -> dict[str, Any]:
        """The GPU's summary (``tuner.device.summary``): description, versions, peaks, ceilings."""
        if self._device is None or remeasure:
            try:
                worker = self._live_worker()
                self._device, _ = worker.request("device", remeasure, DEVICE_TIMEOUT_S, DEVICE_TIMEOUT_S)
            except WorkerCrashed as exc:
                self._worker = None
                raise TunerError(f"describing the GPU failed: {exc}") from None
        return self._device

    def metadata(self) -> dict[str, Any]:
        if self._environment is None:
            self._environment = environment(self.name, self.device(), self.measure, self.compile)
        return self._environment

    def close(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None
        if self._owns_compiler:
            self.compiler.close()

    def __enter__(self) -> PycudaBackend:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- the worker ----------------------------------------------------------------------------------------

    def _live_worker(self) -> WorkerProcess:
        from tuner.backends.pycuda.worker import serve

        if self._worker is None or not self._worker.alive():
            if self._worker is not None:
                self._worker.kill()
            try:
                self._worker = WorkerProcess(serve, (self.measure, self.compile, family_dirs(), self.gpu),
                                             "tuner-gpu-worker", START_TIMEOUT_S)
            except WorkerCrashed as exc:
                raise TunerError(f"the GPU worker could not start: {exc}") from None
        return self._worker

    def _request(self, kind: str, payload: Any, crashed: Measurement) -> Measurement:
        worker = self._live_worker()
        try:
            value, busy = worker.request(kind, payload, self.measure.timeout_s, max(SETUP_TIMEOUT_S,
                                                                                    self.measure.timeout_s))
        except WorkerCrashed as exc:
            worker.kill()
            self._worker = None
            self.busy_seconds += exc.busy_seconds
            print(f"warning: {kind} crashed the GPU worker; starting a fresh one ({str(exc).splitlines()[0]})",
                  file=sys.stderr)
            return replace(crashed, reason=str(exc))
        self.busy_seconds += busy
        return value
