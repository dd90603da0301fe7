"""A kernel's arguments as its family declares them: buffers with shapes and scalars with values."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from tuner.config import DTYPE_BYTES, Problem
from tuner.precision import PRECISIONS

OUTPUT = "output"
SECOND_OPERAND = "second operand"


@dataclass(frozen=True)
class Buffer:
    """An array in device (or host) memory. Inputs (``in``) are filled with random non-zero values,
    outputs (``out``) are poisoned before each verified launch and compared with the family's reference;
    ``inout`` buffers are both, and are refilled from their inputs before each verified launch."""

    name: str
    shape: Callable[[Problem], tuple[int, ...]]
    intent: Literal["in", "out", "inout"] = "in"
    dtype: str | None = None
    """None: the configuration's dtype; ``OUTPUT``: the dtype its output is written in (float32 for the 16-bit, FP8
    and TF32 dtypes, bfloat16 or float16 for the ``_out_`` ones, the dtype itself otherwise); ``SECOND_OPERAND``:
    B's dtype of a mixed product (the dtype itself otherwise); else a dtype of its own."""

    def dtype_of(self, config_dtype: str) -> str:
        if self.dtype == OUTPUT:
            return PRECISIONS[config_dtype].output
        if self.dtype == SECOND_OPERAND:
            return PRECISIONS[config_dtype].second_operand or config_dtype
        return self.dtype or config_dtype

    def elements(self, problem: Problem) -> int:
        return math.prod(self.shape(problem))

    def nbytes(self, problem: Problem, config_dtype: str) -> int:
        return self.elements(problem) * DTYPE_BYTES[self.dtype_of(config_dtype)]

    @property
    def is_input(self) -> bool:
        return self.intent in ("in", "inout")

    @property
    def is_output(self) -> bool:
        return self.intent in ("out", "inout")


@dataclass(frozen=True)
class Scalar:
    """A value passed by value: a size of the problem, say. ``ctype`` "dtype" takes the configuration's dtype."""

    name: str
    value: Callable[[Problem], int | float]
    ctype: str = "int32"

    def type_of(self, config_dtype: str) -> str:
        return config_dtype if self.ctype == "dtype" else self.ctype


Argument = Buffer | Scalar
