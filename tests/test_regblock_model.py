"""The regblock family: its analytical model, its static constraints, and the H100 experiment's space."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from space_listing import valid_configs

from kernel_templates import regblock
from tuner.config import Config, Problem
from tuner.experiment.schema import load_experiment
from tuner.kernels.discovery import get_family
from tuner.kernels.model import cost
from tuner.kernels.render import launch, render
from tuner.kernels.targets import target
from tuner.space.entry_space import violations

ROOT = Path(__file__).resolve().parent.parent
H100 = ROOT / "experiments" / "h100_sgemm.yaml"
FAMILY = get_family("regblock")

BASE = dict(BM=128, BN=128, BK=32, TM=8, TN=8, WARP_N=8, A_T=1, PAD=4, VECTOR=1, ASYNC=1, STAGES=2, UNROLL=32,
            MIN_BLOCKS=2, COPY_SPREAD=0, SWIZZLE=0, OUTER_ORDER=0, SCHEDULE=0)

# The fastest configurations exploratory sweeps found on an H100 (4096³, medians of three passes, each timed
# right after cuBLAS, or for float64 right after the other schedule; same-run cuBLAS ratios or rates in the
# comments); the experiment's space must hold them and they must compile without spilling.
SPREAD_F32 = dict(BASE, BM=64, BN=256, BK=16, TN=16, STAGES=3, COPY_SPREAD=8, OUTER_ORDER=2)
SPREAD_F64 = dict(BASE, PAD=2, SWIZZLE=1, STAGES=3, MIN_BLOCKS=1, COPY_SPREAD=8)
BEST = [
    ("float32", dict(SPREAD_F32, WARP_N=16)),  # 1.007 of cuBLAS SGEMM
    ("float32", dict(SPREAD_F32)),  # 1.006
    ("float32", dict(SPREAD_F32, BM=128, BK=32, WARP_N=16, STAGES=4, MIN_BLOCKS=1)),  # 0.975
    ("float64", dict(SPREAD_F64, WARP_N=4, OUTER_ORDER=2, SCHEDULE=1)),  # 27.1 TFLOP/s; 26.4 one block per tile
    ("float64", dict(SPREAD_F64, WARP_N=16, OUTER_ORDER=1, SCHEDULE=1)),  # 27.1; 26.4 one block per tile
    ("float64", dict(SPREAD_F64, WARP_N=16, COPY_SPREAD=16, OUTER_ORDER=1)),  # 25.3 TFLOP/s
]


SQUARE = Problem(4096, 4096, 4096)


def config(dtype: str = "float32", problem: Problem = SQUARE, **changes: int) -> Config:
    return Config.make(problem, "regblock", dtype, {**BASE, **changes})


# --- analytical model ----------------------------------------------------------------------------------------


def test_global_bytes_count_each_block_row_and_column_once():
    c = config(BM=128, BN=64)
    M = N = K = 4096
    expected = 4 * (M * K * (N // 64) + K * N * (M // 128) + M * N)
    assert cost(c).global_bytes == expected
    assert cost(c).intensity == pytest.approx(2 * M * N * K / expected)


def test_global_bytes_round_partial_tiles_up():
    c = config("float64", Problem(1000, 777, 333), BM=64, BN=128)
    expected = 8 * (1000 * 333 * 7 + 333 * 777 * 16 + 1000 * 777)  # ⌈777/128⌉ = 7, ⌈1000/64⌉ = 16
    assert cost(c).global_bytes == expected


@pytest.mark.parametrize(("dtype", "BM", "BN", "size"), [("float32", 128, 128, 4), ("float32", 128, 256, 4),
                                                          ("float64", 64, 128, 8)])
def test_intensity_tends_to_the_block_tile_formula(dtype, BM, BN, size):
    big = Problem(4 * BM, 4 * BN, 1 << 20)  # deep enough that writing C adds nothing
    c = config(dtype, big, BM=BM, BN=BN)
    limit = 2 * BM * BN / ((BM + BN) * size)
    assert cost(c).intensity == pytest.approx(limit, rel=1e-3)
    assert cost(c).extra_intensities["block_intensity"] == pytest.approx(limit)


def test_float32_block_intensity_is_bm_bn_over_twice_the_sum():
    assert cost(config()).extra_intensities["block_intensity"] == pytest.approx(128 * 128 / (2 * 256))  # 32


@pytest.mark.parametrize(("dtype", "TM", "TN", "expected"), [("float32", 8, 8, 2.0), ("float32", 8, 16, 8 / 3),
                                                              ("float32", 4, 4, 1.0), ("float64", 8, 8, 1.0)])
def test_shared_intensity_of_the_thread_tile(dtype, TM, TN, expected):
    extra = regblock.extra_intensities({**BASE, "TM": TM, "TN": TN}, 4 if dtype == "float32" else 8)
    assert extra["shared_intensity"] == pytest.approx(expected)
    assert extra["shared_intensity"] == pytest.approx(2 * TM * TN / ((TM + TN) * (4 if dtype == "float32" else 8)))


def test_h100_roofline_leaves_the_block_tile_compute_bound_and_the_tiled_kernel_memory_bound():
    experiment = load_experiment(H100)
    h100 = next(m for m in experiment.machine_models if m.name == "H100 (spec)")
    tiled = Config.make(SQUARE, "tiled", "float32", {"TILE_WIDTH": 32})
    assert cost(config()).intensity > h100.ridge_point("float32") > cost(tiled).intensity


# --- geometry -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("dtype", "a_t", "expected"), [
    ("float32", 1, 2 * (32 * (128 + 4) + 32 * 128) * 4),
    ("float32", 0, 2 * (128 * (32 + 4) + 32 * 128) * 4),
    ("float32", 2, 2 * (32 // 4 * (128 * 4 + 4) + 32 * 128) * 4),  # 8 rows of 128 four-float vectors
    ("float64", 2, 2 * (32 // 2 * (128 * 2 + 4) + 32 * 128) * 8),  # 16 rows of 128 two-double vectors
])
def test_shared_bytes_per_layout_and_stage(dtype, a_t, expected):
    c = config(dtype, A_T=a_t, MIN_BLOCKS=1)
    assert FAMILY.shared_bytes(c.param_dict, c.element_bytes) == expected
    assert launch(c).dynamic_shared_bytes == expected


def test_launch_covers_a_problem_no_tile_divides():
    c = config(problem=Problem(4000, 3000, 2000), BN=256, TN=16, STAGES=4, MIN_BLOCKS=1)
    geometry = launch(c)
    assert geometry.block == (256, 1, 1)  # (128/8)·(256/16)
    assert geometry.grid == (12, 32, 1)  # ⌈3000/256⌉, ⌈4000/128⌉


# --- constraints ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("dtype", "params"), BEST)
def test_best_configurations_satisfy_every_constraint(dtype, params):
    assert violations(FAMILY, params, dtype) == []


@pytest.mark.parametrize(("dtype", "changes", "rule"), [
    ("float32", dict(BM=100), "BM divisible by TM"),
    ("float32", dict(TM=2, BM=64), "multiples of the 128-bit vector"),
    ("float32", dict(PAD=2), "16-byte aligned"),
    ("float32", dict(ASYNC=0, STAGES=3), "STAGES 1 or 2 without cp.async"),
    ("float32", dict(ASYNC=1, STAGES=1), "STAGES 1 or 2 without cp.async"),
    ("float32", dict(WARP_N=3), "WARP_N divides 32"),
    ("float32", dict(BM=64, BN=64, TM=4, TN=4, BK=8, MIN_BLOCKS=1), "loads per thread integral"),
    ("float32", dict(BM=256, BN=256, TM=4, TN=4), "threads per block ≤ 1024"),
    ("float32", dict(TM=16, TN=16, BM=256, BN=256, MIN_BLOCKS=1), "estimated registers"),
    ("float32", dict(BN=256, TN=16), "estimated registers"),  # 8×16 accumulators need one block per SM
    ("float32", dict(UNROLL=3), "UNROLL divides BK"),
    ("float64", dict(BK=64, BN=256, TN=16, STAGES=4, MIN_BLOCKS=1), "shared memory per block"),
    ("float64", dict(MIN_BLOCKS=2, BM=64, BK=32, STAGES=3), "fit one SM of sm_90"),
    ("float32", dict(COPY_SPREAD=8, ASYNC=0), "COPY_SPREAD ≥ 1 needs cp.async"),
    ("float32", dict(COPY_SPREAD=3), "COPY_SPREAD ≥ 1 needs cp.async"),  # 3 does not divide BK=32
    ("float32", dict(COPY_SPREAD=8, UNROLL=8), "COPY_SPREAD ≥ 1 needs cp.async"),  # the slice unrolled in part
    ("float32", dict(COPY_SPREAD=8, BK=12, UNROLL=12, VECTOR=0, A_T=0), "COPY_SPREAD ≥ 1 needs cp.async"),
    ("float32", dict(COPY_SPREAD=-1), "COPY_SPREAD ≥ 0"),
    ("float32", dict(A_T=3), "A_T and OUTER_ORDER are 0, 1 or 2"),
    ("float32", dict(OUTER_ORDER=3), "A_T and OUTER_ORDER are 0, 1 or 2"),
    ("float32", dict(A_T=2, BK=6, UNROLL=6, VECTOR=0), "A_T=2 needs BK a multiple of the vector width"),
    ("float32", dict(SWIZZLE=1, WARP_N=1), "SWIZZLE=1 needs at least 2 lanes"),
    ("float32", dict(SWIZZLE=2), "SWIZZLE and SCHEDULE 0 or 1"),
    ("float32", dict(SCHEDULE=2), "SWIZZLE and SCHEDULE 0 or 1"),
    ("float32", dict(A_T=2, COPY_SPREAD=8), "estimated registers"),  # two sets of 8×4 A fragments at 2 blocks/SM
])
def test_constraints_reject_bad_combinations(dtype, changes, rule):
    broken = violations(FAMILY, {**BASE, **changes}, dtype)
    assert any(rule in b for b in broken), broken


@pytest.mark.parametrize(("dtype", "changes"), [
    ("float64", dict(COPY_SPREAD=32, SWIZZLE=1, WARP_N=4, STAGES=3, MIN_BLOCKS=1)),  # a copy round every step
    ("float64", dict(COPY_SPREAD=1, STAGES=3, MIN_BLOCKS=1)),  # every copy at the first step
    ("float64", dict(COPY_SPREAD=4, A_T=2, STAGES=3, MIN_BLOCKS=1)),
    ("float32", dict(COPY_SPREAD=8, SWIZZLE=1, WARP_N=16)),
    ("int32", dict(COPY_SPREAD=16, A_T=0, BK=16, MIN_BLOCKS=1)),
    ("int32", dict(A_T=2, ASYNC=0, MIN_BLOCKS=1)),
])
def test_pipeline_layout_and_lane_options_are_valid(dtype, changes):
    assert violations(FAMILY, {**BASE, **changes}, dtype) == []


def test_spread_pipeline_counts_a_second_set_of_fragments():
    plain, spread = {**BASE}, {**BASE, "COPY_SPREAD": 8}
    assert regblock.estimated_registers(spread, 4) - regblock.estimated_registers(plain, 4) == 8 + 8
    assert regblock.estimated_registers(spread, 8) - regblock.estimated_registers(plain, 8) == 2 * (8 + 8)
    a_vectors = {**spread, "A_T": 2}  # A fragments for V steps at a time, two sets of them
    assert regblock.estimated_registers(a_vectors, 4) - regblock.estimated_registers(plain, 4) == 2 * (8 * 4 + 8) - 16


@pytest.mark.parametrize(("changes", "pipeline"), [(dict(COPY_SPREAD=0), False), (dict(COPY_SPREAD=8), True),
                                                   (dict(COPY_SPREAD=8, ASYNC=0, STAGES=2), False)])
def test_the_spread_pipeline_is_rendered_only_where_asked(changes, pipeline):
    params = {**BASE, **changes}
    source = render(Config.make(SQUARE, "regblock", "float32", params))
    assert ("main_loop<1, V>(" in source) == pipeline
    assert f"#define COPY_SPREAD {params['COPY_SPREAD']}" in source and "#define SWIZZLE 0" in source


@pytest.mark.parametrize("order", [0, 1, 2])
def test_the_outer_product_order_is_rendered(order):
    source = render(config("float64", OUTER_ORDER=order))
    assert f"#define OUTER_ORDER {order}" in source


def test_configurations_recorded_without_an_order_or_schedule_render_row_by_row_one_block_per_tile():
    params = {k: v for k, v in BASE.items() if k not in ("OUTER_ORDER", "SCHEDULE")}
    source = render(Config.make(SQUARE, "regblock", "float32", params))
    assert "#define OUTER_ORDER 0" in source and "#define SCHEDULE 0" in source
    assert launch(Config.make(SQUARE, "regblock", "float32", params)).resident_blocks_per_sm == 0


def test_one_block_per_tile_launches_the_tile_grid_on_any_gpu():
    geometry = launch(config(problem=Problem(1000, 777, 333), BM=128, BN=64))
    assert geometry.grid == (13, 8, 1) and geometry.resident_blocks_per_sm == 0
    assert geometry.grid_on(132) == geometry.grid_on(None) == (13, 8, 1)


@pytest.mark.parametrize(("problem", "sms", "blocks"), [
    (SQUARE, 132, 264),                       # 1024 tiles: two blocks on each of 132 SMs
    (Problem(1000, 777, 333), 132, 56),       # 56 tiles: one block each, never more blocks than tiles
    (SQUARE, None, 1024),                     # SMs unknown (no GPU): the tiles, as a row
])
def test_persistent_blocks_fill_the_sms_once(problem, sms, blocks):
    geometry = launch(config(problem=problem, SCHEDULE=1))
    assert geometry.resident_blocks_per_sm == 2   # MIN_BLOCKS of BASE
    assert geometry.grid_on(sms) == (blocks, 1, 1)


def test_the_persistent_schedule_is_compiled_in_only_when_asked_for():
    assert "#define SCHEDULE 1" in render(config(SCHEDULE=1))
    assert "#define SCHEDULE 0" in render(config(SCHEDULE=0))


def test_padding_rule_follows_the_element_size():
    assert violations(FAMILY, {**BASE, "PAD": 2, "MIN_BLOCKS": 1}, "float64") == []
    assert any("16-byte" in b for b in violations(FAMILY, {**BASE, "PAD": 2}, "float32"))


def test_scalar_loads_relax_the_vector_divisibility():
    params = {**BASE, "BM": 64, "BN": 64, "TM": 4, "TN": 4, "BK": 8, "MIN_BLOCKS": 1}
    assert any("loads per thread" in b for b in violations(FAMILY, params, "float32"))
    assert violations(FAMILY, {**params, "VECTOR": 0}, "float32") == []


@pytest.mark.parametrize("name", ["TM", "BK", "WARP_N", "MIN_BLOCKS", "UNROLL"])
def test_a_zero_parameter_is_one_clear_violation(name):
    assert violations(FAMILY, {**BASE, name: 0}, "float32") == [
        "BM, BN, BK, TM, TN, WARP_N, UNROLL and MIN_BLOCKS ≥ 1"]


# --- the H100 experiment -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def h100_configs() -> list[Config]:
    return valid_configs(load_experiment(H100))


def test_h100_space_holds_hundreds_to_thousands_of_configurations_and_the_best(h100_configs):
    regblock_sets = {(c.dtype, c.params) for c in h100_configs if c.family == "regblock"}
    assert 500 <= len(regblock_sets) <= 15_000
    for dtype, params in BEST:
        assert (dtype, tuple(sorted(params.items()))) in regblock_sets


def test_every_configuration_of_the_h100_experiment_renders(h100_configs):
    seen = set()
    for c in h100_configs:
        if (c.family, c.dtype, c.params) in seen:
            continue
        seen.add((c.family, c.dtype, c.params))
        source = render(c)
        assert source.startswith(f"// tuner kernel family '{c.family}'")
        assert re.search(r"typedef (float|double) real_t;", source)
        assert re.search(r'extern "C" __global__ void __launch_bounds__\([^)]*\)\s*matmul\(const real_t\* '
                         r"__restrict__ A, const real_t\* __restrict__ B, real_t\* __restrict__ C,\s*int M, int N, "
                         r"int K\)", source)


# --- compiling --------------------------------------------------------------------------------------------------

NVCC = shutil.which("nvcc") or next((p for p in ("/usr/local/cuda/bin/nvcc",) if Path(p).exists()), None)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
@pytest.mark.parametrize(("dtype", "params"), BEST)
@pytest.mark.slow
def test_best_configurations_compile_for_sm90_without_spilling(dtype, params, tmp_path):
    c = Config.make(SQUARE, "regblock", dtype, params)
    source = tmp_path / "kernel.cu"
    source.write_text(render(c))
    proc = subprocess.run([NVCC, "-cubin", "-arch=sm_90", "-O3", "-Xptxas", "-v", "-o", str(tmp_path / "k.cubin"),
                           str(source)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", proc.stderr)
    registers = re.search(r"Used (\d+) registers", proc.stderr)
    assert spills and registers, proc.stderr
    assert spills.groups() == ("0", "0")
    assert int(registers.group(1)) <= target("sm_90").register_budget(regblock.threads(params), params["MIN_BLOCKS"])
