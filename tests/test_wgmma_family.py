"""The wgmma family's static logic: its rules, launch geometry, tensor maps and cost model (no GPU, no compiler)."""

from __future__ import annotations

import pytest

from kernel_templates import wgmma
from tuner.compile.nvcc import arch_options
from tuner.config import Config, Problem
from tuner.kernels.discovery import get_family
from tuner.kernels.render import Launch, launch, render
from tuner.kernels.targets import runs_on, target
from tuner.kernels.tensor_maps import TensorMap, TensorMapRefused, tensor_map_fields
from tuner.space.entry_space import violations

FAST = dict(BM=128, BN=256, BK=64, STAGES=4, CONSUMERS=2, CLUSTER=2, PERSISTENT=1, GROUP=8, REGALLOC=1)
MINIMAL = dict(BM=64, BN=128, BK=64, STAGES=4, CONSUMERS=1, CLUSTER=1, PERSISTENT=0, GROUP=1, REGALLOC=0)
HOPPER = target("sm_90a")


def broken(params: dict, dtype: str = "bfloat16", arch: str = "sm_90a") -> list[str]:
    return violations(get_family("wgmma"), params, dtype, target(arch))


def test_the_fast_and_the_minimal_configurations_are_valid_in_every_dtype():
    for dtype in ("bfloat16", "float16"):
        assert broken(FAST, dtype) == [] and broken(MINIMAL, dtype) == []
    assert broken({**FAST, "BK": 32, "BM": 256, "BN": 128}, "tf32") == []
    assert broken({**MINIMAL, "BK": 32}, "tf32") == []


def test_the_family_needs_the_sm_90a_target():
    reasons = broken(FAST, arch="sm_90")
    assert any("needs compile.arch sm_90a" in r for r in reasons)
    assert get_family("wgmma").dtypes == ("bfloat16", "float16", "tf32", "bfloat16_out_bfloat16", "float16_out_float16")


@pytest.mark.parametrize("dtype", ["bfloat16_out_bfloat16", "float16_out_float16"])
def test_a_16_bit_c_takes_the_16_bit_designs_but_not_split_k(dtype):
    assert broken(FAST, dtype) == [] and broken(MINIMAL, dtype) == []
    reasons = broken({**FAST, "SPLIT_K": 2}, dtype)
    assert reasons == ["SPLIT_K 1 and STREAM_K 0 where C is written in 16 bits (an _out_ dtype): the parts add their "
                       "partial sums in C, which would round each of them to 16 bits"]
    assert broken({**FAST, "CLUSTER": 1, "STREAM_K": 1}, dtype) == reasons
    assert broken({**FAST, "SPLIT_K": 2}, dtype.split("_out_")[0]) == []


@pytest.mark.parametrize(("dtype", "pair", "rounding"), [
    ("bfloat16_out_bfloat16", "__nv_bfloat162", "__floats2bfloat162_rn"),
    ("float16_out_float16", "__half2", "__floats2half2_rn"),
])
def test_a_16_bit_c_is_stored_as_rounded_pairs(dtype, pair, rounding):
    source = render(Config.make(Problem(333, 520, 208), "wgmma", dtype, FAST))
    assert f"typedef {pair[:-1]} out_t;" in source and "out_t* __restrict__ C" in source
    pointer = f"reinterpret_cast<{pair}*>(C + static_cast<size_t>(m) * N + n)"
    assert f"*{pointer} = {rounding}(d[s][i], d[s][i + 1]);" in source
    assert "float2" not in source and "#error" not in source
    split = render(Config.make(Problem(333, 520, 208), "wgmma", dtype, {**FAST, "SPLIT_K": 2}))
    assert "#error \"split-K and stream-K add partial sums in C" in split  # the compiler refuses what the rule does
    streamed = render(Config.make(Problem(333, 520, 208), "wgmma", dtype, {**FAST, "CLUSTER": 1, "STREAM_K": 2}))
    assert "#error \"split-K and stream-K add partial sums in C" in streamed
    plain = render(Config.make(Problem(333, 520, 208), "wgmma", dtype.split("_out_")[0], FAST))
    assert "typedef float out_t;" in plain and "make_float2(d[s][i], d[s][i + 1])" in plain


