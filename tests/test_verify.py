"""Verification: inputs, the matmul reference (full or sampled), tolerances, poison and the comparison."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tuner.config import Problem
from tuner.kernels import matmul
from tuner.kernels.arguments import Buffer
from tuner.kernels.matmul import FULL_REFERENCE_LIMIT, SAMPLE_COLS, SAMPLE_ROWS
from tuner.kernels.verify import (
    INT_SENTINEL,
    Full,
    Tolerance,
    check,
    check_all,
    euclidean_norm,
    poisoned,
    random_inputs,
)

BUFFERS = [a for a in matmul.ARGUMENTS if isinstance(a, Buffer)]


def make_inputs(problem: Problem, dtype: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    inputs = random_inputs(BUFFERS, problem, dtype, seed)
    return inputs["A"], inputs["B"]


def tolerance(dtype: str, K: int) -> float:
    return matmul.tolerance(dtype, Problem(1, 1, K)).bound


def reference(A: np.ndarray, B: np.ndarray, seed: int = 0):
    return matmul.product_reference(A, B, seed)


def verdict_of(out: np.ndarray, ref, dtype: str, K: int):
    return check(out, ref, dtype, matmul.tolerance(dtype, Problem(1, 1, K)))


def test_tolerances_per_dtype():
    assert tolerance("int32", 4096) == 0.0
    assert tolerance("float32", 4096) == pytest.approx(4 * 64 * 2.0**-23)
    assert tolerance("float64", 1000) == pytest.approx(4 * math.sqrt(1000) * 2.0**-52)
    assert 1e-5 < tolerance("float32", 1000) < 2e-5
    assert tolerance("float32", 1) < tolerance("float32", 100) < tolerance("float32", 10_000)


def test_inputs_are_nonzero_reproducible_and_fresh_per_problem():
    a1, b1 = make_inputs(Problem(30, 20, 10), "float32", seed=7)
    a2, b2 = make_inputs(Problem(30, 20, 10), "float32", seed=7)
    a3, _ = make_inputs(Problem(30, 20, 11), "float32", seed=7)
    assert a1.shape == (30, 10) and b1.shape == (10, 20) and a1.dtype == np.float32
    assert np.array_equal(a1, a2) and np.array_equal(b1, b2)
    assert not np.array_equal(a1, a3[:, :10])
    assert np.all(np.abs(a1) >= 0.1) and np.all(np.abs(a1) <= 1.0)
    assert (a1 < 0).any() and (a1 > 0).any()
    ai, bi = make_inputs(Problem(30, 20, 10), "int32", seed=7)
    assert ai.dtype == np.int32 and np.all(ai != 0) and np.all(np.abs(bi) <= 4)


def test_correct_output_passes_and_small_errors_are_caught():
    A, B = make_inputs(Problem(64, 48, 1000), "float32", seed=0)
    ref = reference(A, B)
    good = (A @ B).astype(np.float32)
    verdict = verdict_of(good, ref, "float32", 1000)
    assert verdict.ok and verdict.error < tolerance("float32", 1000)
    bad = good.copy()
    bad[5, 7] += 1.0
    verdict = verdict_of(bad, ref, "float32", 1000)
    assert not verdict.ok and verdict.error > tolerance("float32", 1000) and "exceeds" in verdict.reason


def test_unwritten_elements_fail():
    A, B = make_inputs(Problem(8, 8, 8), "float64", seed=0)
    out = A.astype(np.float64) @ B
    out[-1, -1] = np.nan
    verdict = verdict_of(out, reference(A, B), "float64", 8)
    assert not verdict.ok and "1 of 64 elements" in verdict.reason and "NaN" in verdict.reason
    Ai, Bi = make_inputs(Problem(8, 8, 8), "int32", seed=0)
    outi = (Ai.astype(np.int64) @ Bi).astype(np.int32)
    outi[0, :3] = INT_SENTINEL
    verdict = verdict_of(outi, reference(Ai, Bi), "int32", 8)
    assert not verdict.ok and "3 of 64" in verdict.reason


def test_int32_must_match_exactly():
    A, B = make_inputs(Problem(16, 12, 300), "int32", seed=3)
    exact = (A.astype(np.int64) @ B).astype(np.int32)
    assert verdict_of(exact, reference(A, B), "int32", 300) == verdict_of(exact, reference(A, B), "int32", 300)
    assert verdict_of(exact, reference(A, B), "int32", 300).ok
    exact[2, 3] += 1
    verdict = verdict_of(exact, reference(A, B), "int32", 300)
    assert not verdict.ok and verdict.error == 1.0


def test_large_problems_compare_sampled_rows_and_columns():
    problem = Problem(2048, 2048, 512)  # M·N·K = 2^31 > 2^30
    assert problem.M * problem.N * problem.K > FULL_REFERENCE_LIMIT
    A, B = make_inputs(problem, "float32", seed=1)
    ref = reference(A, B, seed=1)
    assert ref.sampled and len(ref.rows) == SAMPLE_ROWS and len(ref.cols) == SAMPLE_COLS
    out = A @ B
    assert verdict_of(out, ref, "float32", 512).ok
    out[ref.rows[3], 100] = 0.0
    assert not verdict_of(out, ref, "float32", 512).ok
    small = reference(*make_inputs(Problem(10, 10, 10), "float32", seed=1))
    assert not small.sampled




def test_only_inputs_are_drawn_and_outputs_can_be_poisoned():
    inputs = random_inputs(BUFFERS, Problem(3, 4, 5), "float64", seed=0)
    assert set(inputs) == {"A", "B"}
    assert np.isnan(poisoned((2, 3), "float64")).all() and np.isnan(poisoned((2,), "float32")).all()
    assert (poisoned((4,), "int32") == INT_SENTINEL).all()


def test_every_output_is_checked_and_the_worst_error_reported():
    expected = {"X": Full(np.ones(4)), "Y": Full(np.full(4, 2.0))}
    close = {"X": np.ones(4), "Y": np.full(4, 2.0) * (1 + 1e-9)}
    verdict = check_all(close, expected, {"X": "float64", "Y": "float64"}, Tolerance(1e-6, "test bound"))
    assert verdict.ok and verdict.error == pytest.approx(1e-9)
    far = {**close, "Y": np.zeros(4)}
    verdict = check_all(far, expected, {"X": "float64", "Y": "float64"}, Tolerance(1e-6, "test bound"))
    assert not verdict.ok and "‖Y − ref‖" in verdict.reason and "test bound" in verdict.reason
    assert math.isclose(verdict.error, 1.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_norm_is_numpys_without_blas(dtype):
    values = np.random.default_rng(3).standard_normal((301, 77)).astype(dtype)
    assert euclidean_norm(values) == pytest.approx(float(np.linalg.norm(values.astype(np.float64))), rel=1e-12)
    assert euclidean_norm(np.zeros(5, dtype)) == 0.0
