"""The GPU worker: a subprocess that owns the CUDA context, verifies and times one request at a time.

It talks with ``tuner.backends.pycuda_backend`` over a pipe. Requests: ``("evaluate", (config, source,
launch, cache_dir))``, ``("baseline", (problem, dtype))``, ``("device", remeasure)``, ``("stop", None)``.
Replies: ``("started", None)`` right before the first launch of an evaluation (the parent's hang timeout
runs from there), then ``("result", (value, busy_seconds))``; or ``("fatal", (text, busy_seconds))`` after a
fault that leaves the context unusable (illegal address, launch failure), after which the worker exits
and the parent starts a fresh one.
"""

from __future__ import annotations

import os
import time
import traceback
import warnings
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from tuner.config import Config, Problem
from tuner.experiment import CompileSettings, MeasureSettings
from tuner.family import Dim3
from tuner.measurement import Measurement, Resources, Status
from tuner.occupancy import blocks_per_sm
from tuner.templates import Launch
from tuner.verify import NUMPY_DTYPES, Verdict, make_inputs, poison_word, reference
from tuner.verify import check as check_output

STATIC_SHARED_LIMIT = 48 * 1024
LAUNCH_RESOURCE_MARKERS = ("too many resources requested", "invalid argument", "out of resources")
"""Errors cuLaunchKernel returns, before anything runs, for a launch the hardware cannot take."""


class LaunchRejected(Exception):
    """The driver refused the launch for its resources (a configuration limit, not a fault)."""


class Fatal(Exception):
    """A fault after which the CUDA context cannot be trusted."""


