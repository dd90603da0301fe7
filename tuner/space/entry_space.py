"""The search space: every combination of a kernel entry's parameter values and dtypes, and the static rules
that reject some of them before anything is compiled.

The rules do not see the problem, so an entry's valid set is built once, as arrays over the product of its
values (dtype first, then the parameters in file order, the last varying fastest), and shared by every problem.
Each rule becomes a truth table over the parameters it reads (:mod:`tuner.space.rule_table`); the valid combinations
are those where every table holds. Configurations are made only for the rows asked for.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any, Protocol

import numpy as np

from tuner.config import Config, ParamValue, Problem
from tuner.errors import TunerError
from tuner.kernels.discovery import get_family
from tuner.kernels.family import Constraint, Family, FamilyError, Params
from tuner.kernels.targets import Target, target
from tuner.settings import CompileSettings
from tuner.space.restriction_rules import restriction_rules
from tuner.space.rule_table import RuleFailed, RuleTable, tabulate

MAX_COMBINATIONS = 1_000_000
"""The most combinations (dtypes × parameter values) one kernel entry may list: its space is built as arrays over
all of them, and a rule that reads every parameter is evaluated for each (a few seconds for a million)."""


class SpaceTooLarge(TunerError):
    """A kernel entry that lists more combinations than MAX_COMBINATIONS."""


@dataclass(frozen=True)
class KernelSpec:
    """One kernel entry of an experiment: a family, the values to search per parameter, the dtypes, and the
    architecture whose resource limits the configurations must respect."""

    family: str
    values: dict[str, tuple[Any, ...]]
    dtypes: tuple[str, ...]
    arch: str = CompileSettings().arch
    restrictions: tuple[str, ...] = ()
    """Python expressions over the parameters every configuration must satisfy
    (:mod:`tuner.space.restriction_rules`)."""


class Entries(Protocol):
    """What the space needs of an experiment: its problems, its kernel entries and their spaces as its check built
    them."""

    @property
    def problems(self) -> tuple[Problem, ...]: ...

    @property
    def kernels(self) -> tuple[KernelSpec, ...]: ...

    @property
    def spaces(self) -> tuple[EntrySpace, ...]: ...


def rules(family: Family, on: Target | None = None) -> tuple[Constraint, ...]:
    """Every static rule of ``family`` on the target ``on`` (default: the default compile target), in the order
    ``violations`` reports them: the target's resource limits, then the family's own constraints. Every rule
    but a precondition holds where a precondition is broken, so that only the broken preconditions are reported
    there (and the other rules never see values the family does not define)."""
    return _rules(family, on or target(CompileSettings().arch))


@cache
def _rules(family: Family, on: Target) -> tuple[Constraint, ...]:
    def guarded(rule: Constraint) -> Constraint:
        def holds(params: Params, dtype: str) -> bool:
            return bool(family.broken_preconditions(params, dtype)) or rule.holds(params, dtype)

        return Constraint(rule.description, holds)

    preconditions = tuple(c for c in family.constraints if c.precondition)
    others = (*family.resource_rules(on), *(c for c in family.constraints if not c.precondition))
    if not preconditions:
        return others
    return (*preconditions, *(guarded(rule) for rule in others))


def violations(family: Family, params: Params, dtype: str, on: Target | None = None) -> list[str]:
    """The static rules these parameter values break (empty when the configuration is valid); only the broken
    preconditions where there are any."""
    return [rule.description for rule in rules(family, on) if not rule.holds(params, dtype)]


@dataclass(frozen=True, eq=False)
class EntrySpace:
    """Every combination one kernel entry lists, and which of them satisfy the static rules."""

    family: Family
    names: tuple[str, ...]
    values: tuple[tuple[ParamValue, ...], ...]
    dtypes: tuple[str, ...]
    rules: tuple[Constraint, ...]
    tables: tuple[RuleTable, ...]
    """One per rule; empty when the product is."""
    valid_mask: np.ndarray
    """Flat over the product: True where every rule holds."""
    spec: KernelSpec | None = None
    """The kernel entry it is the space of (None for a space built from values alone)."""

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self.dtypes), *(len(v) for v in self.values))

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @cached_property
    def valid_rows(self) -> np.ndarray:
        return np.flatnonzero(self.valid_mask)

    @cached_property
    def invalid_rows(self) -> np.ndarray:
        return np.flatnonzero(~self.valid_mask)

    @cached_property
    def rejected_by(self) -> Counter[str]:
        """How many combinations each rule rejects (a combination counts once for every rule it breaks), in the
        order in which the rules first reject one when the combinations are enumerated in order."""
        found = []
        for position, table in enumerate(self.tables):
            broken = int(table.holds.size - np.count_nonzero(table.holds))
            if broken:
                first = np.zeros(len(self.shape), dtype=np.intp)
                first[list(table.axes)] = np.unravel_index(int(np.argmin(table.holds)), table.holds.shape)
                row = int(np.ravel_multi_index(tuple(first), self.shape))
                found.append((row, position, broken * (self.size // table.holds.size)))
        counts: Counter[str] = Counter()
        for _, position, broken in sorted(found):
            counts[self.rules[position].description] += broken
        return counts

    def broken(self, row: int) -> list[str]:
        """The rules the combination at ``row`` breaks."""
        digits = np.unravel_index(row, self.shape)
        return [rule.description for rule, table in zip(self.rules, self.tables, strict=True)
                if not table.holds[tuple(digits[axis] for axis in table.axes)]]

    def rows_of_dtype(self, rows: np.ndarray, dtype: str) -> np.ndarray:
        """The rows (ascending) of ``dtype``: a contiguous run, since the dtype is the slowest-varying axis."""
        if dtype not in self.dtypes:
            return rows[:0]
        block = self.size // len(self.dtypes)
        start = self.dtypes.index(dtype) * block
        return rows[np.searchsorted(rows, start):np.searchsorted(rows, start + block)]

    def row_of(self, dtype: str, params: Mapping[str, ParamValue]) -> int | None:
        """The row of a combination, or None when this entry does not list it."""
        if dtype not in self.dtypes or set(params) != set(self.names):
            return None
        digits = [self.dtypes.index(dtype)]
        for name, index in zip(self.names, self._value_index, strict=True):
            position = index.get(params[name])
            if position is None:
                return None
            digits.append(position)
        return int(np.ravel_multi_index(tuple(digits), self.shape))

    @cached_property
    def _value_index(self) -> tuple[dict[ParamValue, int], ...]:
        return tuple({value: i for i, value in enumerate(values)} for values in self.values)

    def configs(self, problem: Problem, rows: np.ndarray, chunk: int = 4096) -> Iterator[Config]:
        """The configurations at ``rows``, in that order."""
        order = sorted(range(len(self.names)), key=self.names.__getitem__)
        pairs = [[(self.names[i], value) for value in self.values[i]] for i in order]
        for start in range(0, len(rows), chunk):
            digits = np.unravel_index(rows[start:start + chunk], self.shape)
            dtypes = digits[0].tolist()
            columns = [digits[i + 1].tolist() for i in order]
            for n, dtype in enumerate(dtypes):
                params = tuple(pairs[k][column[n]] for k, column in enumerate(columns))
                yield Config(problem, self.family.name, self.dtypes[dtype], params)

    def listed_by(self, other: EntrySpace, rows: np.ndarray) -> np.ndarray:
        """Which of this entry's ``rows`` ``other`` lists too (as the same family, dtype and values)."""
        if other.family.name != self.family.name or set(other.names) != set(self.names):
            return np.zeros(len(rows), dtype=bool)
        digits = np.unravel_index(rows, self.shape)
        listed = np.array([dtype in other.dtypes for dtype in self.dtypes], dtype=bool)[digits[0]]
        for axis, (name, values) in enumerate(zip(self.names, self.values, strict=True), start=1):
            known = other._value_index[other.names.index(name)]
            listed &= np.array([value in known for value in values], dtype=bool)[digits[axis]]
        return listed


