"""Reading Nsight Compute: the raw CSV page, units, the counters of the hierarchical roofline, ncu's messages, and
the job and manifest of the profiled process."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.counted_backend import SEED_CONFIGS, SYNTHETIC_PAGE
from tuner.counters import metrics as m
from tuner.counters.job import Job, JobKernel, Launched, Manifest, ManifestWriter, launched_count
from tuner.counters.ncu import (
    PERMISSION,
    Session,
    failure_reason,
    named_in,
    one_line,
    parse_metric_names,
    passes_of,
)
from tuner.counters.ncu_csv import BASE_UNITS, count, number, parse_ncu_raw, scaled, unit_factor
from tuner.counters.sources import session_rows
from tuner.errors import TunerError

MNK = 1024**3
DEVICE = {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1"}


@pytest.fixture(scope="module")
def page():
    return parse_ncu_raw(SYNTHETIC_PAGE.read_text())


@pytest.mark.parametrize(("unit", "to", "factor"), [
    ("ms", "second", 1e-3), ("usecond", "second", 1e-6), ("Ghz", "hertz", 1e9), ("cycle/nsecond", "hertz", 1e9),
    ("cycle/ns", "hertz", 1e9), ("inst/cycle", "hertz", None),
    ("Mbyte", "byte", 1e6), ("GB", "byte", 1e9), ("byte", "byte", 1.0), ("sector", "byte", None),
    ("%", "second", None),
])
def test_units_convert_whatever_prefix_ncu_chose(unit, to, factor):
    found = unit_factor(unit, BASE_UNITS[to])
    assert found is None if factor is None else found == pytest.approx(factor)


def test_every_profiled_kernel_is_read_in_order_past_the_lines_before_the_table(page):
    assert len(page) == 3
    assert [k["ID"][0] for k in page] == ["0", "1", "2"]
    assert {k["Kernel Name"][0] for k in page} == {"matmul"}
    assert page[0]["l1tex__t_bytes.sum"] == ("4.299162", "Gbyte")
    assert number(page[1], "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum") == 32768 * 64 * 34  # with commas
    assert scaled(page[0], "gpu__time_duration.sum", "second") == pytest.approx(521.12e-6)


def test_a_report_without_a_kernel_is_an_error():
    with pytest.raises(TunerError, match="no profiled kernel"):
        parse_ncu_raw('"ID","Kernel Name"\n"",""\n')
    with pytest.raises(TunerError, match="no profiled kernel"):
        parse_ncu_raw("==PROF== Disconnected from process 1\n")


def test_a_value_ncu_could_not_collect_reads_as_unknown():
    (kernel,) = parse_ncu_raw('"ID","Kernel Name","lts__t_bytes.sum"\n"","","Mbyte"\n"0","matmul","n/a"\n')
    assert scaled(kernel, "lts__t_bytes.sum", "byte") is None
    assert m.Counts.of(kernel).l2_bytes is None


def test_the_counts_of_the_naive_kernel(page):
    counts = m.Counts.of(page[0])
    assert counts.l1_bytes == pytest.approx(4.299162e9)
    assert counts.l2_bytes == pytest.approx(517.2e6)
    assert counts.dram_bytes == pytest.approx(8.39e6 + 4.19e6)  # no dram__bytes: its read and write halves
    assert counts.requested_bytes == pytest.approx(2 * MNK * 4 + 1024**2 * 4)
    assert counts.cuda_core_flops == 2 * MNK  # an FFMA is two operations
    assert counts.tensor_instructions == 0 and counts.shared_wavefronts == 0
    assert counts.duration_s == pytest.approx(521.12e-6) and counts.sm_clock_hz == pytest.approx(1.98e9)
    flops, how = counts.flops(2 * MNK)
    assert flops == 2 * MNK and how.startswith("counted")


def test_how_flops_are_counted_on_tensor_cores_and_without_float_instructions():
    base = dict(dram_bytes=1.0, l2_bytes=1.0, l1_bytes=1.0, requested_bytes=1.0, shared_wavefronts=0.0,
                duration_s=1.0, sm_clock_hz=1.0)
    tensor = m.Counts(**base, cuda_core_flops=4096.0, tensor_instructions=10.0)
    flops, how = tensor.flops(2 * MNK)
    assert flops == 2 * MNK and "tensor-core instructions are counted, their operations are not" in how
    integer = m.Counts(**base, cuda_core_flops=0.0, tensor_instructions=None)
    assert integer.flops(64)[0] == 64 and "no floating-point instruction" in integer.flops(64)[1]
    flops, how = m.Counts(**base, cuda_core_flops=None, tensor_instructions=None).flops(64)
    assert flops == 64 and "the FLOP instructions were not counted" in how


def test_flop_instructions_count_fma_twice():
    assert m.FLOP_INSTRUCTIONS["sm__sass_thread_inst_executed_op_dfma_pred_on.sum"] == 2
    assert m.FLOP_INSTRUCTIONS["sm__sass_thread_inst_executed_op_hadd_pred_on.sum"] == 1
    assert len(m.FLOP_INSTRUCTIONS) == 9


def test_metrics_the_gpu_lacks_are_left_out_and_the_essential_ones_checked():
    known = {m.base_name(name) for name in m.WANTED} - {"dram__bytes", "sm__inst_executed_pipe_tensor_op_dmma"}
    have, lack = m.available(m.WANTED, known)
    assert "dram__bytes.sum" in lack and "sm__inst_executed_pipe_tensor_op_dmma.sum" in lack
    assert m.missing_essentials(set(have)) == []  # DRAM bytes under its read and write halves
    assert m.missing_essentials(set(have) - {"l1tex__t_bytes.sum", "dram__bytes_read.sum"}) == [
        "dram__bytes.sum", "l1tex__t_bytes.sum"]


def test_the_metric_names_of_a_query():
    text = """Device NVIDIA H100 80GB HBM3 (GH100)
