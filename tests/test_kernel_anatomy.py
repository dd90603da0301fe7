"""The parsing behind benchmarks/kernel_anatomy.py, on a real cuobjdump listing and a real Nsight Compute record."""

from pathlib import Path

import pytest

from benchmarks.kernel_anatomy import (
    Instruction,
    counters_summary,
    describe,
    hot_loops,
    kept,
    loops,
    parse_sass,
)
from tuner.config import Config, Problem
from tuner.counters.ncu_csv import parse_ncu_raw

DATA = Path(__file__).parent / "data"

# The best float64 configuration of experiments/data/h100_sgemm_h100 at 4096³, which the record profiles.
REGBLOCK_F64 = Config(
    family="regblock",
    params=tuple(sorted({"ASYNC": 1, "A_T": 1, "BK": 32, "BM": 128, "BN": 128, "COPY_SPREAD": 8, "MIN_BLOCKS": 1,
                         "OUTER_ORDER": 2, "PAD": 4, "SCHEDULE": 1, "STAGES": 2, "SWIZZLE": 1, "TM": 8, "TN": 8,
                         "UNROLL": 32, "VECTOR": 1, "WARP_N": 8}.items())),
    dtype="float64", problem=Problem(4096, 4096, 4096),
)


@pytest.fixture(scope="module")
def tiled_sass():
    """cuobjdump -sass of the tiled template, TILE_WIDTH 16, float32, compiled for sm_90 by nvcc 13.0."""
    return parse_sass((DATA / "tiled_float32_tw16.sass").read_text())


@pytest.fixture(scope="module")
def ncu_metrics():
    """Part of Nsight Compute's raw page for REGBLOCK_F64 on an H100 (the record of kernel_anatomy_h100)."""
    (metrics,) = parse_ncu_raw("==PROF== Disconnected\n" + (DATA / "ncu_raw_regblock_float64.csv").read_text())
    return metrics


def test_the_k_loop_of_the_tiled_kernel_is_found_with_its_mix(tiled_sass):
    (loop,) = hot_loops(tiled_sass, "FFMA")
    assert (loop.first, loop.last) == (0x230, 0x620)
    assert loop.fma == 16  # a 16-wide tile: one multiply-add per element of the tile's row
    assert loop.memory == {"LDG.E.CONSTANT": 2, "LDS": 16, "LDS.128": 4, "STS": 2}
    assert loop.shared_loads == 20 and loop.barriers == 2 and loop.local_accesses == 0


def test_instructions_predicated_on_never_are_left_out():
    listing = """
        /*3200*/              @!PT LDS RZ, [RZ] ;                                 /* 0x00000000fffff984 */
        /*3230*/                   LDGSTS.E.64 [R219+0x200], desc[UR12][R68.64], !P2 ;  /* 0x0020000044db7fae */
        /*3240*/              @!P1 DFMA R82, R42, R30.reuse, R82 ;                 /* 0x0000001e2a52722b */
    """
    assert [(i.offset, i.opcode) for i in parse_sass(listing)] == [(0x3230, "LDGSTS.E.64"), (0x3240, "DFMA")]
    assert ".reuse" in parse_sass(listing)[1].operands


def _loop(first, last, fmas):
    body = [Instruction(first + 16 * i, "DFMA", "R0, R2.reuse, R4, R0") for i in range(fmas)]
    return body, Instruction(last, "BRA", f"0x{first:x}")


def test_only_innermost_hot_loops_are_reported():
    # a tile loop (0x000–0x900) around two k loops, one on a 128-bit path and one on a scalar path, and a cold
    # loop of one multiply-add
    fast, fast_back = _loop(0x100, 0x300, 10)
    slow, slow_back = _loop(0x400, 0x600, 8)
    cold, cold_back = _loop(0x700, 0x800, 1)
    code = sorted([*fast, fast_back, *slow, slow_back, *cold, cold_back, Instruction(0x900, "BRA", "0x0")],
                  key=lambda i: i.offset)
    assert len(loops(code)) == 4
    hot = hot_loops(code, "DFMA")
    assert [(m.first, m.last, m.fma, m.fma_reusing) for m in hot] == [(0x100, 0x300, 10, 10), (0x400, 0x600, 8, 8)]


def test_no_loop_means_no_hot_loop():
    assert hot_loops([Instruction(0, "DFMA", "R0, R2, R4, R0"), Instruction(16, "EXIT", "")], "DFMA") == []


def test_the_summary_of_a_real_record(ncu_metrics):
    c = counters_summary(ncu_metrics, REGBLOCK_F64)
    assert c["duration_ms"] == pytest.approx(5.1352)
    assert c["tflops"] == pytest.approx(2 * 4096**3 / 5.1352e-3 / 1e12)
    assert c["sm_clock_mhz"] == pytest.approx(1966.994)
    assert c["fma_pipe_busy_pct"] == pytest.approx(80.879862)
    assert c["issue_active_pct"] == pytest.approx(47.767405)
    assert c["achieved_occupancy_pct"] == pytest.approx(12.498915)
    assert c["shared_bank_conflicts"] == 0 and c["local_bytes"] == 0
    assert c["shared_wavefronts_per_load"] == pytest.approx(537_018_368 / 268_509_184)
    assert c["l2_to_sm_bytes"] == 257_589_381 * 32
    assert c["dram_bytes"] == pytest.approx(2.336734e9 + 136.865024e6)
    assert list(c["stalls"]) == ["math_pipe_throttle", "wait", "not_selected", "barrier", "dispatch_stall"]
    assert c["model_global_bytes"] == 8 * (2 * 4096**3 // 128 + 4096**2)


def test_missing_counters_read_as_unknown_not_zero(ncu_metrics):
    thin = {k: v for k, v in ncu_metrics.items() if not k.startswith(("dram__", "l1tex__t_sectors", "gpu__time"))}
    c = counters_summary(thin, REGBLOCK_F64)
    assert c["dram_bytes"] is None and c["local_bytes"] is None and c["tflops"] is None
    text = "\n".join(describe({"problem": "4096x4096x4096", "dtype": "float64", "family": "regblock",
                               "params": REGBLOCK_F64.param_dict, "hot_loops": [], "counters": c,
                               "resources": {"registers": 234, "spill_store_bytes": 0, "spill_load_bytes": 0,
                                             "local_bytes": 0, "dynamic_shared_bytes": 133120, "threads": 256}}))
    assert "DRAM — GB" in text and "local memory — B" in text and "— TFLOP/s" in text
    assert "math_pipe_throttle 1.09" in text


def test_the_record_keeps_totals_and_drops_per_sm_extremes():
    assert kept("sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active")
    assert kept("dram__bytes_read.sum")
    assert not kept("sm__pipe_fp64_cycles_active.max.pct_of_peak_sustained_active")
    assert not kept("dram__bytes_read.sum.pct_of_peak_sustained_elapsed")
    assert not kept("device__attribute_local_l1_cache_supported")
