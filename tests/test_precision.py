"""The tensor-core dtypes: inputs exact in the dtype, the accumulator's output, and a tolerance that passes a
correct float32 accumulation (even one rounding toward zero, as tensor cores do) but fails a kernel that
computes in a lower precision than the one declared."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tuner.config import DTYPE_BYTES, Problem
from tuner.kernels.matmul import ARGUMENTS, product_reference, tolerance
from tuner.kernels.verify import Full, check, poisoned, random_inputs
from tuner.precision import PRECISIONS, input_dtype, numpy_dtype, round_to, rounds_output

BUFFERS = [a for a in ARGUMENTS if hasattr(a, "intent")]


def _significand_bits_used(values: np.ndarray) -> int:
    """The most significand bits (after the leading one) any of the float32 values needs."""
    bits = values.astype(np.float32).view(np.uint32) & np.uint32(0x7FFFFF)
    trailing = [23 if b == 0 else (int(b) & -int(b)).bit_length() - 1 for b in bits.ravel()]
    return 23 - min(trailing)


@pytest.mark.parametrize("dtype", ["tf32", "bfloat16", "float16"])
def test_inputs_are_exact_in_the_dtype(dtype):
    inputs = random_inputs(BUFFERS, Problem(37, 29, 41), dtype, seed=3)
    precision = PRECISIONS[dtype]
    for values in inputs.values():
        assert values.dtype == numpy_dtype(dtype)
        assert _significand_bits_used(values.astype(np.float64)) <= precision.significand_bits - 1
        assert np.all(np.abs(values.astype(np.float64)) >= 0.09)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_the_plain_dtypes_draw_what_they_always_drew(dtype):
    rng = np.random.default_rng([0, 16, 8, 4, ["float32", "float64", "int32"].index(dtype)])
    drawn = random_inputs(BUFFERS, Problem(16, 8, 4), dtype, seed=0)["A"]
    sign = rng.choice(np.array([-1, 1]), size=(16, 4))
    if dtype == "int32":
        expected = (sign * rng.integers(1, 5, size=(16, 4))).astype(np.int32)
    else:
        expected = (sign * rng.uniform(0.1, 1.0, size=(16, 4))).astype(dtype)
    np.testing.assert_array_equal(drawn, expected)


def test_tf32_rounds_to_nearest_even():
    one = 1.0
    values = np.array([one + 2**-11, one + 3 * 2**-11, one + 2**-11 + 2**-20, -(one + 2**-12)])
    np.testing.assert_array_equal(round_to(values, "tf32"), [1.0, 1.0 + 2**-9, 1.0 + 2**-10, -1.0])


def test_the_output_is_the_accumulator():
    c = next(b for b in BUFFERS if b.name == "C")
    assert [c.dtype_of(d) for d in ("bfloat16", "float16", "tf32", "float64")] == ["float32"] * 3 + ["float64"]
    assert c.nbytes(Problem(3, 5, 7), "bfloat16") == 3 * 5 * 4
    assert DTYPE_BYTES["bfloat16"] == 2 and DTYPE_BYTES["tf32"] == 4
    assert np.isnan(poisoned((3, 5), "float32")).all()


@pytest.mark.parametrize(("dtype", "inputs", "output"), [
    ("bfloat16_out_bfloat16", "bfloat16", "bfloat16"), ("float16_out_float16", "float16", "float16"),
    ("float8_e4m3_out_bfloat16", "float8_e4m3", "bfloat16"), ("float8_e5m2_out_bfloat16", "float8_e5m2", "bfloat16"),
    ("float8_e4m3_e5m2_out_bfloat16", "float8_e4m3_e5m2", "bfloat16"),
])
def test_a_16_bit_output_keeps_the_inputs_and_the_float32_sums(dtype, inputs, output):
    precision, plain = PRECISIONS[dtype], PRECISIONS[inputs]
    assert (precision.output, precision.accumulator, plain.output) == (output, "float32", "float32")
    assert replace(precision, dtype=inputs, output="float32") == plain
    assert input_dtype(dtype) == inputs and rounds_output(dtype) and not rounds_output(inputs)
    c = next(b for b in BUFFERS if b.name == "C")
    assert c.dtype_of(dtype) == output and c.nbytes(Problem(3, 5, 7), dtype) == 3 * 5 * 2
    assert np.isnan(poisoned((3, 5), output).astype(np.float64)).all()


def test_the_new_dtypes_come_last_so_that_earlier_inputs_stay_the_same():
    assert list(PRECISIONS)[-5:] == ["bfloat16_out_bfloat16", "float16_out_float16", "float8_e4m3_out_bfloat16",
                                     "float8_e5m2_out_bfloat16", "float8_e4m3_e5m2_out_bfloat16"]


def test_a_16_bit_output_adds_one_rounding_to_the_bound():
    problem = Problem(333, 520, 208)
    summed = tolerance("bfloat16", problem).bound
    assert tolerance("bfloat16_out_bfloat16", problem).bound == summed + 2.0 ** -8 * (1 + summed)
    assert tolerance("float16_out_float16", problem).bound == summed + 2.0 ** -11 * (1 + summed)
    assert "u = 2⁻⁸ (C rounded to bfloat16)" in tolerance("bfloat16_out_bfloat16", problem).rule
    assert "u = 2⁻¹¹ (C rounded to float16)" in tolerance("float16_out_float16", problem).rule


@pytest.mark.parametrize("dtype", ["bfloat16_out_bfloat16", "float16_out_float16"])
def test_a_float32_tensor_core_sum_rounded_to_the_output_passes(dtype):
    problem = Problem(333, 520, 208)
    inputs = random_inputs(BUFFERS, problem, dtype, seed=0)
    assert inputs["A"].dtype == numpy_dtype(input_dtype(dtype))
    summed = _tensor_core_product(inputs["A"], inputs["B"], block=16)
    written = summed.astype(numpy_dtype(PRECISIONS[dtype].output))
    reference = product_reference(inputs["A"], inputs["B"])
    verdict = check(written, reference, PRECISIONS[dtype].output, tolerance(dtype, problem))
    assert verdict.ok and verdict.error > tolerance(input_dtype(dtype), problem).bound, verdict


def _tensor_core_product(A: np.ndarray, B: np.ndarray, block: int) -> np.ndarray:
    """Exact products added to a float32 accumulator ``block`` at a time, each sum rounded toward zero: how tensor
    cores accumulate."""
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    acc = np.zeros((A.shape[0], B.shape[1]), np.float32)
    for k in range(0, A.shape[1], block):
        exact = acc.astype(np.float64) + A64[:, k:k + block] @ B64[k:k + block, :]
        nearest = exact.astype(np.float32)
        too_far = np.abs(nearest.astype(np.float64)) > np.abs(exact)
        acc = np.where(too_far, np.nextafter(nearest, np.float32(0)), nearest)
    return acc


def _case(dtype: str, K: int) -> tuple[dict[str, np.ndarray], Problem]:
    problem = Problem(24, 20, K)
    return random_inputs(BUFFERS, problem, dtype, seed=1), problem


@pytest.mark.parametrize("dtype,block", [("tf32", 8), ("bfloat16", 16), ("float16", 16), ("tf32", 4)])
@pytest.mark.parametrize("K", [9, 333, 4096])
def test_a_correct_tensor_core_accumulation_passes(dtype, block, K):
    inputs, problem = _case(dtype, K)
    got = _tensor_core_product(inputs["A"], inputs["B"], block)
    verdict = check(got, product_reference(inputs["A"], inputs["B"]), "float32", tolerance(dtype, problem))
    assert verdict.ok, verdict.reason
    assert verdict.error < tolerance(dtype, problem).bound / 4


@pytest.mark.parametrize("K", [333, 4096])
def test_tf32_math_on_a_float32_request_is_wrong(K):
    inputs, problem = _case("float32", K)
    got = (round_to(inputs["A"].astype(np.float64), "tf32").astype(np.float64)
           @ round_to(inputs["B"].astype(np.float64), "tf32").astype(np.float64)).astype(np.float32)
    verdict = check(got, product_reference(inputs["A"], inputs["B"]), "float32", tolerance("float32", problem))
    assert not verdict.ok and "exceeds the float32 tolerance" in verdict.reason


@pytest.mark.parametrize("K", [333, 4096])
def test_bfloat16_math_on_a_tf32_request_is_wrong(K):
    inputs, problem = _case("tf32", K)
    lowered = {n: round_to(v.astype(np.float64), "bfloat16") for n, v in inputs.items()}
    got = _tensor_core_product(lowered["A"], lowered["B"], 8)
    verdict = check(got, product_reference(inputs["A"], inputs["B"]), "float32", tolerance("tf32", problem))
    assert not verdict.ok


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_16_bit_accumulator_is_wrong(dtype):
    inputs, problem = _case(dtype, 2048)
    A64, B64 = inputs["A"].astype(np.float64), inputs["B"].astype(np.float64)
    acc = np.zeros((problem.M, problem.N), np.float16)
    for k in range(problem.K):
        acc = (acc.astype(np.float64) + np.outer(A64[:, k], B64[k, :])).astype(np.float16)
    verdict = check(acc.astype(np.float32), Full(A64 @ B64), "float32", tolerance(dtype, problem))
    assert not verdict.ok


@pytest.mark.parametrize("dtype", list(PRECISIONS))
def test_host_types_make_scalars_and_arrays(dtype):
    """The measuring processes build scalar arguments and views with these types."""
    from tuner.kernels.verify import NUMPY_DTYPES

    kind = NUMPY_DTYPES[dtype]
    assert float(kind(3)) == 3.0
    assert np.zeros(8, np.uint8).view(kind).size * np.dtype(kind).itemsize == 8