@pytest.mark.parametrize(("change", "dtype", "words"), [
    ({"BK": 32}, "bfloat16", "128 bytes"),
    ({"BK": 64}, "tf32", "128 bytes"),
    ({"BN": 96}, "bfloat16", "multiples of 64"),
    ({"BM": 320}, "bfloat16", "at most 256"),
    ({"BM": 64}, "bfloat16", "whole 64-row slabs"),           # two consumers cannot split 64 rows
    ({"CONSUMERS": 3}, "bfloat16", "CONSUMERS 1 or 2"),
    ({"STAGES": 5}, "bfloat16", "shared memory per block"),  # 5 × 48 KB of stages exceed the 227 KB opt-in
    ({"STAGES": 1}, "bfloat16", "STAGES ≥ 2"),
    ({"CLUSTER": 3}, "bfloat16", "CLUSTER 1, 2 or 4"),
    ({"CONSUMERS": 1, "REGALLOC": 1, "BM": 64}, "bfloat16", "REGALLOC=1 needs two"),
    ({"BK": 32, "BM": 256, "BN": 256}, "tf32", "registers"),    # 2 slabs of m64n256 per consumer: 256 accumulators
    ({"REGALLOC": 0, "BK": 32}, "tf32", "registers"),           # 128 accumulators + fragments past 168
])
def test_rules_name_what_breaks(change, dtype, words):
    reasons = broken({**FAST, **change}, dtype)
    assert any(words in r for r in reasons), reasons


def test_one_consumer_with_a_whole_tile_of_accumulators_is_refused():
    # 128×256 with one consumer: two m64n256 slabs, 256 accumulator registers per thread (ptxas spills them).
    assert any("registers" in r for r in broken({**MINIMAL, "BM": 128, "BN": 256}))
    assert broken({**MINIMAL, "BM": 64, "BN": 256}) == []


def test_register_estimates_follow_the_slabs():
    assert wgmma.accumulators(FAST, "bfloat16") == 128        # one m64n256 slab per consumer
    assert wgmma.accumulators({**FAST, "BM": 256, "BN": 128}, "bfloat16") == 128  # two m64n128 slabs
    tf32 = {**FAST, "BK": 32, "BM": 128, "BN": 256}
    assert wgmma.wgmma_n(tf32, "tf32") == 128 and wgmma.consumer_share(tf32, "tf32") == 128
    assert wgmma.estimated_registers(tf32, "tf32") == 128 + 32 + wgmma.REGISTERS_BESIDE_ACCUMULATORS
    assert wgmma.register_budget(FAST) == 232
    assert wgmma.register_budget({**FAST, "REGALLOC": 0}) == 168
    assert wgmma.register_budget(MINIMAL) == 255


def test_launch_geometry():
    config = Config.make(Problem(1000, 3000, 2000), "wgmma", "bfloat16", FAST)
    geometry = launch(config)
    # 8 tiles along M make 4 clusters of 2, times 12 tiles along N: 48 units, 96 blocks.
    assert geometry.block == (384, 1, 1) and geometry.grid == (96, 1, 1) and geometry.cluster == (2, 1, 1)
    assert geometry.dynamic_shared_bytes == 4 * (128 + 256) * 64 * 2 + 1024
    assert geometry.resident_blocks_per_sm == 1 and geometry.arch == "sm_90a" and geometry.extended
    assert geometry.tensor_maps == (TensorMap("A", (64, 128)), TensorMap("B", (64, 64)))
    tf32 = launch(Config.make(Problem(1000, 3000, 2000), "wgmma", "tf32", {**MINIMAL, "BK": 32}))
    assert tf32.tensor_maps == (TensorMap("A", (32, 64)), TensorMap("B", (32, 32))) and tf32.cluster == (1, 1, 1)
    assert tf32.block == (256, 1, 1) and tf32.resident_blocks_per_sm == 0 and tf32.grid == (16 * 24, 1, 1)


def test_a_persistent_grid_takes_whole_clusters():
    plain = Launch("k", (384, 1, 1), (1000, 1, 1), 0, resident_blocks_per_sm=1)
    assert plain.grid_on(132) == (132, 1, 1) and not plain.extended
    clustered = Launch("k", (384, 1, 1), (1000, 1, 1), 0, resident_blocks_per_sm=1, cluster=(4, 1, 1))
    assert clustered.grid_on(134) == (132, 1, 1) and clustered.grid_on(None) == (1000, 1, 1)
    assert Launch("k", (384, 1, 1), (6, 1, 1), 0, resident_blocks_per_sm=1, cluster=(2, 1, 1)).grid_on(132) == (6, 1, 1)


