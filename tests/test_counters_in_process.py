"""Counting in the measuring process, around the GPU: what its answers become (counters.parquet rows in
the parser's units, reasons for the kernels that could not be counted), Nsight Compute where CUPTI cannot count,
and the profiler released after every count. Its answers here are written by the test (the GPU path is
tests/gpu/test_counters_in_process.py); the metric names, units and passes are those CUPTI gave on the H100."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from tuner.backends.pycuda.in_process_counters import MeasuringProcessCounters, parser_unit, raw_metrics
from tuner.backends.pycuda.kernel_count import CountRequest, KernelCount
from tuner.compile.result import CompileResult
from tuner.config import Config, Problem
from tuner.counters import metrics as m
from tuner.counters.sources import Counted
from tuner.measure.measurement import Resources

PROBLEM = Problem(1024, 1024, 1024)
NAIVE = Config.make(PROBLEM, "naive", "float32", {"BLOCK_X": 16, "BLOCK_Y": 16})
TILED = Config.make(PROBLEM, "tiled", "float32", {"TILE_WIDTH": 16})
CUPTI_UNITS = {m.DRAM_BYTES: "byte", m.L2_BYTES: "byte", m.L1_BYTES: "byte", m.SHARED_WAVEFRONTS: "l1tex_wavefront",
               m.DURATION: "nanosecond", m.SM_CLOCK: "gpc_cycle", **dict.fromkeys(m.FLOP_INSTRUCTIONS, "instruction"),
               **dict.fromkeys(m.TENSOR_INSTRUCTIONS, "instruction")}
"""The dimension units CUPTI's profiler host gave for these metrics on the H100."""


def answer(l1: float, status: str = "ok", flops: bool = True, **more: Any) -> KernelCount:
    values = {m.DRAM_BYTES: 8.4e6, m.L2_BYTES: 4.5e8, m.L1_BYTES: l1, m.SHARED_WAVEFRONTS: 0.0,
              m.DURATION: 340_000.0, m.SM_CLOCK: 1.98e9, **dict.fromkeys(m.TENSOR_INSTRUCTIONS, 0.0)}
    if flops:
        values |= dict.fromkeys(m.FLOP_INSTRUCTIONS, 0.0)
        values["sm__sass_thread_inst_executed_op_ffma_pred_on.sum"] = 2**30
    return KernelCount(status, more.pop("reason", ""), values, {k: CUPTI_UNITS[k] for k in values}, 2 if flops else 1,
                       version="CUPTI API 130001", **more)


