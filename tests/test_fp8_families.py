"""The FP8 families off the GPU: inputs exact in the FP8 formats, the float64 references of per-tensor and
fine-grained scaling, the error bound, B's K-major tensor map, the families' rules and the vendor baseline's
kernel."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

from kernel_templates.wgmma_fp8_blocks import column_blocks
from tests.fp8_configs import FP8_CONFIGS
from tuner.backends.pycuda.vendor_gemm import baseline_kernel
from tuner.config import Config, Problem
from tuner.kernels import fp8_matmul
from tuner.kernels.discovery import get_family
from tuner.kernels.family import MATMUL
from tuner.kernels.render import render
from tuner.kernels.targets import target
from tuner.kernels.tensor_maps import TensorMapRefused, tensor_map_fields
from tuner.kernels.verify import random_inputs
from tuner.space.entry_space import violations

FP8_OUT_BFLOAT16 = ("float8_e4m3_out_bfloat16", "float8_e5m2_out_bfloat16", "float8_e4m3_e5m2_out_bfloat16")
FP8 = ("float8_e4m3", "float8_e5m2", "float8_e4m3_e5m2", *FP8_OUT_BFLOAT16)
STORAGE = {"float8_e4m3": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2,
           "float8_e4m3_e5m2": ml_dtypes.float8_e4m3fn, "float8_e4m3_out_bfloat16": ml_dtypes.float8_e4m3fn,
           "float8_e5m2_out_bfloat16": ml_dtypes.float8_e5m2, "float8_e4m3_e5m2_out_bfloat16": ml_dtypes.float8_e4m3fn}
B_STORAGE = {**STORAGE, "float8_e4m3_e5m2": ml_dtypes.float8_e5m2,
             "float8_e4m3_e5m2_out_bfloat16": ml_dtypes.float8_e5m2}
SM90 = target("sm_90a")


@pytest.mark.parametrize("dtype", FP8)
def test_inputs_are_fp8_values_and_the_scales_float32(dtype):
    problem = Problem(5, 130, 300)
    family = get_family("wgmma_fp8_blocks")
    inputs = random_inputs(family.buffers, problem, dtype, seed=0)
    assert inputs["A"].dtype == STORAGE[dtype] and inputs["A"].shape == (5, 300)
    assert inputs["B"].dtype == B_STORAGE[dtype] and inputs["B"].shape == (130, 300)   # K-major: N×K
    assert inputs["SA"].dtype == np.float32 and inputs["SA"].shape == (3, 5)        # K-blocks × rows of A
    assert inputs["SB"].dtype == np.float32 and inputs["SB"].shape == (3, 2)        # K-blocks × N-blocks
    for name, storage in (("A", STORAGE[dtype]), ("B", B_STORAGE[dtype])):
        values = inputs[name].astype(np.float64)
        assert np.array_equal(values.astype(storage).astype(np.float64), values)
        assert np.all(np.abs(values) >= 0.09) and np.all(np.abs(values) <= 1.0)


def test_the_per_tensor_reference_is_the_scaled_product_with_b_stored_transposed():
    problem = Problem(4, 6, 40)
    inputs = random_inputs(get_family("wgmma_fp8").buffers, problem, "float8_e4m3", seed=1)
    expected = fp8_matmul.tensor_reference(inputs, problem, seed=1)["C"].values
    a, b = inputs["A"].astype(np.float64), inputs["B"].astype(np.float64)
    by_hand = np.array([[sum(a[m, k] * b[n, k] for k in range(40)) for n in range(6)] for m in range(4)])
    assert np.allclose(expected, fp8_matmul.SCALE_A * fp8_matmul.SCALE_B * by_hand, rtol=1e-14)


def test_the_block_reference_scales_each_128_block_of_k_and_of_n():
    problem = Problem(3, 130, 260)
    inputs = random_inputs(get_family("wgmma_fp8_blocks").buffers, problem, "float8_e4m3", seed=2)
    expected = fp8_matmul.block_reference(inputs, problem, seed=2)["C"].values
    a, b = inputs["A"].astype(np.float64), inputs["B"].astype(np.float64)
    sa, sb = inputs["SA"].astype(np.float64), inputs["SB"].astype(np.float64)
    by_hand = np.zeros((3, 130))
    for m in range(3):
        for n in range(130):
            by_hand[m, n] = sum(sa[k // 128, m] * sb[k // 128, n // 128] * a[m, k] * b[n, k] for k in range(260))
    assert np.allclose(expected, by_hand, rtol=1e-13)


def test_the_bound_is_k_over_32_steps_of_14_bits():
    bound = fp8_matmul.tolerance("float8_e4m3", Problem(8192, 8192, 8192))
    assert bound.bound == pytest.approx(256 * 2.0 ** -14)
    assert "K = 8192" in bound.rule
    assert fp8_matmul.tolerance("float8_e5m2", Problem(1, 1, 16)).bound == pytest.approx(2.0 ** -14)


def test_b_is_described_k_major_in_bytes_and_k_must_be_a_multiple_of_16():
    family = get_family("wgmma_fp8")
    params = dict(FP8_CONFIGS[0][2])
    _, b_map = family.tensor_maps(params, 1)
    fields = tensor_map_fields(b_map, (3000, 2048), "float8_e4m3")   # N×K
    assert fields.data_type == 0 and fields.dims == (2048, 3000) and fields.box == (128, 64)
    with pytest.raises(TensorMapRefused, match="multiple of 16 float8_e4m3 elements"):
        tensor_map_fields(b_map, (3000, 1000), "float8_e4m3")


def test_every_tested_design_is_valid_and_the_rules_catch_what_does_not_fit():
    for name, dtype, params in FP8_CONFIGS:
        assert not violations(get_family(name), params, dtype, SM90), (name, dtype, params)
    base = dict(FP8_CONFIGS[0][2])
    two_slabs = dict(base, BM=256, BN=128, CONSUMERS=2, REGALLOC=1, PROMOTE=1)
    assert any("registers" in v for v in violations(get_family("wgmma_fp8"), two_slabs, "float8_e4m3", SM90))
    assert any("BK" in v for v in violations(get_family("wgmma_fp8"), dict(base, BK=64), "float8_e4m3", SM90))
    blocks = dict(FP8_CONFIGS[-1][2], BM=128, BN=192, CONSUMERS=2, REGALLOC=1)
    assert not violations(get_family("wgmma_fp8_blocks"), blocks, "float8_e4m3", SM90)
    too_wide = dict(blocks, BN=256)  # 128 accumulators and their 128 promoted sums
    assert any("registers" in v for v in violations(get_family("wgmma_fp8_blocks"), too_wide, "float8_e4m3", SM90))


def test_the_fp8_families_take_fp8_dtypes_only():
    for name in ("wgmma_fp8", "wgmma_fp8_blocks"):
        assert get_family(name).dtypes == FP8
    assert not set(FP8) & set(get_family("wgmma").dtypes)


def test_the_vendor_baseline_of_fp8_runs_the_per_tensor_product():
    assert baseline_kernel("float8_e4m3") is fp8_matmul.TENSOR_SCALED
    assert baseline_kernel("bfloat16") is MATMUL
    names = [a.name for a in fp8_matmul.TENSOR_SCALED.arguments]
    assert names == ["A", "B", "C", "M", "N", "K", "scale_a", "scale_b"]


def test_the_mixed_product_reads_e4m3_a_and_e5m2_b_and_runs_at_the_fp8_rate():
    from tuner.backends.pycuda.vendor_gemm import TORCH_FP8
    from tuner.peaks import compute_peak

    assert fp8_matmul.operand_dtypes("float8_e4m3_e5m2") == ("float8_e4m3", "float8_e5m2")
    assert fp8_matmul.operand_dtypes("float8_e5m2") == ("float8_e5m2", "float8_e5m2")
    assert set(TORCH_FP8) == {"float8_e4m3", "float8_e5m2"}
    assert compute_peak({"float8_e4m3_tensor_gflops": 1.9e6}, "float8_e4m3_e5m2") == 1.9e6


@pytest.mark.parametrize("dtype", FP8_OUT_BFLOAT16)
def test_the_bfloat16_outputs_multiply_as_their_fp8_dtype_and_write_c_in_bfloat16(dtype):
    from tuner.backends.pycuda.vendor_gemm import TORCH_FP8
    from tuner.peaks import key

    inputs = dtype.removesuffix("_out_bfloat16")
    family = get_family("wgmma_fp8")
    c = next(b for b in family.buffers if b.name == "C")
    assert c.dtype_of(dtype) == "bfloat16" and c.dtype_of(inputs) == "float32"
    assert fp8_matmul.operand_dtypes(dtype) == fp8_matmul.operand_dtypes(inputs)
    assert set(fp8_matmul.operand_dtypes(dtype)) <= set(TORCH_FP8)
    assert key(dtype, "tensor") == key(inputs, "tensor")
    problem = Problem(333, 520, 208)
    summed = fp8_matmul.tolerance(inputs, problem).bound
    assert fp8_matmul.tolerance(dtype, problem).bound == pytest.approx(summed + 2.0 ** -8 * (1 + summed))
    assert "bfloat16" in fp8_matmul.tolerance(dtype, problem).rule


@pytest.mark.parametrize("family", ["wgmma_fp8", "wgmma_fp8_blocks"])
def test_split_k_is_refused_where_c_is_bfloat16(family):
    params = dict(FP8_CONFIGS[0][2], SPLIT_K=2)
    if family == "wgmma_fp8_blocks":
        params = dict(params, SCALING="blocks", BN=64, BM=64)
    assert not violations(get_family(family), params, "float8_e4m3", SM90)
    reasons = violations(get_family(family), params, "float8_e4m3_out_bfloat16", SM90)
    assert any("SPLIT_K 1 and STREAM_K 0 where C is written in 16 bits" in r for r in reasons), reasons


def test_the_vendor_gemms_write_c_in_each_16_bit_output_dtype():
    from tuner.backends.pycuda.cublas import GEMM_EX_TYPES, TORCH_16_BIT
    from tuner.backends.pycuda.cublaslt_fp8 import OUTPUT_TYPES
    from tuner.precision import PRECISIONS, input_dtype, rounds_output
    from tuner.tuning.baseline import BASELINE_DTYPES

    narrow = [d for d in BASELINE_DTYPES if rounds_output(d)]
    assert len(narrow) == 5
    for dtype in narrow:
        output = PRECISIONS[dtype].output
        if fp8_matmul.is_fp8(dtype):
            assert output in OUTPUT_TYPES and baseline_kernel(dtype) is fp8_matmul.TENSOR_SCALED
            continue
        inputs, c_type, compute = GEMM_EX_TYPES[dtype]
        assert (inputs, compute) == (GEMM_EX_TYPES[input_dtype(dtype)][0], "CUBLAS_COMPUTE_32F")
        assert c_type == inputs and TORCH_16_BIT[dtype] == output
        assert baseline_kernel(dtype) is MATMUL


@pytest.mark.parametrize("bn", [64, 128, 192, 256])
def test_the_shared_memory_the_family_asks_for_holds_the_scales_the_kernel_keeps(bn):
    """The family's count of B's scale blocks per tile (its shared memory) is the template's COL_BLOCKS."""
    params = dict(FP8_CONFIGS[-1][2], BM=128, BN=bn, CONSUMERS=2, REGALLOC=1, SCALING="blocks")
    source = render(Config.make(Problem(512, 512, 512), "wgmma_fp8_blocks", "float8_e4m3", params))
    assert re.search(r"#define COL_BLOCKS (\d+)", source).group(1) == str(column_blocks(params))
