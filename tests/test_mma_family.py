"""The mma family: its static rules, launch geometry, shared memory, cost model and rendered source."""

from __future__ import annotations

import itertools

import pytest

from kernel_templates import mma
from tuner.config import Config, Problem
from tuner.kernels.discovery import get_family
from tuner.kernels.model import cost
from tuner.kernels.render import launch, render
from tuner.space.entry_space import violations

FAMILY = get_family("mma")
SQUARE = Problem(4096, 4096, 4096)

# The configurations each dtype is expected to be fastest with on an H100 (large tiles, 8 warps of 64×64 or
# 64×32, 3-4 stages); the default space must hold them.
FLAGSHIPS = {
    "bfloat16": dict(BM=128, BN=256, BK=32, WM=64, WN=64, STAGES=4, SWIZZLE=1, GROUP_M=8, MMA_K=16),
    "float16": dict(BM=256, BN=128, BK=32, WM=64, WN=64, STAGES=4, SWIZZLE=1, GROUP_M=8, MMA_K=16),
    "tf32": dict(BM=128, BN=256, BK=16, WM=64, WN=64, STAGES=4, SWIZZLE=1, GROUP_M=8, MMA_K=8),
    "float64": dict(BM=128, BN=128, BK=16, WM=64, WN=32, STAGES=3, SWIZZLE=0, GROUP_M=8, MMA_K=8),
}


def config(dtype: str, problem: Problem = SQUARE, **changes: int) -> Config:
    return Config.make(problem, "mma", dtype, {**FLAGSHIPS[dtype], **changes})


def broken(dtype: str, **changes: int) -> list[str]:
    return violations(FAMILY, {**FLAGSHIPS[dtype], **changes}, dtype)


def default_space(dtype: str) -> list[dict]:
    names = FAMILY.parameter_names
    values = itertools.product(*(p.default for p in FAMILY.parameters))
    combos = (dict(zip(names, v, strict=True)) for v in values)
    return [c for c in combos if not violations(FAMILY, c, dtype)]


# --- rules -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", mma.DTYPES)
def test_the_flagship_configurations_are_valid_and_in_the_default_space(dtype):
    assert broken(dtype) == []
    assert FLAGSHIPS[dtype] in default_space(dtype)


@pytest.mark.parametrize("dtype", mma.DTYPES)
def test_the_default_space_holds_a_few_hundred_configurations_of_each_dtype(dtype):
    assert 100 <= len(default_space(dtype)) <= 500


def test_the_family_declares_the_tensor_dtypes():
    assert FAMILY.dtypes == ("float64", "tf32", "bfloat16", "float16")


@pytest.mark.parametrize(("dtype", "shapes"), [("float64", (4, 8, 16)), ("tf32", (8,)), ("bfloat16", (16,)),
                                               ("float16", (16,))])
def test_mma_k_must_be_a_shape_of_the_dtype(dtype, shapes):
    for k in (4, 8, 16):
        bk = {4: 16, 8: 16, 16: 32}[k]
        rule_broken = any("MMA_K is a k of the dtype" in b for b in broken(dtype, MMA_K=k, BK=bk))
        assert rule_broken == (k not in shapes)


def test_warp_tiles_must_be_whole_mma_tiles_and_fill_the_block():
    assert any("WM a multiple of 16" in b for b in broken("bfloat16", WM=8, BM=64))
    assert any("WN of 16" in b for b in broken("bfloat16", WN=8))
    assert any("BM divisible by WM" in b for b in broken("bfloat16", BM=64, WM=128))


def test_slices_hold_two_or_four_k_steps():
    assert any("BK 2·MMA_K or 4·MMA_K" in b for b in broken("bfloat16", BK=16))    # one k-step
    assert broken("tf32", BK=32) == []                                           # four
    assert any("BK 2·MMA_K or 4·MMA_K" in b for b in broken("tf32", BK=64))        # eight
    assert any("BK 2·MMA_K or 4·MMA_K" in b for b in broken("float64", MMA_K=4, BK=32))


def test_float64_rows_read_by_scalar_loads_span_a_bank_line():
    assert any("rows read by scalar loads" in b for b in broken("float64", BK=8, MMA_K=4))


def test_copies_must_be_whole_per_thread():
    # A 64×32 bfloat16 slice of A is 256 chunks: whole per thread for 4 warps (128 threads), not for 16 (512).
    assert any("16-byte chunks of a slice" in b for b in broken("bfloat16", BM=64, BN=64, WM=16, WN=16))
    assert not any("16-byte chunks" in b for b in broken("bfloat16", BM=64, BN=64, WM=32, WN=32))


def test_float64_takes_padded_rows_only():
    assert any("SWIZZLE 0" in b for b in broken("float64", SWIZZLE=1))
    assert broken("tf32", SWIZZLE=0) == []


def test_register_and_shared_memory_limits_are_checked():
    # A 64×64 warp tile of float64 accumulators alone is 256 registers a thread.
    assert any("estimated registers" in b for b in broken("float64", WN=64, BN=128))
    # Four stages of 256×256×64 bfloat16 slices are 256 KB.
    assert any("shared memory per block" in b for b in broken("bfloat16", BM=256, BN=256, BK=64, STAGES=4))