def test_tensor_map_fields():
    fields = tensor_map_fields(TensorMap("A", (64, 128)), (4096, 2048), "bfloat16")
    assert fields.dims == (2048, 4096) and fields.strides == (4096,) and fields.box == (64, 128)
    assert (fields.data_type, fields.swizzle, fields.element_strides) == (9, 3, (1, 1))
    assert tensor_map_fields(TensorMap("B", (64, 64)), (777, 3000), "float16").data_type == 6
    tf32 = tensor_map_fields(TensorMap("B", (32, 32)), (2000, 3000), "tf32")
    assert tf32.data_type == 7 and tf32.strides == (12000,)


def test_rows_that_are_not_whole_16_bytes_are_refused_with_the_buffer_named():
    with pytest.raises(TensorMapRefused, match=r"buffer A \(1000×777 bfloat16\) has rows of 1554 bytes.*multiple of 8"):
        tensor_map_fields(TensorMap("A", (64, 128)), (1000, 777), "bfloat16")
    with pytest.raises(TensorMapRefused, match="multiple of 4 tf32 elements"):
        tensor_map_fields(TensorMap("A", (32, 128)), (1000, 777), "tf32")


@pytest.mark.parametrize(("spec", "words"), [
    (TensorMap("A", (64, 512)), "1 to 256"),
    (TensorMap("A", (128, 64)), "at most 128"),      # 256 bytes of bfloat16 under a 128-byte swizzle
    (TensorMap("A", (4, 64)), "multiple of 16"),      # 8 bytes
    (TensorMap("A", (64, 64), swizzle=96), "not one of"),
])
def test_boxes_the_driver_refuses_are_refused_first(spec, words):
    with pytest.raises(TensorMapRefused, match=words):
        tensor_map_fields(spec, (4096, 4096), "bfloat16")


def test_architecture_specific_targets():
    assert arch_options("sm_90a") == ["-gencode=arch=compute_90a,code=sm_90a"]
    assert arch_options("sm_90") == ["-arch=sm_90"]
    assert runs_on("sm_90a", "sm_90") and not runs_on("sm_90a", "sm_80") and runs_on("sm_80", "sm_80")


def test_cost_model():
    problem = Problem(4096, 4096, 4096)
    s = 2
    assert wgmma.global_bytes(FAST, problem, s) == s * (4096 * 4096 * 16 + 4096 * 4096 * 32) + 4 * 4096 * 4096
    intensities = wgmma.extra_intensities(FAST, s)
    assert intensities["block_intensity"] == pytest.approx(2 * 128 * 256 / (384 * 2))
    assert intensities["l2_intensity"] == pytest.approx(2 * 128 * 256 / ((128 + 128) * 2))
    assert wgmma.units(FAST, Problem(4096, 4096, 4096)) == 16 * 16


def test_the_template_uses_the_layout_the_emulation_checks():
    """tests/test_wgmma_layout.py emulates these descriptors and fragment offsets; keep them in step."""
    bf16 = render(Config.make(Problem(256, 256, 256), "wgmma", "bfloat16", FAST))
    assert "descriptor(stage_a + (consumer * 64 + s * 64) * 128 + kk * 32, 16, 1024)" in bf16
    assert "descriptor(stage_b + kk * 16 * 128, B_BOX_BYTES, 1024)" in bf16
    assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16" in bf16 and "0, 1;" in bf16
    tf32 = render(Config.make(Problem(256, 256, 256), "wgmma", "tf32", {**FAST, "BK": 32, "BM": 256, "BN": 128}))
    assert "descriptor(stage_a + kk * 32, 16, 1024)" in tf32
    assert "load_shared(stage_b + fragment_offset[s][r] + kk * 8 * 128)" in tf32
    assert "m64n256k8.f32.tf32.tf32" in tf32


SPLIT = {**MINIMAL, "SPLIT_K": 4}


@pytest.mark.parametrize(("split_k", "words"), [(0, "SPLIT_K ≥ 1"), (-2, "SPLIT_K ≥ 1"), (17, "SPLIT_K 1 to 16")])
def test_split_k_is_one_to_sixteen(split_k, words):
    assert any(words in r for r in broken({**MINIMAL, "SPLIT_K": split_k})), broken({**MINIMAL, "SPLIT_K": split_k})