class StandIn:
    """The backend's side of counting, its measuring process's answers scripted by key."""

    def __init__(self, answers: dict[str, KernelCount]):
        self.answers = answers
        self.session_fails = False
        self.asked: list[CountRequest] = []
        self.ended = 0

    def device(self) -> dict[str, Any]:
        return {"device": {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1"}}

    def compiled(self, source: str) -> CompileResult:
        return CompileResult(True, b"cubin", Resources(), "", 0.0, True)

    def count_launches(self, request: CountRequest) -> tuple[KernelCount, ...]:
        self.asked.append(request)
        keys = [k.config.key for k in request.kernels]
        if len(keys) > 1 and self.session_fails:
            return (KernelCount("alone", "cuptiRangeProfilerPopRange failed"),) * len(keys)
        return tuple(self.answers[key] for key in keys)

    def end_counting(self) -> None:
        self.ended += 1


class Fallback:
    def __init__(self) -> None:
        self.counted: list[Config] = []

    def count(self, configs: Sequence[Config], say=None, detail: bool = True) -> Counted:
        self.counted = list(configs)
        return Counted(how="Nsight Compute 2025.3.1.0, …")


def test_cuptis_units_become_the_parsers():
    assert parser_unit(m.DURATION, "nanosecond") == "nsecond"
    assert parser_unit(m.SM_CLOCK, "gpc_cycle") == "cycle/second"
    assert parser_unit(m.L1_BYTES, "byte") == "byte"
    counts = m.Counts.of(raw_metrics(answer(5.4e8)))
    assert counts.duration_s == pytest.approx(340e-6)
    assert counts.sm_clock_hz == pytest.approx(1.98e9)
    assert counts.l1_bytes == 5.4e8 and counts.cuda_core_flops == 2 * 2**30


def test_each_answer_becomes_a_row_and_the_profiler_is_released():
    backend = StandIn({NAIVE.key: answer(4.3e9), TILED.key: answer(5.4e8)})
    said: list[str] = []
    counted = MeasuringProcessCounters(backend, Fallback()).count([TILED, NAIVE], said.append)
    rows = {row["config_key"]: row for row in counted.rows}
    assert set(rows) == {NAIVE.key, TILED.key} and counted.reasons == []
    assert rows[TILED.key]["l1_bytes"] == 5.4e8 and rows[TILED.key]["flops_counted"] == 2 * 2**30
    assert rows[TILED.key]["counters_time_ms"] == pytest.approx(0.34)
    assert rows[NAIVE.key]["cache_control"] == "l2" and rows[NAIVE.key]["ncu_version"] == "CUPTI API 130001"
    assert "CUPTI's range profiler in the measuring process (CUPTI API 130001)" in counted.how
    assert "the L2 flushed before each replay pass" in counted.how and "2 replay passes per kernel" in counted.how
    assert backend.ended == 1 and said[-1] == "counters: 2/2 kernels counted in the measuring process"
    assert len(backend.asked) == 1 and len(backend.asked[0].kernels) == 2  # one session for the workspace
    assert m.REQUESTED_BYTES in backend.asked[0].metrics


def test_a_session_per_workspace_and_a_failed_session_counted_again_kernel_by_kernel():
    other = Config.make(Problem(512, 512, 512), "naive", "float32", {"BLOCK_X": 16, "BLOCK_Y": 16})
    backend = StandIn({NAIVE.key: answer(4.3e9), TILED.key: answer(5.4e8), other.key: answer(5e8)})
    MeasuringProcessCounters(backend, Fallback()).count([NAIVE, other, TILED])
    assert [[k.config.key for k in r.kernels] for r in backend.asked] == [[other.key], [NAIVE.key, TILED.key]]
    backend = StandIn({NAIVE.key: answer(4.3e9), TILED.key: answer(5.4e8)})
    backend.session_fails = True
    counted = MeasuringProcessCounters(backend, Fallback()).count([NAIVE, TILED])
    assert [len(r.kernels) for r in backend.asked] == [2, 1, 1] and len(counted.rows) == 2


def test_counting_every_configuration_asks_the_hardware_counters_alone():
    backend = StandIn({NAIVE.key: answer(4.3e9, flops=False)})
    counted = MeasuringProcessCounters(backend, Fallback()).count([NAIVE], detail=False)
    asked = backend.asked[0].metrics
    assert not set(m.INSTRUMENTED) & set(asked) and m.L1_BYTES in asked
    row = counted.rows[0]
    assert row["flops_counted"] == 2 * 1024**3 and "the FLOP instructions were not counted" in row["flops_counted_how"]
    assert "the instrumented metrics" in counted.how and "1 replay pass per kernel" in counted.how


def test_a_kernel_that_cannot_be_counted_is_a_reason_and_the_others_are_kept():
    backend = StandIn({NAIVE.key: answer(4.3e9, "wrong", reason="12 of 1048576 elements differ"),
                       TILED.key: KernelCount("crashed", "the measuring process died (killed by SIGSEGV)")})
    counted = MeasuringProcessCounters(backend, Fallback()).count([NAIVE, TILED])
    assert counted.rows == []
    assert any("wrong under the profiler (12 of 1048576 elements differ)" in r for r in counted.reasons)
    assert any(TILED.key in r and "crashed" in r for r in counted.reasons)
    assert backend.ended == 1


def test_where_cupti_cannot_count_nsight_compute_counts_everything():
    backend = StandIn({NAIVE.key: KernelCount("unavailable", "cuptiRangeProfilerEnable failed: "
                                                             "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"),
                       TILED.key: answer(5.4e8)})
    fallback = Fallback()
    counted = MeasuringProcessCounters(backend, fallback).count([TILED, NAIVE])
    assert fallback.counted == [TILED, NAIVE] and backend.ended == 1
    assert counted.how.startswith("Nsight Compute") and "CUPTI could not count here" in counted.how
    assert "INSUFFICIENT_PRIVILEGES" in counted.how


def test_a_gpu_without_an_essential_metric_is_counted_by_nsight_compute():
    short = answer(4.3e9)
    del short.values[m.L1_BYTES]
    fallback = Fallback()
    counted = MeasuringProcessCounters(StandIn({NAIVE.key: short}), fallback).count([NAIVE])
    assert fallback.counted == [NAIVE] and f"lacks the metric(s) {m.L1_BYTES}" in counted.how
