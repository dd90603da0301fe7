"""Alignment axes: for the model of :mod:`tuner.strategies.gaussian_process`, one more axis per integer parameter,
each value's alignment, the exponent of the largest power of two that divides it (a multiple of 32 has at least
5; 48 has 4, 96 has 5).

Why. A GPU kernel's block and tile sizes act through what they divide and are divided by: a block width that is a
multiple of the warp (32) fills its warps, a row of a multiple of 32 words is read in whole transactions, a tile
of 4 loads as one vector. Listed in increasing order (16, 32, 48, …, 256), such values put 48 between 32 and 64,
and a model that measures distance in index steps takes 32's neighbours, 16 and 48, to be like it, while the
values like it are 64, 96, 128. The alignment axis puts 32, 96, 160 and 224 at one level, 64 and 192 at the next:
the model learns from the data how much either way of comparing two values matters (each axis has its own
weights), so a parameter whose alignment says nothing costs a weight that the fit turns down.

An axis gets an alignment axis when its values are integers listed in increasing order, at least three of them,
reaching a warp's width (:data:`WARP`), and their alignments do not simply follow the index order (a list of powers
of two: 4, 8, 16 are aligned 2, 3, 4, which the index steps already say). Small counts (tiles and unroll factors of
1 to 8) are left out: their alignment says little more than whether they are odd, and there 1 means none (no
tiling), not a size that is odd; a model that took 1 to be like 3 would carry what it learned of a tile of 3 into
the untiled configurations. Zero divides by every power: it is given the highest level. The levels are
the alignments' ranks (an ordered axis of as many values as there are distinct alignments, capped at
:data:`CAP`).
"""

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
