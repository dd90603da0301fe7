"""Verification of a kernel's output: its inputs, the reference, the poison and the tolerances.

Inputs are fresh for every problem and dtype, drawn from ``input_seed`` and the problem (so each problem
gets its own, reproducibly), and never zero: floats uniform in ±[0.1, 1], int32 in ±{1..4}.

The reference is computed once per problem on the CPU in float64. Above ``FULL_REFERENCE_LIMIT``
(M·N·K > 2^30) only a sample is computed, exactly in float64: ``SAMPLE_ROWS`` random rows and
``SAMPLE_COLS`` random columns of C (all of them where the matrix has fewer). Every element of C is still
checked for having been written.

The output is poisoned before the verified launch (NaN for floats, ``INT_SENTINEL`` for int32); any
element left at the poison fails.

Tolerances on the relative error ‖C − ref‖ / ‖ref‖ (Frobenius norm over the compared elements):
``4·√K·ε`` with ε the dtype's machine epsilon (float32 1.19e-7, float64 2.22e-16). A dot product of K
terms summed in order accumulates about K rounding errors of random sign, so its relative error grows
like √K·ε/2 for the random signed inputs above (the worst case, K·ε, is far too loose to catch bugs);
the factor 4 leaves room of about 8× over that typical error, while any indexing mistake moves the
error to order 1. float32 at K = 1000: 1.5e-5; at K = 4096: 3.1e-5. float64 at K = 4096: 5.7e-14.
int32 must match exactly: with |a|, |b| ≤ 4 every sum stays far inside int32 and the float64 reference
is exact (each partial sum is an integer below 2^53).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tuner.config import DTYPES, Problem

FULL_REFERENCE_LIMIT = 2**30
SAMPLE_ROWS = 64
SAMPLE_COLS = 64
INT_SENTINEL = 0x7FFFFFFF
FLOAT_POISON_WORD = 0xFFFFFFFF
"""All bits set: a NaN as float32 and, word-pairs together, as float64."""
TOLERANCE_FACTOR = 4.0

NUMPY_DTYPES: dict[str, type[np.generic]] = {"float32": np.float32, "float64": np.float64, "int32": np.int32}


def poison_word(dtype: str) -> int:
    """The 32-bit pattern the output is filled with (by memset_d32) before the verified launch."""
    return INT_SENTINEL if dtype == "int32" else FLOAT_POISON_WORD


def tolerance(dtype: str, K: int) -> float:
    """The largest accepted ‖C − ref‖ / ‖ref‖ (floats) or number of wrong elements (int32)."""
    if dtype == "int32":
        return 0.0
    return TOLERANCE_FACTOR * math.sqrt(max(K, 1)) * float(np.finfo(NUMPY_DTYPES[dtype]).eps)


def input_rng(problem: Problem, dtype: str, seed: int) -> np.random.Generator:
    return np.random.default_rng([seed, problem.M, problem.N, problem.K, DTYPES.index(dtype)])


def make_inputs(problem: Problem, dtype: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Row-major A (M×K) and B (K×N), random and non-zero, as C-contiguous arrays of the dtype."""
    rng = input_rng(problem, dtype, seed)

    def draw(rows: int, cols: int) -> np.ndarray:
        sign = rng.choice(np.array([-1, 1]), size=(rows, cols))
        if dtype == "int32":
            magnitude = 4 if 16 * problem.K < 2**31 else 1
            return (sign * rng.integers(1, magnitude + 1, size=(rows, cols))).astype(np.int32)
        return (sign * rng.uniform(0.1, 1.0, size=(rows, cols))).astype(NUMPY_DTYPES[dtype])

    return draw(problem.M, problem.K), draw(problem.K, problem.N)


@dataclass(frozen=True)
class Reference:
    """float64 reference values: all of C, or the sampled rows and columns of C."""

    rows: np.ndarray | None
    cols: np.ndarray | None
    row_values: np.ndarray
    col_values: np.ndarray | None = None

    @property
    def sampled(self) -> bool:
        return self.rows is not None

    def pick(self, C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The elements of C that this reference covers, and their reference values, flattened alike."""
        if not self.sampled:
            return C.ravel(), self.row_values.ravel()
        got = np.concatenate([C[self.rows, :].ravel(), C[:, self.cols].ravel()])
        want = np.concatenate([self.row_values.ravel(), self.col_values.ravel()])
        return got, want


def reference(A: np.ndarray, B: np.ndarray, seed: int = 0) -> Reference:
    M, K = A.shape
    N = B.shape[1]
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    if M * N * K <= FULL_REFERENCE_LIMIT:
        return Reference(None, None, A64 @ B64)
    rng = np.random.default_rng([seed, M, N, K, 1])
    rows = np.sort(rng.choice(M, size=min(SAMPLE_ROWS, M), replace=False))
    cols = np.sort(rng.choice(N, size=min(SAMPLE_COLS, N), replace=False))
    return Reference(rows, cols, A64[rows, :] @ B64, A64 @ B64[:, cols])


@dataclass(frozen=True)
class Verdict:
    ok: bool
    error: float | None
    reason: str = ""


def unwritten(C: np.ndarray, dtype: str) -> int:
    """Elements still holding the poison."""
    return int(np.count_nonzero(C == INT_SENTINEL)) if dtype == "int32" else int(np.count_nonzero(np.isnan(C)))


def check(C: np.ndarray, ref: Reference, dtype: str, K: int) -> Verdict:
    """Compare a kernel's output with the reference; see the module text for the bounds."""
    left = unwritten(C, dtype)
    if left:
        poison = f"{INT_SENTINEL:#x}" if dtype == "int32" else "NaN"
        return Verdict(False, None, f"{left} of {C.size} elements of C were never written (still {poison})")
    got, want = ref.pick(C)
    where = f"{'sampled' if ref.sampled else 'all'} {want.size} elements"
    bound = tolerance(dtype, K)
    if dtype == "int32":
        wrong = int(np.count_nonzero(got.astype(np.int64) != want.astype(np.int64)))
        if wrong:
            return Verdict(False, float(wrong), f"{wrong} of {where} differ from the exact int64 reference")
        return Verdict(True, 0.0)
    norm = float(np.linalg.norm(want))
    error = float(np.linalg.norm(got.astype(np.float64) - want)) / norm if norm else float(np.abs(got).max())
    if not math.isfinite(error) or error > bound:
        return Verdict(False, error, f"‖C − ref‖/‖ref‖ = {error:.3g} over {where} exceeds the {dtype} "
                                     f"tolerance {bound:.3g} (4·√K·ε, K = {K})")
    return Verdict(True, error)