def test_split_k_in_every_dtype():
    assert broken({**SPLIT, "SPLIT_K": 16}) == [] and broken(SPLIT, "float16") == []
    assert broken({**SPLIT, "BK": 32, "BM": 128, "BN": 64}, "tf32") == []


def test_a_configuration_without_split_k_is_one_without_a_split():
    """Recordings made before the parameter existed: their configurations computed K in one piece."""
    problem = Problem(1000, 3000, 2000)
    assert wgmma.split_k(FAST) == 1
    assert wgmma.grid(FAST, problem) == wgmma.grid({**FAST, "SPLIT_K": 1}, problem)
    assert wgmma.global_bytes(FAST, problem, 2) == wgmma.global_bytes({**FAST, "SPLIT_K": 1}, problem, 2)
    with_default = render(Config.make(problem, "wgmma", "bfloat16", {**FAST, "SPLIT_K": 1}))
    without = render(Config.make(problem, "wgmma", "bfloat16", FAST))
    assert with_default.splitlines()[2:] == without.splitlines()[2:]   # all but the header naming the values


def test_the_splits_of_a_unit_are_work_items_of_their_own():
    decode = Problem(16, 4096, 14336)   # one tile row, 32 tile columns of 128: 32 units
    assert wgmma.units(SPLIT, decode) == 32 and wgmma.grid(SPLIT, decode) == (128, 1, 1)
    assert launch(Config.make(decode, "wgmma", "bfloat16", {**SPLIT, "SPLIT_K": 8})).grid == (256, 1, 1)
    clustered = {**FAST, "SPLIT_K": 3}   # 48 units of clusters of 2 (test_launch_geometry), 3 splits each
    assert launch(Config.make(Problem(1000, 3000, 2000), "wgmma", "bfloat16", clustered)).grid == (288, 1, 1)


def test_each_split_after_the_first_reads_and_writes_c_once_more():
    problem = Problem(16, 4096, 14336)
    one = wgmma.global_bytes({**SPLIT, "SPLIT_K": 1}, problem, 2)
    assert wgmma.global_bytes(SPLIT, problem, 2) - one == 2 * 4 * 16 * 4096 * 3
    assert wgmma.extra_intensities(SPLIT, 2) == wgmma.extra_intensities(MINIMAL, 2)


def test_split_k_renders_the_serial_reduction_only_where_asked():
    plain = render(Config.make(Problem(256, 256, 256), "wgmma", "bfloat16", {**FAST, "SPLIT_K": 1}))
    assert "split_flags" not in plain and "barrier.sync 1" not in plain and "bar.sync" not in plain
    split = render(Config.make(Problem(256, 256, 256), "wgmma", "bfloat16", {**FAST, "SPLIT_K": 2}))
    assert "#define MAX_SPLIT_TILES (1 << 20)" in split and wgmma.MAX_SPLIT_TILES == 1 << 20   # the same bound
    assert "barrier.sync 1, 256;" in split   # the two consumer warpgroups, not the producer
    assert "ld.acquire.gpu.global.u32" in split and "st.release.gpu.global.u32" in split
    tf32 = render(Config.make(Problem(256, 256, 256), "wgmma", "tf32", {**MINIMAL, "BK": 32, "SPLIT_K": 3}))
    assert "barrier.sync 1, 128;" in tf32 and "__ldcg(C + " in tf32


@pytest.mark.parametrize(("dtype", "tile"), [("bfloat16", dict(BM=256, BN=192)),           # 232 of 232 registers
                                             ("tf32", dict(BM=128, BN=256, BK=32))])       # two slabs of m64n128
def test_the_reduction_takes_registers_a_tile_at_the_budget_lacks(dtype, tile):
    """ptxas spilled these with SPLIT_K > 1 (and kept one-slab tf32 tiles and the ladder's designs within budget)."""
    assert broken({**FAST, **tile}, dtype) == []
    assert any("registers" in r for r in broken({**FAST, **tile, "SPLIT_K": 2}, dtype))
    assert broken({**FAST, "BM": 256, "BN": 128, "BK": 32, "SPLIT_K": 2}, "tf32") == []


