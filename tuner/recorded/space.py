"""A recorded search space: every configuration a brute-force recording holds, as numpy arrays.

A configuration is a row of ``indices``: for each parameter, the position of its value in that parameter's value
list. A row packs into one int64 *key* by mixed radix (the first parameter most significant, each digit in base
the parameter's number of values), so the key of a combination is also its position in the full product
enumerated in ``itertools.product`` order. Membership and lookup are a binary search in the sorted keys.

Per recorded configuration: its outcome (a :class:`tuner.measure.measurement.Status` value), the recorded failure text,
its time in ms (NaN unless ok), its timed runs in ms (NaN-padded), and its cost in seconds, the time the
recording spent on it (what counts is the reader's business: see :mod:`tuner.recorded.load`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeGuard

import numpy as np

from tuner.errors import TunerError
from tuner.measure.measurement import Status
from tuner.recorded.limits import check_run_cells, text_refusal
from tuner.space.mixed_radix import KeyIndex, decode, encode, place_values

RecordedValue = int | float | str | bool


@dataclass(frozen=True, eq=False)
class RecordedSpace:
    source: str
    """The file the space was read from."""
    device: str
    kernel: str
    problem_size: Any
    names: tuple[str, ...]
    values: tuple[tuple[RecordedValue, ...], ...]
    """Each parameter's values, in the file's order."""
    indices: np.ndarray
    """(configurations × parameters) value indices, in the file's order of configurations."""
    status: np.ndarray
    """Each configuration's outcome, a Status value (str)."""
    reason: tuple[str, ...]
    """The recorded failure (``CompilationFailedConfig``, …); empty for ok."""
    time_ms: np.ndarray
    runs_ms: np.ndarray
    cost_s: np.ndarray
    restrictions: tuple[str, ...] = ()
    """The space's restrictions, Python expressions over the parameters that every recorded configuration
    satisfies (:mod:`tuner.kernels.restrictions`); empty where the recording names none."""

    def __post_init__(self) -> None:
        too_long = text_refusal(self.names, self.values)
        if too_long is not None:
            raise TunerError(f"{self.source}: {too_long}")
        if math.prod(len(v) for v in self.values) >= 2**62:
            raise TunerError(f"{self.source}: the product of the parameters' value counts is too large to index "
                             f"({' × '.join(str(len(v)) for v in self.values)})")
        for name, values in zip(self.names, self.values, strict=True):
            refusal = _values_refusal(values)
            if refusal is not None:
                raise TunerError(f"{self.source}: parameter '{name}': {refusal}")
        bad = np.flatnonzero((self.status == Status.OK.value) & ~(self.time_ms > 0))
        if len(bad):
            config = ", ".join(f"{name}={value}" for name, value in self.params_of(int(bad[0])).items())
            raise TunerError(f"{self.source}: the configuration {config} is recorded as ok "
                             f"with a time of {self.time_ms[bad[0]]:g} ms; an ok time must be positive (its "
                             f"performance is work over time)")

    def __len__(self) -> int:
        return len(self.indices)

    @cached_property
    def radices(self) -> np.ndarray:
        """The number of values of each parameter."""
        return np.array([len(v) for v in self.values], dtype=np.int64)

    @cached_property
    def product_size(self) -> int:
        """Combinations of the parameters' values, recorded or not."""
        return math.prod(len(v) for v in self.values)

    @cached_property
    def place(self) -> np.ndarray:
        """The weight of each digit of a key."""
        return place_values(self.radices)

    def encode(self, indices: np.ndarray) -> np.ndarray:
        """The keys of rows of value indices ((k × parameters) → (k,))."""
        return encode(indices, self.place)

    def decode(self, keys: np.ndarray) -> np.ndarray:
        """The value indices of keys ((k,) → (k × parameters))."""
        return decode(keys, self.place, self.radices)

    @cached_property
    def keys(self) -> np.ndarray:
        """Each recorded configuration's key."""
        return self.encode(self.indices)

    @cached_property
    def _key_index(self) -> KeyIndex:
        return KeyIndex(self.keys)

    def rows_of(self, keys: np.ndarray) -> np.ndarray:
        """The recorded configuration of each key, -1 where the recording lacks it."""
        return self._key_index.rows_of(keys)

    @cached_property
    def row_of_key(self) -> dict[int, int]:
        """key → recorded configuration, for one lookup at a time."""
        return {int(k): i for i, k in enumerate(self.keys)}

    def row_of(self, params: Mapping[str, RecordedValue]) -> int | None:
        """The recorded configuration with these parameter values, or None."""
        try:
            digits = [self.values[j].index(params[name]) for j, name in enumerate(self.names)]
        except (KeyError, ValueError):
            return None
        return self.row_of_key.get(int(self.encode(np.array([digits]))[0]))

    def params_of(self, row: int) -> dict[str, RecordedValue]:
        return {name: self.values[j][int(self.indices[row, j])] for j, name in enumerate(self.names)}

    def key_string(self, row: int) -> str:
        """The configuration as Kernel Tuner names it in a cache: its values joined by commas."""
        return ",".join(str(v) for v in self.params_of(row).values())

    @cached_property
    def ok(self) -> np.ndarray:
        return self.status == Status.OK.value

    @cached_property
    def optimum_row(self) -> int:
        if not self.ok.any():
            raise TunerError(f"{self.source}: no configuration of the recording ran successfully")
        return int(np.nanargmin(np.where(self.ok, self.time_ms, np.nan)))

    @property
    def optimum_ms(self) -> float:
        return float(self.time_ms[self.optimum_row])

    def status_counts(self) -> dict[str, int]:
        names, counts = np.unique(self.status, return_counts=True)
        return {str(n): int(c) for n, c in zip(names, counts, strict=True)}


