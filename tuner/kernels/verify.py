"""Verification of a kernel's output: its inputs, the poison, and the comparison with a float64 reference.

Inputs are fresh for every problem and dtype, drawn from ``input_seed``, the problem's sizes and the dtype
(so each problem gets its own, reproducibly), and never zero: floats uniform in ±[0.1, 1] rounded to the dtype
(so the stored values are exact in it: TF32's 10 significand bits for tf32, bfloat16's 7, float16's 10), int32 in
±{1..4}. They are drawn buffer after buffer in the order the family declares its arguments.

The output is poisoned before the verified launch (NaN for floats, ``INT_SENTINEL`` for int32); any element
left at the poison fails. The family's reference gives each output's expected values in float64, all of them
or a sample (``Expected.pick``), and its tolerance bounds the relative error ‖out − ref‖ / ‖ref‖ (Frobenius
norm over the compared elements; integers must match exactly).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from tuner.config import DTYPES, Problem
from tuner.kernels.arguments import Buffer
from tuner.precision import PRECISIONS, numpy_dtype, round_to

INT_SENTINEL = 0x7FFFFFFF
FLOAT_POISON_WORD = 0xFFFFFFFF
"""All bits set: a NaN as float32 and, word-pairs together, as float64."""
INT_MAGNITUDE = 4

NUMPY_DTYPES: dict[str, type[np.generic]] = {name: numpy_dtype(name).type for name in PRECISIONS}
"""Each dtype's element type in host memory, as a numpy scalar type (tf32 is float32; bfloat16 is ml_dtypes')."""


def poison_word(dtype: str) -> int:
    """The 32-bit pattern an output is filled with (by memset_d32) before the verified launch."""
    return INT_SENTINEL if dtype == "int32" else FLOAT_POISON_WORD


def poisoned(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """A host array of ``shape`` holding the poison (an odd count of 16-bit elements: the last half-word's bits all
    set, a NaN too)."""
    nbytes = math.prod(shape) * np.dtype(NUMPY_DTYPES[dtype]).itemsize
    words = np.full(-(-nbytes // 4), poison_word(dtype), np.uint32)
    return words.view(np.uint8)[:nbytes].view(NUMPY_DTYPES[dtype]).reshape(shape)


@dataclass(frozen=True)
class Tolerance:
    bound: float
    """The largest accepted ‖out − ref‖ / ‖ref‖ (floats) or number of wrong elements (integers)."""
    rule: str
    """How the bound was set, for the message of a failed check (e.g. ``4·√K·ε, K = 333``)."""


class Expected(Protocol):
    """The reference values of one output: all of them or a sample."""

    @property
    def sampled(self) -> bool: ...

    def pick(self, actual: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The elements of ``actual`` this reference covers, and their reference values, flattened alike."""
        ...


@dataclass(frozen=True)
class Full:
    """Every element's reference value."""

    values: np.ndarray
    sampled: bool = False

    def pick(self, actual: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return actual.ravel(), self.values.ravel()


def input_rng(problem: Problem, dtype: str, seed: int) -> np.random.Generator:
    return np.random.default_rng([seed, *(size for _, size in problem.sizes), DTYPES.index(dtype)])


def random_inputs(buffers: Iterable[Buffer], problem: Problem, dtype: str, seed: int) -> dict[str, np.ndarray]:
    """Random non-zero values for every input buffer, C-contiguous, in the buffer's dtype."""
    rng = input_rng(problem, dtype, seed)
    arrays = {}
    for buffer in buffers:
        if not buffer.is_input:
            continue
        shape, kind = buffer.shape(problem), buffer.dtype_of(dtype)
        sign = rng.choice(np.array([-1, 1]), size=shape)
        if kind == "int32":
            arrays[buffer.name] = (sign * rng.integers(1, INT_MAGNITUDE + 1, size=shape)).astype(np.int32)
        else:
            arrays[buffer.name] = round_to(sign * rng.uniform(0.1, 1.0, size=shape), kind)
    return arrays


@dataclass(frozen=True)
class Verdict:
    ok: bool
    error: float | None
    reason: str = ""


def unwritten(values: np.ndarray, dtype: str) -> int:
    """Elements still holding the poison."""
    if dtype == "int32":
        return int(np.count_nonzero(values == INT_SENTINEL))
    return int(np.count_nonzero(np.isnan(values)))


def euclidean_norm(values: np.ndarray) -> float:
    """‖values‖₂, summed by numpy rather than by a BLAS dot product: BLAS would wake its thread pool, whose threads
    keep spinning for a while after it, next to the kernel timed right after a check."""
    return math.sqrt(float(np.sum(np.square(values, dtype=np.float64))))


def check(actual: np.ndarray, expected: Expected, dtype: str, tolerance: Tolerance, name: str = "C") -> Verdict:
    """Compare one output with its reference; see the module text for the rules."""
    left = unwritten(actual, dtype)
    if left:
        poison = f"{INT_SENTINEL:#x}" if dtype == "int32" else "NaN"
        return Verdict(False, None, f"{left} of {actual.size} elements of {name} were never written (still {poison})")
    got, want = expected.pick(actual)
    where = f"{'sampled' if expected.sampled else 'all'} {want.size} elements"
    if dtype == "int32":
        wrong = int(np.count_nonzero(got.astype(np.int64) != want.astype(np.int64)))
        if wrong > tolerance.bound:
            return Verdict(False, float(wrong), f"{wrong} of {where} of {name} differ from the exact reference")
        return Verdict(True, float(wrong))
    norm = euclidean_norm(want)
    error = euclidean_norm(got.astype(np.float64) - want) / norm if norm else float(np.abs(got).max())
    if not math.isfinite(error) or error > tolerance.bound:
        return Verdict(False, error, f"‖{name} − ref‖/‖ref‖ = {error:.3g} over {where} exceeds the {dtype} "
                                     f"tolerance {tolerance.bound:.3g} ({tolerance.rule})")
    return Verdict(True, error)


def check_all(outputs: Mapping[str, np.ndarray], expected: Mapping[str, Expected], dtypes: Mapping[str, str],
              tolerance: Tolerance) -> Verdict:
    """Every output against its reference: the first failure, or ok with the largest error."""
    worst = 0.0
    for name, values in outputs.items():
        verdict = check(values, expected[name], dtypes[name], tolerance, name)
        if not verdict.ok:
            return verdict
        worst = max(worst, verdict.error or 0.0)
    return Verdict(True, worst)
