"""The counters of the hierarchical roofline (Yang, Kurth, Williams, 2020, as Nsight Compute's roofline charts):
the bytes requested, looked up in L1, served by L2 and moved by DRAM; the operations of the executed
instructions (an FMA two; a kernel issuing tensor-core instructions is given the problem's 2·M·N·K, and says
so); shared-memory wavefronts and the kernel's duration under the profiler; and what one kernel's values say.
What each counter means: the README, "Hardware counters"."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tuner.counters.ncu_csv import RawMetrics, count, scaled

DRAM_BYTES = "dram__bytes.sum"
DRAM_PARTS = ("dram__bytes_read.sum", "dram__bytes_write.sum")
"""Where a GPU has no ``dram__bytes``, its read and write halves."""
L2_BYTES = "lts__t_bytes.sum"
L1_BYTES = "l1tex__t_bytes.sum"
REQUESTED_BYTES = "sm__sass_data_bytes_mem_global.sum"
SHARED_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
DURATION = "gpu__time_duration.sum"
SM_CLOCK = "sm__cycles_elapsed.avg.per_second"
FLOP_INSTRUCTIONS: dict[str, int] = {
    f"sm__sass_thread_inst_executed_op_{precision}{operation}_pred_on.sum": 2 if operation == "fma" else 1
    for precision in ("d", "f", "h") for operation in ("add", "mul", "fma")
}
"""Thread-level floating-point instructions and the operations each counts as (FMA = 2)."""
TENSOR_INSTRUCTIONS = (
    "sm__inst_executed_pipe_tensor.sum",
    "sm__inst_executed_pipe_tensor_op_hmma.sum",
    "sm__inst_executed_pipe_tensor_op_dmma.sum",
    "sm__inst_executed_pipe_tensor_op_imma.sum",
    "sm__inst_executed_pipe_tensor_op_gmma.sum",
)
"""Warp-level tensor-pipe instructions under the names GPUs give them (each GPU has some of them)."""

WANTED: tuple[str, ...] = (
    DRAM_BYTES, *DRAM_PARTS, L2_BYTES, L1_BYTES, REQUESTED_BYTES, SHARED_WAVEFRONTS, *FLOP_INSTRUCTIONS,
    *TENSOR_INSTRUCTIONS, DURATION, SM_CLOCK,
)
"""Every metric asked of Nsight Compute; those the GPU lacks are left out (and named)."""
INSTRUMENTED: tuple[str, ...] = (REQUESTED_BYTES, *FLOP_INSTRUCTIONS)
"""Metrics read by running the kernel instrumented (its SASS patched to count, thread by thread) rather than from a
hardware counter: their cost grows with the kernel's instructions. On the H100, Nsight Compute took 1.2 s for the
bytes one 4096³ naive kernel's threads request, where every other metric together took 0.25 s; CUPTI's range
profiler needs a second pass for the FLOP instructions, 0.17 s more for a 4096³ tiled kernel, where the hardware
counters (bytes at each level, wavefronts, tensor instructions, duration, clock) fit one pass of 0.05 s."""


def wanted(detail: bool) -> tuple[str, ...]:
    """The metrics to ask for: every one, or (``detail`` False, for counting many configurations) the hardware
    counters alone (the FLOPs are then the model's: :meth:`Counts.flops`)."""
    return WANTED if detail else tuple(m for m in WANTED if m not in INSTRUMENTED)


ESSENTIAL: tuple[str, ...] = (L2_BYTES, L1_BYTES, DURATION)
"""Without these (and DRAM bytes under one of its names) a kernel cannot be placed on the hierarchical roofline."""
LEVELS = ("dram", "l2", "l1")
"""The levels a kernel is placed at, outermost first."""
LEVEL_NAMES = {"dram": "DRAM", "l2": "L2", "l1": "L1", "requested": "requested by the threads"}


def base_name(metric: str) -> str:
    """The metric without its roll-up and submetric suffixes: ``dram__bytes`` of ``dram__bytes.sum``."""
    return metric.split(".", 1)[0]


def available(wanted: Iterable[str], known_bases: set[str]) -> tuple[list[str], list[str]]:
    """(the wanted metrics the GPU has, those it lacks), by base name."""
    have: list[str] = []
    lack: list[str] = []
    for metric in wanted:
        (have if base_name(metric) in known_bases else lack).append(metric)
    return have, lack


def missing_essentials(names: set[str], detail: bool = True) -> list[str]:
    """The essential metrics (DRAM bytes under either name; with ``detail``, the FLOP instructions) that ``names``
    lacks."""
    missing = [m for m in (*ESSENTIAL, *(FLOP_INSTRUCTIONS if detail else ())) if m not in names]
    if DRAM_BYTES not in names and not all(part in names for part in DRAM_PARTS):
        missing.insert(0, DRAM_BYTES)
    return missing


@dataclass(frozen=True)
class Counts:
    """What the counters say of one kernel launch (None where a metric was not collected)."""

    dram_bytes: float | None
    l2_bytes: float | None
    l1_bytes: float | None
    requested_bytes: float | None
    shared_wavefronts: float | None
    cuda_core_flops: float | None
    tensor_instructions: float | None
    duration_s: float | None
    sm_clock_hz: float | None

    @classmethod
    def of(cls, metrics: RawMetrics) -> Counts:
        dram = scaled(metrics, DRAM_BYTES, "byte")
        if dram is None:
            parts = [scaled(metrics, name, "byte") for name in DRAM_PARTS]
            dram = None if None in parts else sum(p for p in parts if p is not None)
        flop_counts = {name: count(metrics, name) for name in FLOP_INSTRUCTIONS if name in metrics}
        tensor = [v for name in TENSOR_INSTRUCTIONS if (v := count(metrics, name)) is not None]
        return cls(
            dram_bytes=dram,
            l2_bytes=scaled(metrics, L2_BYTES, "byte"),
            l1_bytes=scaled(metrics, L1_BYTES, "byte"),
            requested_bytes=scaled(metrics, REQUESTED_BYTES, "byte"),
            shared_wavefronts=count(metrics, SHARED_WAVEFRONTS),
            cuda_core_flops=(None if not flop_counts or None in flop_counts.values()
                             else sum(FLOP_INSTRUCTIONS[n] * (v or 0.0) for n, v in flop_counts.items())),
            tensor_instructions=max(tensor) if tensor else None,
            duration_s=scaled(metrics, DURATION, "second"),
            sm_clock_hz=scaled(metrics, SM_CLOCK, "hertz"),
        )

    def flops(self, model_flops: int) -> tuple[float | None, str]:
        """The operations of the launch and how they were counted: from the CUDA cores' instructions, or the
        model's 2·M·N·K for a kernel on the tensor cores, one whose arithmetic is not floating-point, or one whose
        FLOP instructions were not asked for."""
        if self.tensor_instructions:
            return float(model_flops), ("the problem's 2·M·N·K (tensor-core instructions are counted, their "
                                        "operations are not)")
        if self.cuda_core_flops:
            return self.cuda_core_flops, "counted: CUDA-core add, multiply (1) and fused multiply-add (2) instructions"
        if self.cuda_core_flops == 0:
            return float(model_flops), "the problem's 2·M·N·K (no floating-point instruction was counted)"
        return float(model_flops), ("the problem's 2·M·N·K (the FLOP instructions were not counted: counting every "
                                    "configuration leaves them out)")
