"""The CPU measurer: a process that loads compiled kernels (ctypes), verifies and times one request at a time.

Requests (:mod:`tuner.backends.measuring_process`): ``("evaluate", (config, library, resources))`` — the shared
library the one compiler made, loaded from its file in the cache —, ``("baseline", (problem, dtype))``,
``("device", (remeasure, progress))``, ``("stop", None)``. The parent starts it with ``OMP_NUM_THREADS`` and
``OPENBLAS_NUM_THREADS`` (and MKL's) set to the backend's thread count, so that the OpenMP runtime and numpy's
BLAS size their thread pools once, before either is loaded, and both the kernels and the baseline run on that
many threads for the measuring process's whole life.

The kernel's arguments come from its family's declaration, as on the GPU: buffers are host arrays (passed as
pointers), inputs filled with the same random values the reference was computed from, outputs poisoned before the
verified call and before each timed sample (:mod:`tuner.backends.verify_and_time`, as on the GPU). They live here
only: a kernel that writes out of bounds can corrupt or kill this process, never the parent.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping
from dataclasses import replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np

from tuner.backends.cpu.info import blas_description
from tuner.backends.cpu.timing import CpuTimer
from tuner.backends.measuring_process import Handlers, Served, run_measurer
from tuner.backends.verify_and_time import Bench, verify_and_time
from tuner.config import Config, Problem
from tuner.energy.cpu import CpuEnergy
from tuner.kernels.arguments import Buffer
from tuner.kernels.discovery import get_family, use_family_dirs
from tuner.kernels.family import MATMUL, Kernel
from tuner.kernels.verify import Expected, Verdict, check_all, poison_word, poisoned, random_inputs
from tuner.measure.machine_load import LoadMeter
from tuner.measure.measurement import Measurement, Resources, Status
from tuner.settings import MeasureSettings

SCALAR_CTYPES: Mapping[str, type] = {"int32": ctypes.c_int32, "int64": ctypes.c_int64, "float32": ctypes.c_float,
                                     "float64": ctypes.c_double}


class Workspace:
    """One kernel's host buffers for one problem and dtype, with the inputs and the reference."""

    def __init__(self, kernel: Kernel, problem: Problem, dtype: str, seed: int):
        self.kernel, self.problem, self.dtype = kernel, problem, dtype
        buffers = [a for a in kernel.arguments if isinstance(a, Buffer)]
        self.inputs = random_inputs(buffers, problem, dtype, seed)
        self.expected: dict[str, Expected] = kernel.reference(self.inputs, problem, seed)
        self.tolerance = kernel.tolerance(dtype, problem)
        self.outputs = [b for b in buffers if b.is_output]
        self.arrays = {b.name: self.inputs[b.name].copy() if b.is_input else
                       poisoned(b.shape(problem), b.dtype_of(dtype)) for b in buffers}

    def signature(self) -> list[type]:
        return [ctypes.c_void_p if isinstance(a, Buffer) else SCALAR_CTYPES[a.type_of(self.dtype)]
                for a in self.kernel.arguments]

    def arguments(self) -> tuple[Any, ...]:
        return tuple(self.arrays[a.name].ctypes.data if isinstance(a, Buffer) else a.value(self.problem)
                     for a in self.kernel.arguments)

    def prepare_outputs(self) -> None:
        """Poison every output; refill the ones that are inputs too."""
        for buffer in self.outputs:
            if buffer.is_input:
                np.copyto(self.arrays[buffer.name], self.inputs[buffer.name])
            else:
                self.arrays[buffer.name].view(np.uint32).fill(poison_word(buffer.dtype_of(self.dtype)))

    def check(self) -> Verdict:
        values = {b.name: self.arrays[b.name] for b in self.outputs}
        kinds = {b.name: b.dtype_of(self.dtype) for b in self.outputs}
        return check_all(values, self.expected, kinds, self.tolerance)


class CpuMeasurer:
    def __init__(self, served: Served, measure: MeasureSettings, threads: int, family_dirs: tuple[Path, ...]):
        use_family_dirs(family_dirs)
        self.served = served
        self.measure = measure
        self.threads = threads
        self.timer = CpuTimer()
        self.energy = CpuEnergy() if measure.energy else None
        self.load = LoadMeter(threads, root_pid=os.getppid())
        """Other processes' CPU time during each measurement (the run's own processes are the parent's tree)."""
        energy = self.energy
        self.bench = Bench(served, measure, self.timer, self.load,
                           energy=(lambda run, timing: energy.measure(run)) if energy is not None else None)
        self.workspace: Workspace | None = None

    # --- requests --------------------------------------------------------------------------------------------

    def evaluate(self, config: Config, library: str, resources: Resources) -> Measurement:
        family = get_family(config.family)
        ws = self._workspace(family.kernel, config.problem, config.dtype)
        try:
            kernel = getattr(ctypes.CDLL(library), family.kernel_name)
        except (OSError, AttributeError) as exc:
            return Measurement(Status.COMPILE_ERROR, f"the compiled library does not load or has no function "
                                                     f"{family.kernel_name}: {exc}", resources=resources)
        kernel.argtypes = ws.signature()
        kernel.restype = None
        arguments = ws.arguments()
        return verify_and_time(lambda: kernel(*arguments), ws, self.bench, resources)

    def baseline(self, problem: Problem, dtype: str) -> Measurement:
        if dtype not in ("float32", "float64"):
            return Measurement(Status.INVALID, f"numpy's BLAS has no {dtype} GEMM")
        ws = self._workspace(MATMUL, problem, dtype)
        A, B, C = ws.arrays["A"], ws.arrays["B"], ws.arrays["C"]

        def run() -> None:
            np.matmul(A, B, out=C)

        result = verify_and_time(run, ws, self.bench, Resources())
        return result if result.status is not Status.OK else replace(result, reason=blas_description(self.threads))

    def device_summary(self, request: tuple[bool, bool]) -> dict[str, Any]:
        """The CPU's summary; ``request``: (measure the ceilings again, say what is measured)."""
        from tuner.backends.cpu.summary import summary

        remeasure, progress = request
        self.workspace = None  # the STREAM arrays want the memory
        found = summary(remeasure=remeasure, timer=self.timer, load=self.load, progress=progress)
        return found if self.energy is None else {**found, "energy": self.energy.describe()}

    # --- the steps -------------------------------------------------------------------------------------------

    def _workspace(self, kernel: Kernel, problem: Problem, dtype: str) -> Workspace:
        ws = self.workspace
        if ws is None or (ws.kernel, ws.problem, ws.dtype) != (kernel, problem, dtype):
            self.workspace = None
            self.workspace = ws = Workspace(kernel, problem, dtype, self.measure.input_seed)
        return ws


def serve(conn: Connection, measure: MeasureSettings, threads: int, family_dirs: tuple[Path, ...]) -> None:
    """The measuring process's entry point."""

    def make(served: Served) -> tuple[str, Handlers]:
        measurer = CpuMeasurer(served, measure, threads, family_dirs)
        return f"CPU worker, {threads} thread{'s' * (threads != 1)}", {
            "evaluate": lambda payload: measurer.evaluate(*payload),
            "baseline": lambda payload: measurer.baseline(*payload),
            "device": measurer.device_summary,
        }

    run_measurer(conn, make)
