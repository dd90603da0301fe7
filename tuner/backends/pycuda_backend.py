"""The PyCUDA backend: compiles ahead in a process pool, measures in a GPU worker process it can replace.

The parent holds no CUDA context. A fault in a kernel (illegal address, launch failure) ends only the
worker; a kernel still running ``MeasureSettings.timeout_s`` after its first launch is a hang and its
worker is killed. Either way the configuration is recorded as crashed and the next request starts a
fresh worker, which re-creates its buffers.
"""

from __future__ import annotations

import contextlib
import importlib.util
import shutil
import sys
import time
from dataclasses import replace
from multiprocessing import get_context
from typing import Any

from tuner.backends.compile_ahead import CompilePool
from tuner.config import Config, Problem
from tuner.errors import TunerError
from tuner.experiment import CompileSettings, MeasureSettings
from tuner.measurement import Measurement, Status
from tuner.metadata import environment
from tuner.templates import Launch, render
from tuner.templates import launch as launch_geometry

START_TIMEOUT_S = 180.0
"""Starting a worker: Python, PyCUDA, the context, the timing helpers."""
SETUP_TIMEOUT_S = 300.0
"""Before the first launch of a request: inputs, reference, buffers, module load."""
DEVICE_TIMEOUT_S = 600.0
"""Describing the device, measuring its ceilings when they are not cached."""


class WorkerCrashed(Exception):
    """The worker died or hung; the message says how, ``busy_seconds`` how long the GPU had been at it."""

    def __init__(self, message: str, busy_seconds: float = 0.0):
        super().__init__(message)
        self.busy_seconds = busy_seconds


class _Worker:
    """One GPU worker process and the pipe to it."""

    def __init__(self, measure: MeasureSettings, compile_settings: CompileSettings):
        from tuner.backends.gpu_worker import serve

        context = get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=serve, args=(child, measure, compile_settings), daemon=True,
                                       name="tuner-gpu-worker")
        self.process.start()
        child.close()
        kind, payload = self._receive(START_TIMEOUT_S, "starting")
        if kind != "ready":
            self.kill()
            raise TunerError(f"the GPU worker could not start: {payload}")
        self.device_name = payload

    def _receive(self, timeout_s: float, doing: str) -> tuple[str, Any]:
        if not self.conn.poll(timeout_s):
            self.kill()
            raise WorkerCrashed(f"timed out after {timeout_s:g} s {doing}; the worker was killed")
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            self.process.join(5)
            raise WorkerCrashed(f"the worker died {doing} (exit code {self.process.exitcode})") from None

    def request(self, kind: str, payload: Any, run_timeout_s: float, setup_timeout_s: float) -> tuple[Any, float]:
        """Send one request; return (value, busy seconds) or raise WorkerCrashed (with busy time attached)."""
        self.conn.send((kind, payload))
        timeout, doing, started = setup_timeout_s, "before the first launch", None
        while True:
            try:
                reply, body = self._receive(timeout, doing)
            except WorkerCrashed as exc:
                raise WorkerCrashed(str(exc), time.perf_counter() - started if started else 0.0) from None
            if reply == "started":
                timeout, doing, started = run_timeout_s, "running the kernel", time.perf_counter()
            elif reply == "result":
                return body
            else:  # "fatal": the worker has reported and exits
                text, busy = body
                self.process.join(10)
                raise WorkerCrashed(text, busy)

    def alive(self) -> bool:
        return self.process.is_alive()

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(10)
        self.conn.close()

    def stop(self) -> None:
        if self.process.is_alive():
            with contextlib.suppress(BrokenPipeError, OSError):
                self.conn.send(("stop", None))
            self.process.join(10)
        self.kill()


class PycudaBackend:
    """Measures configurations on the local GPU through PyCUDA (see the module text)."""

    name = "pycuda"

    def __init__(self, measure_settings: MeasureSettings | None = None,
                 compile_settings: CompileSettings | None = None):
        if importlib.util.find_spec("pycuda") is None:
            raise TunerError("the pycuda backend needs PyCUDA, which is not installed here; install it with "
                             'pip install -e ".[cuda]" in the checkout, on a machine with an NVIDIA GPU and nvcc, '
                             "or use --backend replay to work from a recorded run")
        if shutil.which("nvcc") is None:
            raise TunerError("the pycuda backend compiles with nvcc, which is not on the PATH; add the CUDA "
                             "toolkit's bin folder (e.g. /usr/local/cuda/bin) to PATH")
        from tuner.device import cache_dir

        self.measure = measure_settings or MeasureSettings()
        self.compile = compile_settings or CompileSettings()
        self.busy_seconds = 0.0
        self.compiler = CompilePool(self.compile, cache_dir() / "pycuda")
        self._worker: _Worker | None = None
        self._device: dict[str, Any] | None = None
        self._environment: dict[str, Any] | None = None
        self._live_worker()  # fail now, in one paragraph, when there is no usable GPU

    # --- the Backend protocol ----------------------------------------------------------------------------

    def prefetch(self, configs: list[Config]) -> None:
        for config in configs:
            self.compiler.submit(render(config))

    def evaluate(self, config: Config, source: str | None = None, launch: Launch | None = None) -> Measurement:
        """Compile (or take from the cache), verify and time one configuration.

        ``source`` replaces the family's rendered source by a raw kernel of the same signature, and ``launch``
        its launch geometry: for tests of the failure paths, never registered as a family.
        """
        text = render(config) if source is None else source
        compiled = self.compiler.outcome(text)
        if not compiled.ok:
            status = Status.INVALID if compiled.resource_limit else Status.COMPILE_ERROR
            return Measurement(status, compiled.message, compile_time_s=compiled.seconds)
        geometry = launch or launch_geometry(config)
        payload = (config, text, geometry, str(self.compiler.cache_dir(text)))
        result = self._request("evaluate", payload, crashed=Measurement(Status.CRASHED))
        return replace(result, compile_time_s=compiled.seconds)

    def baseline(self, problem: Problem, dtype: str) -> Measurement:
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
        self.compiler.close()

    def __enter__(self) -> PycudaBackend:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- the worker ----------------------------------------------------------------------------------------

    def _live_worker(self) -> _Worker:
        if self._worker is None or not self._worker.alive():
            if self._worker is not None:
                self._worker.kill()
            try:
                self._worker = _Worker(self.measure, self.compile)
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
