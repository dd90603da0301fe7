"""The counters read in the measuring process itself (CUPTI's range profiler,
:mod:`tuner.backends.pycuda.in_process_counters`): the seed kernels (naive 16×16, tiled 16 and 32 at 1024³
float32) counted in at most three passes, with the bytes and operations their code says they must have, the same
as Nsight Compute counts where it is installed; the process times correctly after counting."""

from __future__ import annotations

import pytest

from tuner.config import Config, Problem
from tuner.counters.ncu import NcuUnavailable, find_ncu
from tuner.counters.sources import NcuCounters
from tuner.kernels.model import cost
from tuner.measure.measurement import Status
from tuner.settings import CompileSettings

pytestmark = pytest.mark.gpu

PROBLEM = Problem(1024, 1024, 1024)
NAIVE = Config.make(PROBLEM, "naive", "float32", {"BLOCK_X": 16, "BLOCK_Y": 16})
TILED = {t: Config.make(PROBLEM, "tiled", "float32", {"TILE_WIDTH": t}) for t in (16, 32)}
MOST_PASSES = 3
SAME = 0.01
"""How far the in-process counts of what the kernel's code decides (L1 sectors, instructions, requested bytes,
shared wavefronts) may differ from Nsight Compute's: the same hardware counters of one launch each (seen: equal)."""
L2_SAME = 0.10
"""The L2's bytes depend on what the caches held: Nsight Compute invalidates every cache before a pass, the
measuring process overwrites the L2 with its flush buffer, whose dirty lines the kernel's misses then evict (seen:
0.5–3.6% apart, and Nsight Compute's own count of one kernel 2% apart between two sessions)."""


@pytest.fixture(scope="module")
def counted(backend):
    result = backend.counters().count([NAIVE, *TILED.values()])
    assert result.reasons == [], result.reasons
    assert "CUPTI" in result.how, f"not counted in the measuring process: {result.how}"
    return {row["config_key"]: row for row in result.rows}, result


def test_every_seed_kernel_is_counted_in_the_measuring_process_in_at_most_three_passes(counted):
    rows, result = counted
    print(result.how)
    assert set(rows) == {NAIVE.key, *(c.key for c in TILED.values())}
    assert all(1 <= row["replay_passes"] <= MOST_PASSES for row in rows.values()), result.how
    assert all(row["clock_control"] == "none" and row["cache_control"] == "l2" for row in rows.values())
    assert all(str(row["ncu_version"]).startswith("CUPTI") for row in rows.values())


def test_the_operations_are_the_products_multiply_adds_and_the_tile_cuts_the_l1(counted):
    rows, _ = counted
    naive_model = cost(NAIVE).global_bytes
    for row in rows.values():
        assert row["flops_counted"] == 2 * 1024**3
        assert row["counters_time_ms"] > 0
    for width, config in TILED.items():
        assert rows[config.key]["l1_bytes"] == pytest.approx(naive_model / width, rel=0.10)
    assert rows[NAIVE.key]["l1_bytes"] / rows[TILED[16].key]["l1_bytes"] == pytest.approx(8, rel=0.10)
    inputs = 2 * 1024**2 * 4
    for key, row in rows.items():
        assert row["l2_bytes"] >= row["dram_bytes"] >= 0.95 * inputs, key  # the L2 flushed before each pass


def test_the_counts_are_nsight_computes(counted, backend):
    try:
        find_ncu()
    except NcuUnavailable as exc:
        pytest.skip(str(exc))
    rows, _ = counted
    outside = NcuCounters(CompileSettings(), device_name=backend.device()["device"]["name"]).count(
        [NAIVE, *TILED.values()])
    assert outside.reasons == [], outside.reasons
    for row in outside.rows:
        inside = rows[row["config_key"]]
        for column in ("l1_bytes", "l2_bytes", "flops_counted", "shared_wavefronts", "l1_requested_bytes"):
            print(row["config_key"], column, "ncu", row[column], "in process", inside[column])
            if row[column] is not None:
                assert inside[column] == pytest.approx(row[column], rel=L2_SAME if column == "l2_bytes" else SAME,
                                                       abs=1), (row["config_key"], column)


def test_the_measuring_process_times_as_before_after_counting(counted, backend):
    measurement = backend.evaluate(TILED[32])
    assert measurement.status is Status.OK, measurement.reason


def test_tensor_core_kernels_with_clusters_and_tensor_maps_are_counted(capfd):
    """The mma family (mma.sync) and the wgmma family's most featured design (clusters, tensor maps, a persistent
    grid, launched through cuLaunchKernelEx) counted in the measuring process: their tensor-pipe instructions
    counted, their operations the problem's 2·M·N·K, their outputs verified, in one session (no crash made the
    backend count them one by one)."""
    from dataclasses import replace

    import pycuda.driver as cuda

    from tests.gpu.support import QUICK
    from tests.test_mma_emulated import CASES
    from tests.wgmma_configs import GPU_PARAMETERS
    from tuner.backends.pycuda.backend import PycudaBackend

    cuda.init()
    if cuda.Device(0).compute_capability() != (9, 0):
        pytest.skip("the wgmma family runs on Hopper (compute capability 9.0) only")
    problem = Problem(1024, 1024, 1024)
    dtype, params = GPU_PARAMETERS[len(GPU_PARAMETERS) // 3 - 1]  # the last rung of the bfloat16 ladder
    configs = [Config.make(problem, "wgmma", dtype, params), Config.make(problem, "mma", *CASES[0])]
    with PycudaBackend(replace(QUICK, timeout_s=20.0), CompileSettings(arch="sm_90a")) as hopper:
        counted = hopper.counters().count(configs)
    assert counted.reasons == [] and "CUPTI" in counted.how, (counted.reasons, counted.how)
    assert "crashed" not in capfd.readouterr().err
    for row in counted.rows:
        print(row["config_key"], row["tensor_instructions"], row["l1_bytes"], row["counters_time_ms"])
        assert row["tensor_instructions"] > 0 and row["flops_counted"] == 2 * 1024**3, row["config_key"]
        assert "tensor-core instructions are counted" in row["flops_counted_how"]