def _values_refusal(values: tuple[RecordedValue, ...]) -> str | None:
    """Why a parameter's recorded values cannot be told apart or kept, or None: two values Python takes as one
    (1 and true, 1 and 1.0) would merge their configurations; an integer past 64 bits fits no table column."""
    seen: dict[RecordedValue, RecordedValue] = {}
    for value in values:
        if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
            return f"the value {value} is beyond the 64-bit integers a results table holds"
        if value in seen:
            return (f"the values {json.dumps(seen[value])} and {json.dumps(value)} are listed apart but are equal "
                    f"as keys (a boolean, an integer and a float of the same value are one key); keep one of them")
        seen[value] = value
    return None


def cost_seconds(compile_ms: float | None, verification_ms: float | None, framework_ms: float | None,
                 runs_ms: Sequence[float]) -> float:
    """The recording's time on one configuration: compile + verification + framework time and the timed runs.

    Each part counts where it is recorded. The runs count as the benchmark's time, and the recorded benchmark time
    does not: that is how the methodology package counts a configuration's time (the T4 time keys
    ``compilation``, ``validation``, ``framework`` and ``runtimes``; :mod:`tuner.compare.methodology`).
    """
    parts = [p for p in (compile_ms, verification_ms, framework_ms) if _is_time(p)]
    return (sum(parts, 0.0) + sum(r for r in runs_ms if _is_time(r))) / 1000.0


def is_number(value: Any) -> TypeGuard[float]:
    """An int or float of JSON (not a boolean)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_time(value: Any) -> TypeGuard[float]:
    return is_number(value) and math.isfinite(value) and value >= 0


def runs_matrix(runs: Sequence[Sequence[float]], source: str) -> np.ndarray:
    """Runs of unequal counts as one NaN-padded (configurations × most runs) array, within the recording limits."""
    width = max((len(r) for r in runs), default=0)
    check_run_cells(len(runs), width, source)
    matrix = np.full((len(runs), width), np.nan)
    for i, r in enumerate(runs):
        matrix[i, :len(r)] = r
    return matrix