def size_refusal(values: Mapping[str, tuple[Any, ...]] | tuple[tuple[Any, ...], ...],
                 dtypes: tuple[str, ...]) -> str | None:
    """Why a kernel entry listing these values and dtypes is too large to build, or None where it is not."""
    lengths = [len(v) for v in (values.values() if isinstance(values, Mapping) else values)]
    total = math.prod(lengths) * len(dtypes)
    if total <= MAX_COMBINATIONS:
        return None
    count = f"{total:,}" if total < 10**15 else f"about {total:.3g}"
    counts = " × ".join(str(n) for n in lengths) + " values" if len(lengths) <= 8 else (
        f"{len(lengths)} parameters of {min(lengths)}" + (f" to {max(lengths)}" if max(lengths) > min(lengths) else "")
        + " values")
    return (f"its values combine into {count} combinations ({counts} × {len(dtypes)} dtype(s)), more than the "
            f"{MAX_COMBINATIONS:,} one kernel entry may list (its space is built over every combination): search "
            f"fewer values, or split the entry into several")


def build_entry_space(family: Family, names: tuple[str, ...], values: tuple[tuple[ParamValue, ...], ...],
                      dtypes: tuple[str, ...], on: Target | None = None,
                      restrictions: tuple[Constraint, ...] = (), spec: KernelSpec | None = None) -> EntrySpace:
    """Tabulate every rule of ``family`` on the target ``on``, and the entry's ``restrictions``, over the product
    of ``dtypes`` and ``values`` and combine the tables (the space of ``spec``, where given); SpaceTooLarge past
    MAX_COMBINATIONS."""
    refusal = size_refusal(values, dtypes)
    if refusal is not None:
        raise SpaceTooLarge(f"the kernel entry of family '{family.name}': {refusal}")
    shape = (len(dtypes), *(len(v) for v in values))
    family_rules = (*rules(family, on), *restrictions)
    mask = np.zeros(shape, dtype=bool)
    tables: tuple[RuleTable, ...] = ()
    if mask.size:
        tables = tuple(_tabulated(family, rule, names, values, dtypes) for rule in family_rules)
        mask[...] = True
        for table in tables:
            mask &= table.spread(len(shape))
    return EntrySpace(family, names, values, dtypes, family_rules, tables, mask.reshape(-1), spec)


