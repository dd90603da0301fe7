"""What every matrix-multiplication family shares: C (M×N) = A (M×K) · B (K×N), row-major.

Its arguments (A, B, C, M, N, K), its float64 reference (sampled rows and columns of C above
``FULL_REFERENCE_LIMIT``), its tolerance on ‖C − ref‖ / ‖ref‖ (4·√K·ε on CUDA cores, K·u on tensor cores, int32
exact: the README's section on precisions says why), its operation count and its compulsory traffic. These are the
defaults of :class:`tuner.kernels.family.Family`.
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
    """The bound on ‖C − ref‖ / ‖ref‖: 4·√K·ε rounding to nearest (errors of random sign), K·u where tensor cores
    round each block's sum toward zero (errors of one sign), 0 for integers."""
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
