"""What every matrix-multiplication family shares: C (M×N) = A (M×K) · B (K×N), row-major.

Its arguments (A, B, C, M, N, K), its float64 reference, its tolerance, its operation count and its
compulsory traffic. These are the defaults of :class:`tuner.kernels.family.Family`.

The reference is computed on the CPU in float64. Above ``FULL_REFERENCE_LIMIT`` (M·N·K > 2^30) only a sample
is computed, exactly in float64: ``SAMPLE_ROWS`` random rows and ``SAMPLE_COLS`` random columns of C (all of
them where the matrix has fewer). Every element of C is still checked for having been written.

Tolerance on ‖C − ref‖ / ‖ref‖, with the inputs exact in the dtype (tuner.kernels.verify) so that the reference is the
exact product of the values the kernel read:

- float32 and float64 (CUDA cores, or float64 on tensor cores, all rounding to nearest): ``4·√K·ε`` with ε the
  dtype's machine epsilon (float32 1.19e-7, float64 2.22e-16). A dot product of K terms summed in order
  accumulates about K rounding errors of random sign, so its relative error grows like √K·ε/2 for random signed
  inputs (the worst case, K·ε, is far too loose to catch bugs); the factor 4 leaves room of about 8× over that
  typical error, while any indexing mistake moves the error to order 1. float32 at K = 1000: 1.5e-5; at
  K = 4096: 3.1e-5. float64 at K = 4096: 5.7e-14. A float32 request computed with TF32 inputs (10 significand
  bits) errs by about 3e-4 and fails.
- tf32, bfloat16, float16 (tensor cores, float32 accumulation): ``K·u`` with u = 2⁻²⁴, float32's unit roundoff.
  The products of exact inputs are exact in float32; the tensor cores add them to the accumulator in blocks and
  round each sum toward zero, so the errors share one sign and grow like K·u/(2·block) rather than √K·u (K = 4096:
  bound 2.4e-4). Computing in a lower precision than declared is caught: TF32 inputs rounded to bfloat16 err by
  about 1.6e-3, float16 accumulation by about 1e-2.
- int32 must match exactly: with |a|, |b| ≤ 4 every sum stays far inside int32 and the float64 reference is exact
  (each partial sum is an integer below 2^53).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from tuner.config import Problem
from tuner.kernels.arguments import ACCUMULATOR, Argument, Buffer, Scalar
from tuner.kernels.verify import Expected, Full, Tolerance
from tuner.precision import PRECISIONS

FULL_REFERENCE_LIMIT = 2**30
SAMPLE_ROWS = 64
SAMPLE_COLS = 64
TOLERANCE_FACTOR = 4.0

ARGUMENTS: tuple[Argument, ...] = (
    Buffer("A", lambda p: (p.M, p.K)),
    Buffer("B", lambda p: (p.K, p.N)),
    Buffer("C", lambda p: (p.M, p.N), intent="out", dtype=ACCUMULATOR),
    Scalar("M", lambda p: p.M),
    Scalar("N", lambda p: p.N),
    Scalar("K", lambda p: p.K),
)


def flops(problem: Problem) -> int:
    return 2 * problem.M * problem.N * problem.K


def compulsory_bytes(problem: Problem, size: int) -> int:
    """A and B read once, C written once."""
    M, N, K = problem.M, problem.N, problem.K
    return size * (M * K + K * N + M * N)


def tolerance(dtype: str, problem: Problem) -> Tolerance:
    precision = PRECISIONS[dtype]
    if precision.significand_bits is None:
        return Tolerance(0.0, "exact")
    K = max(problem.K, 1)
    if precision.tensor_cores:
        u = PRECISIONS[precision.accumulator].unit_roundoff
        return Tolerance(K * u, f"K·u, u = 2⁻²⁴ (float32 accumulation on tensor cores), K = {problem.K}")
    epsilon = 2 * precision.unit_roundoff
    return Tolerance(TOLERANCE_FACTOR * math.sqrt(K) * epsilon, f"4·√K·ε, K = {problem.K}")


@dataclass(frozen=True)
class Sampled:
    """Reference values of the sampled rows and columns of C."""

    rows: np.ndarray
    cols: np.ndarray
    row_values: np.ndarray
    col_values: np.ndarray
    sampled: bool = True

    def pick(self, actual: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        got = np.concatenate([actual[self.rows, :].ravel(), actual[:, self.cols].ravel()])
        want = np.concatenate([self.row_values.ravel(), self.col_values.ravel()])
        return got, want


def product_reference(A: np.ndarray, B: np.ndarray, seed: int = 0) -> Expected:
    """A·B in float64: all of it, or sampled rows and columns above FULL_REFERENCE_LIMIT."""
    M, K = A.shape
    N = B.shape[1]
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    if M * N * K <= FULL_REFERENCE_LIMIT:
        return Full(A64 @ B64)
    rng = np.random.default_rng([seed, M, N, K, 1])
    rows = np.sort(rng.choice(M, size=min(SAMPLE_ROWS, M), replace=False))
    cols = np.sort(rng.choice(N, size=min(SAMPLE_COLS, N), replace=False))
    return Sampled(rows, cols, A64[rows, :] @ B64, A64 @ B64[:, cols])


def reference(inputs: Mapping[str, np.ndarray], problem: Problem, seed: int) -> dict[str, Expected]:
    return {"C": product_reference(inputs["A"], inputs["B"], seed)}