------------------------------------------- --------------------------------------------------
Metric Name                                  Metric Description
------------------------------------------- --------------------------------------------------
dram__bytes                                  # of bytes accessed in DRAM
lts__t_bytes                                 # of bytes requested
"sm__sass_thread_inst_executed_op_ffma_pred_on","# of FFMA thread instructions executed"
"""
    assert parse_metric_names(text) == {"dram__bytes", "lts__t_bytes", "sm__sass_thread_inst_executed_op_ffma_pred_on"}


def test_failures_read_as_one_line():
    denied = ("==PROF== Connected to process 12 (/usr/bin/python3)\n==ERROR== ERR_NVGPUCTRPERM - The user does not "
              "have permission to access NVIDIA GPU Performance Counters on the target device 0.\n")
    assert PERMISSION in failure_reason(denied) and "root" in failure_reason(denied)
    assert "\n" not in failure_reason(denied)
    missing = "==ERROR== Failed to find metric sm__inst_executed_pipe_tensor_op_dmma.sum\n==ERROR== bad\n"
    assert failure_reason(missing) == "Failed to find metric sm__inst_executed_pipe_tensor_op_dmma.sum; bad"
    assert failure_reason("Traceback\n  ...\nRuntimeError: no device\n") == "RuntimeError: no device"
    assert len(one_line("x " * 500)) == 300


def test_a_metric_is_named_as_a_whole_word():
    output = "==ERROR== Failed to find metric sm__inst_executed_pipe_tensor_op_dmma.sum"
    assert named_in("sm__inst_executed_pipe_tensor_op_dmma.sum", output)
    assert not named_in("sm__inst_executed_pipe_tensor.sum", output)


def test_replay_passes_are_read_from_the_profilers_lines():
    output = ('==PROF== Profiling "matmul" - 0: 0%....50%....100% - 3 passes\n'
              'counters\n==PROF== Profiling "matmul" - 1: 0%....50%....100% - 1 pass\n')
    assert passes_of(output) == (3, 1)


def test_a_job_reads_back_as_written(tmp_path):
    kernels = tuple(JobKernel(c, tmp_path / f"{i}.cubin") for i, c in enumerate(SEED_CONFIGS))
    job = Job(kernels, ("/families",), 7)
    assert Job.read(job.write(tmp_path)) == job


def test_the_manifest_says_what_ran_and_what_crashed(tmp_path):
    path = tmp_path / "manifest.jsonl"
    with path.open("w") as stream:
        writer = ManifestWriter(stream)
        writer.device(DEVICE)
        for i, status in enumerate(("ok", "refused", "wrong")):
            writer.launching(i, f"k{i}")
            writer.outcome(i, f"k{i}", status, "because")
        writer.launching(3, "k3")
    with path.open("a") as stream:
        stream.write('{"event": "outc')  # a process killed while writing
    manifest = Manifest.read(path)
    assert manifest.device == DEVICE
    assert [(k.key, k.status) for k in manifest.kernels] == [("k0", "ok"), ("k1", "refused"), ("k2", "wrong"),
                                                               ("k3", "crashed")]
    assert [k.key for k in manifest.ran] == ["k0", "k2"]
    assert [k.key for k in manifest.started] == ["k0", "k2", "k3"]
    assert launched_count(path) == 4
    assert Manifest.read(tmp_path / "absent.jsonl").kernels == ()


def _kernels() -> list[JobKernel]:
    return [JobKernel(c, Path("k.cubin")) for c in SEED_CONFIGS]


def _session(passes: tuple[int, ...] = (2, 2, 2)) -> Session:
    return Session(SYNTHETIC_PAGE.read_text(), passes, "", 0, ())


def test_profiled_kernels_are_matched_to_the_launched_configurations():
    manifest = Manifest(DEVICE, tuple(Launched(i, c.key, "ok") for i, c in enumerate(SEED_CONFIGS)))
    rows, reasons = session_rows(_session((2, 3, 2)), manifest, _kernels(), "2025.3.0.0", ["dram__bytes.sum"])
    assert reasons == []
    assert [r["config_key"] for r in rows] == [c.key for c in SEED_CONFIGS]
    naive, tiled16, tiled32 = rows
    assert naive["gpu_name"] == DEVICE["name"] and naive["gpu_uuid"] == "GPU-1"
    assert naive["l1_bytes"] == pytest.approx(4.299162e9) and naive["flops_counted"] == 2 * MNK
    assert tiled16["replay_passes"] == 3 and tiled32["counters_time_ms"] == pytest.approx(0.2983)
    assert naive["clock_control"] == "none" and naive["cache_control"] == "all"
    assert naive["metrics_missing"] == "dram__bytes.sum"
    # the tile cuts what the threads ask of the L1 by its width
    assert naive["l1_requested_bytes"] / tiled16["l1_requested_bytes"] == pytest.approx(16, rel=0.02)


def test_a_kernel_wrong_under_the_profiler_is_not_kept():
    manifest = Manifest(DEVICE, tuple(Launched(i, c.key, "wrong" if i == 1 else "ok", "‖C − ref‖ too large")
                                      for i, c in enumerate(SEED_CONFIGS)))
    rows, reasons = session_rows(_session(), manifest, _kernels(), "2025.3.0.0")
    assert [r["config_key"] for r in rows] == [SEED_CONFIGS[0].key, SEED_CONFIGS[2].key]
    assert reasons == [f"{SEED_CONFIGS[1].key}: wrong under the profiler (‖C − ref‖ too large)"]


def test_results_that_cannot_be_matched_are_not_kept():
    refused = Manifest(DEVICE, tuple(Launched(i, c.key, "refused" if i == 1 else "ok")
                                     for i, c in enumerate(SEED_CONFIGS)))
    rows, reasons = session_rows(_session(), refused, _kernels(), "2025.3.0.0")
    assert rows == [] and "profiled 3 kernels of the 2 launched" in reasons[-1]
    ok = Manifest(DEVICE, tuple(Launched(i, c.key, "ok") for i, c in enumerate(SEED_CONFIGS)))
    other = SYNTHETIC_PAGE.read_text().replace('"matmul"', '"transpose"')
    rows, reasons = session_rows(Session(other, (), "", 0, ()), ok, _kernels(), "x")
    assert rows == [] and "'transpose' is not the launched 'matmul'" in reasons[-1]
    rows, reasons = session_rows(Session("", (), f"==ERROR== {PERMISSION} - denied", 1, ()), ok, _kernels(), "x")
    assert rows == [] and PERMISSION in reasons[-1]


def test_counted_quantities_take_their_units_prefix():
    (kernel,) = parse_ncu_raw('"ID","a","b","c"\n"","Minst","inst",""\n"0","1.5","2,000","7"\n')
    assert [count(kernel, name) for name in ("a", "b", "c", "d")] == [1.5e6, 2000.0, 7.0, None]


def test_a_page_without_an_essential_metric_places_no_kernel():
    manifest = Manifest(DEVICE, tuple(Launched(i, c.key, "ok") for i, c in enumerate(SEED_CONFIGS)))
    page = SYNTHETIC_PAGE.read_text().replace('"l1tex__t_bytes.sum"', '"l1tex__t_requests.sum"')
    rows, reasons = session_rows(Session(page, (), "", 0, ()), manifest, _kernels(), "2025.3.0.0")
    assert rows == [] and reasons == ["the GPU lacks the metric(s) l1tex__t_bytes.sum that place a kernel on the "
                                      "hierarchical roofline (Nsight Compute 2025.3.0.0)"]