def _tabulated(family: Family, rule: Constraint, names: tuple[str, ...],
               values: tuple[tuple[ParamValue, ...], ...], dtypes: tuple[str, ...]) -> RuleTable:
    try:
        return tabulate(rule.holds, names, values, dtypes)
    except RuleFailed as failed:
        read = ", ".join(f"{k}={v}" for k, v in failed.values.items()) or "its first values"
        raise family.mistake(f"the rule '{rule.description}'", failed.error, read) from None


def entry_space(spec: KernelSpec, family: Family | None = None) -> EntrySpace:
    """The space of a kernel entry, built now (``family``: the entry's family where the caller has resolved it)."""
    family = family or get_family(spec.family)
    names = tuple(spec.values)
    values = tuple(tuple(spec.values[n]) for n in names)
    checked = restriction_rules(tuple(spec.restrictions), names, f"the restrictions of family '{family.name}'")
    return build_entry_space(family, names, values, tuple(spec.dtypes), target(spec.arch), checked, spec)


class NoValidCombination(TunerError):
    """A kernel entry none of whose combinations satisfies the static rules."""


def satisfiable_space(spec: KernelSpec, family: Family) -> EntrySpace:
    """The space of a kernel entry that lists at least one valid combination; NoValidCombination (saying how many
    each rule rejected) where it lists none, FamilyError where a rule of the family fails."""
    space = entry_space(spec, family)
    if len(space.valid_rows) == 0:
        why = "; ".join(f"{n} rejected by '{r}'" for r, n in space.rejected_by.items())
        raise NoValidCombination(f"no combination of these values satisfies the family's constraints "
                                 f"(all {space.size} rejected: {why})")
    return space


ENTRY_REFUSALS = (FamilyError, NoValidCombination)
"""What :func:`satisfiable_space` refuses an entry with (its parameters are the field to name)."""


def entry_spaces(entries: Entries) -> tuple[EntrySpace, ...]:
    """The space of each kernel entry: those the experiment's check built where they are still its entries' (an
    experiment whose kernels were replaced after its check has its spaces built now)."""
    built = entries.spaces
    if len(built) == len(entries.kernels) and all(s.spec == k for s, k in zip(built, entries.kernels, strict=True)):
        return built
    return tuple(entry_space(spec) for spec in entries.kernels)


def entry_families(entries: Entries) -> dict[str, Family]:
    """The family of each kernel entry, by name, as the experiment's check resolved it."""
    return {space.family.name: space.family for space in entry_spaces(entries)}


def count_valid(spec: KernelSpec) -> tuple[int, int, Counter]:
    """(combinations, valid combinations, how many each rule rejected) for one kernel entry."""
    space = entry_space(spec)
    return space.size, len(space.valid_rows), Counter(space.rejected_by)
