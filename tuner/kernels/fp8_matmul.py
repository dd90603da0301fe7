"""The FP8 matrix product as Hopper runs it: C (M×N, float32, or bfloat16 for the ``_out_bfloat16`` dtypes) =
s_A·s_B · A (M×K) · B (K×N), A row-major and B stored K-major (as Bᵀ, N×K row-major: the layout FP8 wgmma and
cuBLASLt's FP8 GEMM read), with per-tensor scales, or with fine-grained scales (A per 1×128 block along K, B per
128×128 block): its arguments, float64 reference, tolerance and compulsory traffic.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from tuner.config import DTYPE_BYTES, Problem
from tuner.kernels import matmul
from tuner.kernels.arguments import OUTPUT, SECOND_OPERAND, Argument, Buffer, Scalar
from tuner.kernels.family import Kernel, ceil_div
from tuner.kernels.verify import Expected, Tolerance
from tuner.precision import PRECISIONS, input_dtype

SCALE_A = 1.5
SCALE_B = 0.625
"""The per-tensor scales every problem is multiplied with: not powers of two, so that a kernel that drops one (or
applies it twice) is wrong, and with few significand bits, so that the scaled reference stays exact in float64."""
SCALE_BLOCK = 128
"""Elements along K (and, for B, along N) that share one fine-grained scale."""
ACCUMULATION_BITS = 14
"""Significand bits the FP8 tensor core keeps while adding a 32-term step of products to its accumulator (DeepSeek-V3
§3.3.2: "around 14 bits" on Hopper)."""
STEP = 32
"""Products one FP8 wgmma adds per output element (its K)."""

_A = Buffer("A", lambda p: (p.M, p.K))
_B = Buffer("B", lambda p: (p.N, p.K), dtype=SECOND_OPERAND)
_C = Buffer("C", lambda p: (p.M, p.N), intent="out", dtype=OUTPUT)
_SIZES = (Scalar("M", lambda p: p.M), Scalar("N", lambda p: p.N), Scalar("K", lambda p: p.K))

TENSOR_ARGUMENTS: tuple[Argument, ...] = (
    _A, _B, _C, *_SIZES,
    Scalar("scale_a", lambda p: SCALE_A, ctype="float32"),
    Scalar("scale_b", lambda p: SCALE_B, ctype="float32"),
)
BLOCK_ARGUMENTS: tuple[Argument, ...] = (
    _A, _B, _C,
    Buffer("SA", lambda p: (ceil_div(p.K, SCALE_BLOCK), p.M), dtype="float32"),
    Buffer("SB", lambda p: (ceil_div(p.K, SCALE_BLOCK), ceil_div(p.N, SCALE_BLOCK)), dtype="float32"),
    *_SIZES,
)
"""SA holds A's scales K-block by K-block (row kb: the scales of every row of A for k in [128·kb, 128·kb + 128)),
so that the threads of a warp, which own consecutive rows, read consecutive scales."""


def _k_major(inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return inputs["A"].astype(np.float64), inputs["B"].astype(np.float64).T


def tensor_reference(inputs: Mapping[str, np.ndarray], problem: Problem, seed: int) -> dict[str, Expected]:
    a, b = _k_major(inputs)
    return {"C": matmul.product_reference(a * SCALE_A, b * SCALE_B, seed)}


def block_reference(inputs: Mapping[str, np.ndarray], problem: Problem, seed: int) -> dict[str, Expected]:
    """Each element of A multiplied by its row's scale of its K-block, each of B by its 128×128 block's scale, then
    the product (exact in float64: an FP8 value times a float32 scale has at most 28 significand bits)."""
    a, b = _k_major(inputs)
    k_block = np.arange(problem.K) // SCALE_BLOCK
    n_block = np.arange(problem.N) // SCALE_BLOCK
    sa, sb = inputs["SA"].astype(np.float64), inputs["SB"].astype(np.float64)
    return {"C": matmul.product_reference(a * sa[k_block, :].T, b * sb[np.ix_(k_block, n_block)], seed)}


def tolerance(dtype: str, problem: Problem) -> Tolerance:
    """(K/32)·2⁻¹⁴: the products of FP8 values are exact, but the tensor core adds each 32-term step to its
    accumulator keeping about 14 significand bits, truncating, so that the K/32 errors may share one sign. A kernel
    that promotes its sums to float32 every few steps errs far less; this bound holds for both. A C written in
    bfloat16 adds one rounding (:func:`tuner.kernels.matmul.with_output_rounding`)."""
    steps = max(ceil_div(problem.K, STEP), 1)
    summed = Tolerance(steps * 2.0 ** -ACCUMULATION_BITS,
                       f"(K/32)·2⁻¹⁴ (FP8 tensor-core sums keep about 14 bits per 32-term step), K = {problem.K}")
    return matmul.with_output_rounding(summed, dtype)


def compulsory_bytes(problem: Problem, size: int) -> int:
    """A and B read once in FP8, C written once in float32 (the scales are a 128th of A at most)."""
    M, N, K = problem.M, problem.N, problem.K
    return size * (M * K + K * N) + DTYPE_BYTES["float32"] * M * N


TENSOR_SCALED = Kernel(TENSOR_ARGUMENTS, tensor_reference, tolerance)
"""The per-tensor-scaled FP8 product: what the FP8 families with per-tensor scales and the vendor's FP8 GEMM run."""


def is_fp8(dtype: str) -> bool:
    return dtype.startswith("float8_")


def operand_dtypes(dtype: str) -> tuple[str, str]:
    """The FP8 formats of A and B: both the dtype's, or e4m3 and e5m2 for the mixed product (whatever C's type)."""
    second = PRECISIONS[dtype].second_operand
    first = input_dtype(dtype)
    return (f"float8_{dtype.split('_')[1]}", second) if second else (first, first)