class Workspace:
    """Inputs, output and reference of one problem and dtype, on the device and the host."""

    def __init__(self, problem: Problem, dtype: str, seed: int):
        import pycuda.driver as cuda

        self.problem, self.dtype = problem, dtype
        A, B = make_inputs(problem, dtype, seed)
        self.reference = reference(A, B, seed)
        self.a, self.b = cuda.to_device(A), cuda.to_device(B)
        self.c_bytes = problem.M * problem.N * np.dtype(NUMPY_DTYPES[dtype]).itemsize
        self.c = cuda.mem_alloc(self.c_bytes)

    def poison(self) -> None:
        import pycuda.driver as cuda

        cuda.memset_d32(self.c, poison_word(self.dtype), self.c_bytes // 4)

    def output(self) -> np.ndarray:
        import pycuda.driver as cuda

        out = np.empty((self.problem.M, self.problem.N), NUMPY_DTYPES[self.dtype])
        cuda.memcpy_dtoh(out, self.c)
        return out

    def free(self) -> None:
        for buffer in (self.a, self.b, self.c):
            buffer.free()


class GpuWorker:
    def __init__(self, conn: Connection, measure: MeasureSettings, compile_settings: CompileSettings):
        import pycuda.driver as cuda

        from tuner.device import describe, nvml_handle, require_gpu
        from tuner.measure import SmClock, Timer

        require_gpu()
        self.cuda = cuda
        self.conn = conn
        self.measure = measure
        self.compile = compile_settings
        self.device = describe()
        handle = nvml_handle(self.device["pci_bus_id"])
        self.timer = Timer(self.device["l2_bytes"] or 0, SmClock(handle) if handle else None, self.device["arch"])
        self.workspace: Workspace | None = None
        self.busy = 0.0

    # --- requests --------------------------------------------------------------------------------------------

    def evaluate(self, config: Config, source: str, launch: Launch, cache_dir: str) -> Measurement:
        from pycuda.compiler import SourceModule

        ws = self._workspace(config.problem, config.dtype)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module = SourceModule(source, no_extern_c=True, arch=self.compile.arch,
                                      options=list(self.compile.options), cache_dir=cache_dir)
            func = module.get_function(launch.kernel_name)
        except self.cuda.CompileError as exc:
            from tuner.backends.compile_ahead import compile_message

            return Measurement(Status.COMPILE_ERROR, compile_message(exc))
        except self.cuda.Error as exc:
            return Measurement(Status.COMPILE_ERROR, f"the compiled module does not load on this GPU "
                                                     f"({self.device['arch']}): {exc}")
        attribute = self.cuda.function_attribute
        static_shared = func.get_attribute(attribute.SHARED_SIZE_BYTES)
        resources = Resources(registers=func.get_attribute(attribute.NUM_REGS),
                              shared_bytes=static_shared + launch.dynamic_shared_bytes,
                              local_bytes=func.get_attribute(attribute.LOCAL_SIZE_BYTES))
        grid = launch.grid_on(self.device["multiprocessors"])
        refusal = self._launch_limits(func, launch, grid, resources)
        if refusal:
            return Measurement(Status.INVALID, refusal, resources=resources)
        func.prepare("PPPiii")
        p = config.problem
        args = (int(ws.a), int(ws.b), int(ws.c), np.int32(p.M), np.int32(p.N), np.int32(p.K))

        def run() -> None:
            try:
                func.prepared_call(grid, launch.block, *args, shared_size=launch.dynamic_shared_bytes)
            except self.cuda.Error as exc:
                if any(marker in str(exc) for marker in LAUNCH_RESOURCE_MARKERS):
                    raise LaunchRejected(f"the driver refused the launch: {exc}") from exc
                raise

        return self._verify_and_time(run, ws, resources)

    def baseline(self, problem: Problem, dtype: str) -> Measurement:
        from tuner.backends.cublas_baseline import BaselineUnavailable, gemm_launcher

        ws = self._workspace(problem, dtype)
        try:
            run, library = gemm_launcher(int(ws.a), int(ws.b), int(ws.c), problem.M, problem.N, problem.K, dtype)
        except BaselineUnavailable as exc:
            return Measurement(Status.INVALID, str(exc))
        result = self._verify_and_time(run, ws, Resources())
        return result if result.status is not Status.OK else Measurement(
            Status.OK, library, result.timing, result.error, None, result.resources)

    def device_summary(self, remeasure: bool) -> dict[str, Any]:
        from tuner.device import summary

        self._free_workspace()  # the copy ceiling wants the memory
        return summary(remeasure=remeasure, timer=self.timer)

    # --- the steps -------------------------------------------------------------------------------------------

    def _workspace(self, problem: Problem, dtype: str) -> Workspace:
        ws = self.workspace
        if ws is None or (ws.problem, ws.dtype) != (problem, dtype):
            self._free_workspace()
            self.workspace = ws = Workspace(problem, dtype, self.measure.input_seed)
        return ws

    def _free_workspace(self) -> None:
        if self.workspace is not None:
            self.workspace.free()
            self.workspace = None

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
        self.conn.send(("started", None))
        started = time.perf_counter()
        error = None
        try:
            if self.measure.verify:
                verdict = self._check(run, ws)
                if not verdict.ok:
                    return Measurement(Status.WRONG, verdict.reason, error=verdict.error, resources=resources)
                error = verdict.error
            timing = self.timer.time(run, self.measure)
            if self.measure.verify:
                # A kernel that leaves state behind (flags, counters) can go wrong only on later launches.
                verdict = self._check(run, ws)
                if not verdict.ok:
                    return Measurement(Status.WRONG, f"right on its first launch, wrong after {timing.count} timed "
                                                     f"launches: {verdict.reason}", error=verdict.error,
                                       resources=resources)
                error = max(error or 0.0, verdict.error or 0.0)   # an ok verdict carries its error
        except LaunchRejected as exc:
            return Measurement(Status.INVALID, str(exc), resources=resources)
        except self.cuda.Error as exc:
            raise Fatal(f"{type(exc).__name__}: {exc}") from exc
        finally:
            self.busy += time.perf_counter() - started
        return Measurement(Status.OK, timing=timing, error=error, resources=resources)

    def _check(self, run: Callable[[], None], ws: Workspace) -> Verdict:
        """One launch into a poisoned output, compared with the float64 reference."""
        ws.poison()
        run()
        self.cuda.Context.synchronize()
        return check_output(ws.output(), ws.reference, ws.dtype, ws.problem.K)

    # --- the loop --------------------------------------------------------------------------------------------

    def serve(self) -> None:
        handlers: dict[str, Callable[[Any], Any]] = {
            "evaluate": lambda payload: self.evaluate(*payload),
            "baseline": lambda payload: self.baseline(*payload),
            "device": self.device_summary,
        }
        while True:
            try:
                kind, payload = self.conn.recv()
            except (EOFError, OSError):
                return
            if kind == "stop":
                return
            self.busy = 0.0
            try:
                value = handlers[kind](payload)
            except Fatal as exc:
                self._die(str(exc))
            except Exception as exc:  # anything else may have left the context broken too
                self._die(f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}")
            self.conn.send(("result", (value, self.busy)))

    def _die(self, text: str) -> None:
        try:
            self.conn.send(("fatal", (text, self.busy)))
            self.conn.close()
        finally:
            os._exit(3)  # skip atexit: popping a faulted context would only raise again


def serve(conn: Connection, measure: MeasureSettings, compile_settings: CompileSettings) -> None:
    """The worker process's entry point."""
    try:
        worker = GpuWorker(conn, measure, compile_settings)
    except Exception as exc:  # TunerError without a GPU, or a CUDA error creating the context
        conn.send(("error", str(exc)))
        conn.close()
        return
    conn.send(("ready", worker.device["name"]))
    worker.serve()