@pytest.mark.parametrize(("tile", "consumers", "regalloc"),
                         [((256, 192), 2, 1), ((128, 256), 2, 0), ((256, 128), 2, 0)])
def test_an_atomic_reduction_takes_no_registers_from_a_tile_at_the_budget(tile, consumers, regalloc):
    """ptxas kept these free of spills with atomic split-K and stream-K; reduced in turn they spill."""
    params = {**FAST, "BM": tile[0], "BN": tile[1], "CONSUMERS": consumers, "REGALLOC": regalloc, "CLUSTER": 1}
    for decomposition in ({"SPLIT_K": 2}, {"STREAM_K": 1}):
        assert broken({**params, **decomposition, "REDUCE": "atomic"}) == []
        assert any("registers" in r for r in broken({**params, **decomposition, "REDUCE": "serial"}))


DECODE = {**MINIMAL, "A_BOX": 8}


@pytest.mark.parametrize(("a_box", "bm"), [(12, 64), (48, 64), (64, 64), (128, 64), (-8, 64), (96, 128)])
def test_a_box_is_a_multiple_of_8_that_divides_the_tile(a_box, bm):
    assert any("A_BOX" in r for r in broken({**MINIMAL, "BM": bm, "A_BOX": a_box})), (a_box, bm)


def test_a_box_in_every_dtype_and_schedule():
    for a_box in (0, 8, 16, 32):
        assert broken({**MINIMAL, "A_BOX": a_box}) == [] and broken({**FAST, "A_BOX": a_box}, "float16") == []
    assert broken({**FAST, "A_BOX": 64, "BM": 256, "BN": 128}, "bfloat16_out_bfloat16") == []
    assert broken({**MINIMAL, "BK": 32, "BM": 128, "BN": 64, "A_BOX": 8}, "tf32") == []


def test_a_copies_boxes_of_a_box_rows():
    """The tensor map's box and the kernel's copies agree: A_BOX rows a box, one box without it."""
    problem = Problem(17, 4096, 4096)
    assert launch(Config.make(problem, "wgmma", "bfloat16", DECODE)).tensor_maps[0] == TensorMap("A", (64, 8))
    assert launch(Config.make(problem, "wgmma", "bfloat16", MINIMAL)).tensor_maps[0] == TensorMap("A", (64, 64))
    assert wgmma.a_box(MINIMAL) == wgmma.a_box({**MINIMAL, "A_BOX": 0}) == 64
    boxed = render(Config.make(problem, "wgmma", "bfloat16", DECODE))
    assert "#define A_BOX 8" in boxed and "const int a_boxes = a_rows > 0 ? (a_rows + A_BOX - 1) / A_BOX : 0;" in boxed
    assert "barrier_expect_bytes(full_s, a_boxes * A_BOX_BYTES + B_STAGE_BYTES);" in boxed
    assert "tile_m * BM + r * A_BOX);" in boxed
    # The stages keep their layout: the wgmma reads 64 rows of A wherever it read them.
    assert wgmma.shared_bytes(DECODE, 2) == wgmma.shared_bytes(MINIMAL, 2)
    assert "descriptor(stage_a + (consumer * 64 + s * 64) * 128 + kk * 32, 16, 1024)" in boxed


def test_a_configuration_without_a_box_renders_as_before_it():
    problem = Problem(1000, 3000, 2000)
    without = render(Config.make(problem, "wgmma", "bfloat16", FAST))
    assert "A_BOX" not in without and "barrier_expect_bytes(full_s, STAGE_BYTES);" in without
    assert render(Config.make(problem, "wgmma", "bfloat16", {**FAST, "A_BOX": 0})).splitlines()[2:] == \
        without.splitlines()[2:]


def test_a_box_in_the_fp8_families():
    fp8 = dict(BM=64, BN=128, BK=128, STAGES=4, CONSUMERS=1, CLUSTER=1, PERSISTENT=0, GROUP=8, REGALLOC=0, A_BOX=16)
    for family in ("wgmma_fp8", "wgmma_fp8_blocks"):
        assert violations(get_family(family), fp8, "float8_e4m3", HOPPER) == []
        config = Config.make(Problem(1, 4096, 4096), family, "float8_e4m3", fp8)
        assert launch(config).tensor_maps[0] == TensorMap("A", (128, 16))
        assert "#define A_BOX 16" in render(config)
