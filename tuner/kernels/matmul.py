"""What every matrix-multiplication family shares: C (M×N) = A (M×K) · B (K×N), row-major.

Its arguments (A, B, C, M, N, K), its float64 reference (sampled rows and columns of C above
``FULL_REFERENCE_LIMIT``), its tolerance on ‖C − ref‖ / ‖ref‖ (4·√K·ε on CUDA cores, K·u on tensor cores, plus one
rounding where C is written in 16 bits, int32 exact: the README's section on precisions says why), its operation
count and its compulsory traffic. These are the defaults of :class:`tuner.kernels.family.Family`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from tuner.config import Problem
from tuner.kernels.arguments import OUTPUT, Argument, Buffer, Scalar
from tuner.kernels.verify import Expected, Full, Tolerance
from tuner.precision import PRECISIONS

FULL_REFERENCE_LIMIT = 2**30
SAMPLE_ROWS = 64
SAMPLE_COLS = 64
TOLERANCE_FACTOR = 4.0

ARGUMENTS: tuple[Argument, ...] = (
    Buffer("A", lambda p: (p.M, p.K)),
    Buffer("B", lambda p: (p.K, p.N)),
    Buffer("C", lambda p: (p.M, p.N), intent="out", dtype=OUTPUT),
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
    """The bound on ‖C − ref‖ / ‖ref‖: 4·√K·ε rounding to nearest (errors of random sign), K·u where tensor cores
    round each block's sum toward zero (errors of one sign), 0 for integers."""
    precision = PRECISIONS[dtype]
    if precision.significand_bits is None:
        return Tolerance(0.0, "exact")
    K = max(problem.K, 1)
    if precision.tensor_cores:
        u = PRECISIONS[precision.accumulator].unit_roundoff
        summed = Tolerance(K * u, f"K·u, u = 2⁻²⁴ (float32 accumulation on tensor cores), K = {problem.K}")
        return with_output_rounding(summed, dtype)
    epsilon = 2 * precision.unit_roundoff
    return Tolerance(TOLERANCE_FACTOR * math.sqrt(K) * epsilon, f"4·√K·ε, K = {problem.K}")


def with_output_rounding(summed: Tolerance, dtype: str) -> Tolerance:
    """The bound once the accumulator's C is rounded to a narrower output of unit roundoff u_out: each element
    becomes C·(1 + δ), |δ| ≤ u_out, so ‖C·δ‖ ≤ u_out·‖C‖ ≤ u_out·(1 + b)·‖ref‖ on top of the sums' bound b."""
    output = PRECISIONS[dtype].output
    if output == PRECISIONS[dtype].accumulator:
        return summed
    u_out = PRECISIONS[output].unit_roundoff
    exponent = str(PRECISIONS[output].significand_bits).translate(SUPERSCRIPT)
    return Tolerance(summed.bound + u_out * (1 + summed.bound),
                     f"{summed.rule}, + u·(1 + that), u = 2⁻{exponent} (C rounded to {output})")


SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


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
