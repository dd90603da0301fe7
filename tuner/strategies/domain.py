"""What a search strategy searches: candidates ``0 … size-1``, each a row of value indices, one axis per
parameter, *ordered* (numbers listed in increasing order: one index step is one step of the value) or
*categorical*. A row packs into one int64 key by mixed radix (its position in the full product); a domain lists
its candidates (``indices``) or is the whole product. Neighbours are one parameter away (``hamming``: any other
value; ``adjacent``: the next value up or down of an ordered axis), and only candidates are neighbours; the
distance that maps a point to the nearest candidate sums normalised index differences and categorical
mismatches."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from tuner.space.mixed_radix import KeyIndex, decode, encode, place_values

HAMMING = "hamming"
ADJACENT = "adjacent"
NEIGHBOURHOODS = (HAMMING, ADJACENT)


@dataclass(frozen=True, eq=False)
class Domain:
    """Candidates as rows of value indices over axes of ``radices`` values each."""

    names: tuple[str, ...]
    radices: np.ndarray
    """The number of values of each axis."""
    ordered: np.ndarray
    """Per axis: True when its values are increasing numbers, so that index steps are value steps."""
    indices: np.ndarray | None = None
    """(candidates × axes) value indices; None: every combination of the product, candidate = key."""
    values: tuple[tuple[object, ...], ...] | None = None
    """Each axis' values, where known (a model reads what the integers among them are divisible by:
    :mod:`tuner.strategies.alignment`); a search needs only their indices."""

    def __post_init__(self) -> None:
        radices = np.asarray(self.radices, dtype=np.int64)
        object.__setattr__(self, "radices", radices)
        object.__setattr__(self, "ordered", np.asarray(self.ordered, dtype=bool))
        if len(radices) != len(self.names) or len(self.ordered) != len(self.names):
            raise ValueError("a domain needs one radix and one ordered flag per axis")
        if self.values is not None:
            values = tuple(tuple(v) for v in self.values)
            if [len(v) for v in values] != radices.tolist():
                raise ValueError("a domain's values need as many values per axis as its radices say")
            object.__setattr__(self, "values", values)
        if math.prod(int(r) for r in radices) >= 2**62:
            raise ValueError(f"the product of the axes' value counts is too large to index "
                             f"({' × '.join(str(int(r)) for r in radices)})")
        if self.indices is not None:
            indices = np.asarray(self.indices)
            if indices.ndim != 2 or indices.shape[1] != len(radices):
                raise ValueError(f"indices of shape {indices.shape} for {len(radices)} axes")
            object.__setattr__(self, "indices", indices.astype(_index_type(radices), copy=False))

    @classmethod
    def product(cls, names: Sequence[str], radices: Sequence[int], ordered: Sequence[bool],
                values: Sequence[Sequence[object]] | None = None) -> Domain:
        """Every combination of the axes' values."""
        return cls(tuple(names), np.asarray(radices), np.asarray(ordered),
                   values=None if values is None else tuple(tuple(v) for v in values))

    # --- sizes and keys -------------------------------------------------------------------------------------

    @property
    def axes(self) -> int:
        return len(self.radices)

    @cached_property
    def size(self) -> int:
        return len(self.indices) if self.indices is not None else self.product_size

    @cached_property
    def product_size(self) -> int:
        return math.prod(int(r) for r in self.radices)

    @property
    def is_product(self) -> bool:
        return self.indices is None

    @cached_property
    def place(self) -> np.ndarray:
        """The weight of each axis' digit in a key."""
        return place_values(self.radices)

    def encode(self, indices: np.ndarray) -> np.ndarray:
        """The keys of rows of value indices ((k × axes) → (k,))."""
        return encode(indices, self.place)

    def decode(self, keys: np.ndarray) -> np.ndarray:
        """The value indices of keys ((k,) → (k × axes))."""
        return decode(keys, self.place, self.radices)

    @cached_property
    def keys(self) -> np.ndarray:
        """Each candidate's key."""
        return self.encode(self.indices) if self.indices is not None else np.arange(self.size, dtype=np.int64)

    @cached_property
    def _key_index(self) -> KeyIndex:
        return KeyIndex(self.keys)

    def candidates_of_keys(self, keys: np.ndarray) -> np.ndarray:
        """The candidate of each key, -1 where the domain lacks it."""
        keys = np.asarray(keys, dtype=np.int64)
        if self.indices is None:
            return np.where((keys >= 0) & (keys < self.size), keys, -1)
        return self._key_index.rows_of(keys)

    def candidates_of(self, indices: np.ndarray) -> np.ndarray:
        """The candidate of each row of value indices, -1 where the domain lacks it."""
        indices = np.asarray(indices, dtype=np.int64)
        inside: np.ndarray = np.all((indices >= 0) & (indices < self.radices), axis=1)
        rows = self.candidates_of_keys(self.encode(np.where(inside[:, None], indices, 0)))
        return np.where(inside, rows, -1)

    def indices_of(self, candidates: np.ndarray) -> np.ndarray:
        """The value indices of candidates ((k,) → (k × axes))."""
        candidates = np.asarray(candidates, dtype=np.int64)
        if self.indices is None:
            return self.decode(candidates)
        return self.indices[candidates].astype(np.int64)

    @cached_property
    def all_indices(self) -> np.ndarray:
        """Every candidate's value indices (for a product domain, decoded once)."""
        if self.indices is not None:
            return self.indices
        return self.decode(np.arange(self.size)).astype(_index_type(self.radices))

    def index_row(self, candidate: int) -> np.ndarray:
        """The value indices of one candidate."""
        return self.indices_of(np.array([candidate]))[0]

    # --- neighbourhoods -------------------------------------------------------------------------------------

    @cached_property
    def _hamming_moves(self) -> tuple[np.ndarray, np.ndarray]:
        """Every (axis, value index) pair: moving a candidate's axis to that value."""
        axis = np.repeat(np.arange(self.axes), self.radices)
        value = np.concatenate([np.arange(int(r)) for r in self.radices]) if self.axes else np.zeros(0, np.int64)
        return axis, value.astype(np.int64)

    def neighbours(self, candidate: int, kind: str = HAMMING) -> np.ndarray:
        """The candidates one parameter away from ``candidate`` (see the module's notes), ascending by key."""
        return self.neighbours_of_row(self.index_row(candidate), kind)

    def neighbours_of_row(self, digits: np.ndarray, kind: str = HAMMING) -> np.ndarray:
        """The candidates one parameter away from a row of value indices (which need not be a candidate)."""
        digits = np.asarray(digits, dtype=np.int64)
        axis, value = self._hamming_moves
        current = digits[axis]
        if kind == HAMMING:
            move = value != current
        elif kind == ADJACENT:
            move = (value != current) & (~self.ordered[axis] | (np.abs(value - current) == 1))
        else:
            raise ValueError(f"unknown neighbourhood '{kind}'; choose one of {', '.join(NEIGHBOURHOODS)}")
        key = int(digits @ self.place)
        keys = key + (value[move] - current[move]) * self.place[axis[move]]
        found = self.candidates_of_keys(keys)
        return found[found >= 0]

    def steps(self, rows: np.ndarray, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Rows of value indices with each axis moved by ``counts`` steps (an array of the rows' shape; 0 for an
        axis of one value): an ordered axis that many values up or down at random (the other way where that
        leaves its values, to the end where both do), a categorical one to any other value where its count is
        not 0. The rows need not be candidates, nor the results."""
        rows = np.asarray(rows, dtype=np.int64)
        counts = np.asarray(counts, dtype=np.int64)
        step = np.where(rng.random(rows.shape) < 0.5, counts, -counts)
        stepped = rows + step
        stepped = np.clip(np.where((stepped < 0) | (stepped >= self.radices), rows - step, stepped), 0,
                          self.radices - 1)
        other = (rng.random(rows.shape) * (self.radices - 1)).astype(np.int64)
        other += other >= rows
        return np.where(counts > 0, np.where(self.ordered, stepped, other), rows)

    # --- distances ------------------------------------------------------------------------------------------

    @cached_property
    def _scale(self) -> np.ndarray:
        """Per axis, what one index step weighs in a distance."""
        return np.where(self.ordered, 1.0 / np.maximum(self.radices - 1, 1), 1.0)

    @cached_property
    def _weights(self) -> np.ndarray:
        """Per axis, what one index step weighs: ``_scale`` for an ordered axis, 1 for a categorical one."""
        return np.where(self.ordered, self._scale, 1.0)

    @cached_property
    def _caps(self) -> np.ndarray:
        """Per axis, the most a difference counts: any other value of a categorical axis counts 1."""
        return np.where(self.ordered, np.inf, 1.0)

    @cached_property
    def _weighted_rows(self) -> np.ndarray:
        """Every candidate's value indices times the axes' weights (what a scan of the whole domain reads)."""
        return self.all_indices * self._weights

    def distances(self, point: np.ndarray, candidates: np.ndarray | None = None) -> np.ndarray:
        """The distance of each candidate (all by default) from ``point``, a row of (possibly fractional) value
        indices."""
        point = np.asarray(point, dtype=float)
        target = np.where(self.ordered, point, np.rint(point)) * self._weights
        rows = self._weighted_rows if candidates is None else self.indices_of(candidates) * self._weights
        return np.minimum(np.abs(rows - target), self._caps).sum(axis=1)

    def nearest(self, point: np.ndarray, free: np.ndarray | None = None,
                rng: np.random.Generator | None = None) -> int:
        """The candidate nearest ``point`` among those where ``free`` is True (all by default); ties go to a random
        one (``rng``) or to the first; -1 when none is free."""
        point = np.asarray(point, dtype=float)
        exact = self.candidates_of(np.clip(np.rint(point), 0, self.radices - 1).astype(np.int64)[None, :])[0]
        if exact >= 0 and (free is None or free[exact]) and np.allclose(point, np.rint(point)):
            return int(exact)
        near = self._nearest_one_away(point, free, rng)
        if near is not None:
            return near
        distance = self.distances(point)
        if free is not None:
            distance = np.where(free, distance, np.inf)
        best = float(distance.min()) if len(distance) else math.inf
        if not math.isfinite(best):
            return -1
        ties = np.flatnonzero(distance <= best + 1e-12)
        return int(ties[0] if rng is None or len(ties) == 1 else ties[rng.integers(len(ties))])


    @cached_property
    def _moves_away(self) -> np.ndarray:
        """The least distance of a candidate that differs from a point of the index box on more than 1, 2 axes."""
        steps = np.sort(self._scale[self.radices > 1])
        return np.array([steps[:k].sum() if len(steps) >= k else math.inf for k in (2, 3)])

    @cached_property
    def _move_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Every pair of (axis, value) moves on two different axes, as positions in ``_hamming_moves``."""
        axis, _ = self._hamming_moves
        first, second = np.triu_indices(len(axis), k=1)
        keep = axis[first] != axis[second]
        return first[keep], second[keep]

    def _nearest_one_away(self, point: np.ndarray, free: np.ndarray | None,
                          rng: np.random.Generator | None) -> int | None:
        """What ``nearest`` answers for a point on the grid, found among the free candidates one (then up to two)
        parameters away from it where the nearest of them is nearer than any candidate farther away can be; else
        None. The ties are drawn as ``nearest`` draws them (in candidate order), so the answer is the same."""
        digits = np.rint(point).astype(np.int64)
        if free is None or not np.array_equal(point, digits) or np.any((digits < 0) | (digits >= self.radices)):
            return None
        axis, value = self._hamming_moves
        shift = (value - digits[axis]) * self.place[axis]  # a move's change of the key (0: no move)
        base = int(digits @ self.place)
        first, second = self._move_pairs
        for keys, bound in ((base + shift[shift != 0], self._moves_away[0]),
                            (base + np.concatenate((shift, shift[first] + shift[second])), self._moves_away[1])):
            found = self.candidates_of_keys(np.unique(keys))
            ring = np.sort(found[found >= 0])
            ring = ring[free[ring]]
            if not len(ring):
                continue
            distance = self.distances(point, ring)
            best = float(distance.min())
            if best < bound - 1e-12:
                ties = ring[distance <= best + 1e-12]
                return int(ties[0] if rng is None or len(ties) == 1 else ties[rng.integers(len(ties))])
        return None


def _index_type(radices: np.ndarray) -> type[np.signedinteger]:
    largest = int(radices.max()) if len(radices) else 1
    return np.int16 if largest < 2**15 else np.int32 if largest < 2**31 else np.int64


def ordered_values(values: Sequence[object]) -> bool:
    """Whether an axis' values are numbers (not booleans) in strictly increasing order."""
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    return len(numbers) == len(values) and all(a < b for a, b in zip(numbers, numbers[1:], strict=False))
