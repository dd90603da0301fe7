"""Alignment axes for the model of :mod:`tuner.strategies.gaussian_process`: for an integer parameter whose
values reach a warp (:data:`WARP`) and are not all powers of two, each value's alignment (the exponent of the
largest power of two dividing it; zero at the highest level), ranked and capped at :data:`CAP`. Why: the README,
"How `bo` and `ils` search"."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

WARP = 32
"""The largest value an axis must reach to get an alignment axis: sizes of threads and words, not small counts."""
CAP = 10
"""Alignments above 2¹⁰ = 1024 are one level: no block or tile size divides by more to any effect."""


@dataclass(frozen=True, eq=False)
class AlignmentAxis:
    """The alignment of a domain axis' values: ``level[i]`` is the level of the axis' i-th value."""

    source: int
    """The domain axis whose values it reads."""
    level: np.ndarray

    @property
    def radix(self) -> int:
        return int(self.level.max()) + 1


def alignment(value: int) -> int:
    """The exponent of the largest power of two dividing ``value`` (:data:`CAP` for zero and above)."""
    value = abs(int(value))
    if value == 0:
        return CAP
    return min((value & -value).bit_length() - 1, CAP)


def alignment_axes(values: Sequence[Sequence[object]] | None, ordered: np.ndarray) -> tuple[AlignmentAxis, ...]:
    """The alignment axes of a domain's axes (their values and ordered flags; none where the values are not
    known): see the module's notes for which axes get one."""
    if values is None:
        return ()
    found = []
    for axis, axis_values in enumerate(values):
        integers = _integers(axis_values)
        if not ordered[axis] or integers is None or len(integers) < 3 or max(integers) < WARP:
            continue
        exponents = np.array([alignment(v) for v in integers])
        levels, rank = np.unique(exponents, return_inverse=True)
        steps = np.diff(rank)
        if len(levels) < 2 or np.all(steps > 0) or np.all(steps < 0):
            continue
        found.append(AlignmentAxis(axis, rank.astype(np.int64)))
    return tuple(found)


def _integers(values: Sequence[object]) -> list[int] | None:
    """The values as integers, or None where one is not a whole number (a boolean is not one)."""
    integers = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
            return None
        if not float(value).is_integer():
            return None
        integers.append(int(value))
    return integers