def test_broken_sizes_are_reported_as_preconditions_only():
    assert broken("bfloat16", BM=0) == ["BM, BN, BK, WM, WN, STAGES, GROUP_M and MMA_K ≥ 1"]


# --- geometry and shared memory ---------------------------------------------------------------------------------


def test_launch_has_one_block_per_tile_and_a_warp_per_warp_tile():
    geometry = launch(config("bfloat16", Problem(1000, 3000, 777)))
    assert geometry.block == (8 * 32, 1, 1)
    assert geometry.grid == (8 * 12, 1, 1)          # ⌈1000/128⌉ · ⌈3000/256⌉


@pytest.mark.parametrize(("dtype", "changes", "expected"), [
    # swizzled ldmatrix rows: no padding; 4 stages of 128×32 + 32×256 two-byte elements
    ("bfloat16", {}, 4 * (128 * 32 + 32 * 256) * 2),
    # padded ldmatrix rows: one 16-byte chunk per row
    ("bfloat16", {"SWIZZLE": 0}, 4 * (128 * (64 + 16) + 32 * (512 + 16))),
    # tf32: A by ldmatrix (swizzled), B by scalar loads (two chunks of padding per row)
    ("tf32", {}, 4 * (128 * 64 + 16 * (1024 + 32))),
    # float64: both by scalar loads
    ("float64", {}, 3 * (128 * (128 + 32) + 16 * (1024 + 32))),
])
def test_shared_memory_of_the_stages(dtype, changes, expected):
    c = config(dtype, **changes)
    assert mma.shared_bytes(c.param_dict, c.element_bytes) == expected
    assert launch(c).dynamic_shared_bytes == expected


def test_estimated_registers_count_accumulators_fragments_and_copies():
    # bfloat16 64×64 warp tile: 128 float accumulators, 2 × (4·4 + 8·2) fragment registers, 6 copies, 56 beside
    assert FAMILY.estimated_registers(FLAGSHIPS["bfloat16"], 2) == 128 + 64 + 6 + 56
    # float64 64×32, m16n8k8: 128 registers of doubles, 2 × (4·8 + 4·4), 8 copies, 12 beside
    assert FAMILY.estimated_registers(FLAGSHIPS["float64"], 8) == 128 + 96 + 8 + 12


# --- cost model ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("dtype", "size", "accumulator"), [("float64", 8, 8), ("tf32", 4, 4), ("bfloat16", 2, 4),
                                                            ("float16", 2, 4)])
def test_global_bytes_count_inputs_per_block_row_and_column_and_c_at_the_accumulators_size(dtype, size, accumulator):
    problem = Problem(1000, 3000, 777)
    c = config(dtype, problem)
    BM, BN = c["BM"], c["BN"]
    expected = size * (1000 * 777 * -(-3000 // BN) + 777 * 3000 * -(-1000 // BM)) + accumulator * 1000 * 3000
    model = cost(c)
    assert model.global_bytes == expected
    assert model.compulsory_bytes == size * (1000 * 777 + 777 * 3000) + accumulator * 1000 * 3000
    assert model.flops == 2 * 1000 * 3000 * 777


def test_extra_intensities_of_the_block_and_warp_tiles():
    c = config("bfloat16")
    intensities = cost(c).extra_intensities
    assert intensities["block_intensity"] == pytest.approx(2 * 128 * 256 / (384 * 2))
    assert intensities["warp_intensity"] == pytest.approx(2 * 64 * 64 / (128 * 2))


# --- rendering ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("dtype", "instruction", "header"), [
    ("bfloat16", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "#include <cuda_bf16.h>"),
    ("float16", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "#include <cuda_fp16.h>"),
    ("tf32", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", None),
    ("float64", "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64", None),
])
def test_the_source_holds_the_dtypes_mma_and_types(dtype, instruction, header):
    source = render(config(dtype))
    assert instruction in source
    assert "cp.async.cg.shared.global" in source
    assert (header in source) if header else "#include" not in source
    element = {"bfloat16": "__nv_bfloat16", "float16": "__half", "tf32": "float", "float64": "double"}[dtype]
    assert f"typedef {element} elem_t;" in source
    assert f"typedef {'double' if dtype == 'float64' else 'float'} acc_t;" in source
    assert "__launch_bounds__(THREADS, 1)" in source


@pytest.mark.parametrize("k", [4, 8, 16])
def test_float64_renders_each_mma_shape(k):
    source = render(config("float64", MMA_K=k, BK=2 * k if k > 4 else 16, WM=32, WN=32, BM=64, BN=64))
    assert f"mma.sync.aligned.m16n8k{k}.row.col.f64.f64.f64.f64" in source


def test_ldmatrix_transposes_b_for_the_16_bit_types_only():
    assert "ldmatrix_x4_trans(f.b" in render(config("bfloat16"))
    assert "ldmatrix_x4_trans(f.b" not in render(config("tf32"))
