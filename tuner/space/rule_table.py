"""A static rule as a truth table over the parameters it reads.

A rule is a deterministic function of a configuration's parameter values (and, for most rules, its dtype).
Evaluated through a mapping that notes every key read, it shows which parameters it depends on: start from the
keys read for the first combination; evaluate the rule on every combination of the values of the keys known so
far, the other parameters at their first value; whenever an evaluation reads a key outside that set, add the key
and start again. A pass that reads no new key is the rule's complete truth table over those keys, since every
combination agreeing with an evaluated one on the keys it read takes the same path through the rule.

The dtype reaches a rule as a plain string, whose reading cannot be noted: it is a column of every table.
A rule that reads every parameter costs as many evaluations as the whole product has combinations.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from tuner.config import ParamValue

Holds = Callable[[Mapping[str, ParamValue], str], object]
"""A static rule: whether it holds for a configuration's parameters and dtype."""
DTYPE_AXIS = 0
"""Axis of the dtype in a space's product; parameter i is axis i + 1."""


@dataclass(frozen=True)
class RuleTable:
    """Whether a rule holds, for every combination of the values of the axes it reads."""

    axes: tuple[int, ...]
    """The axes of the product the rule reads, ascending."""
    holds: np.ndarray
    """Booleans, one dimension per axis in ``axes``, each indexed by the position of a value in its list."""

    def spread(self, ndim: int) -> np.ndarray:
        """The table with a dimension of length 1 for every axis it does not read, to broadcast over a product."""
        shape = [1] * ndim
        for axis, length in zip(self.axes, self.holds.shape, strict=True):
            shape[axis] = length
        return self.holds.reshape(shape)


class RuleFailed(Exception):
    """A rule that raised instead of answering, with the values it was evaluated on."""

    def __init__(self, values: dict[str, ParamValue], error: Exception):
        super().__init__(f"{type(error).__name__} ({error})")
        self.values, self.error = values, error


class _KnownValues(dict):
    """The values of the keys known to be read; any other parameter is looked up in ``rest`` and noted in ``new``."""

    def __init__(self, rest: dict[str, ParamValue]):
        super().__init__()
        self.rest = rest
        self.new: set[str] = set()

    def __missing__(self, key: str) -> ParamValue:
        value = self.rest[key]
        self.new.add(key)
        return value


def _recording(known: _KnownValues) -> Mapping[str, ParamValue]:
    """A read-only mapping of every parameter that reads through ``known``.

    Its ``__getitem__`` is the dict's own, bound: a class attribute that is not a descriptor is called with the
    key alone, so reading a known key runs no Python code (rules read keys many times per evaluation).
    """

    class Recording(Mapping[str, ParamValue]):
        __getitem__ = known.__getitem__

        def __contains__(self, key: object) -> bool:
            return key in known.rest  # every combination has the same keys

        def __iter__(self) -> Iterator[str]:
            return iter(known.rest)

        def __len__(self) -> int:
            return len(known.rest)

    return Recording()


def tabulate(holds: Holds, names: Sequence[str], values: Sequence[Sequence[ParamValue]],
             dtypes: Sequence[str]) -> RuleTable:
    """The truth table of ``holds(params, dtype)`` over a product: ``dtypes`` (axis 0) × ``values`` of ``names``.

    Every evaluation is of a combination the product lists, so an exception the rule raises is one that checking
    the combinations one by one raises too: it comes out as RuleFailed, holding the values the rule had read.
    """
    position = {name: axis for axis, name in enumerate(names, start=1)}
    first = {name: options[0] for name, options in zip(names, values, strict=True)}
    read: set[str] = set()
    while True:
        columns = sorted(position[name] for name in read)
        options = [values[axis - 1] for axis in columns]
        known = _KnownValues(first)
        try:
            results = _evaluate(holds, known, dtypes, [names[axis - 1] for axis in columns], options)
        except Exception as exc:  # a family's own rule may fail in any way
            raise RuleFailed({**dict(known), **{name: first[name] for name in known.new}}, exc) from exc
        if results is None:
            read |= known.new
            continue
        shape = [len(dtypes), *(len(o) for o in options)]
        return RuleTable((DTYPE_AXIS, *columns), np.array(results, dtype=bool).reshape(shape))


def _evaluate(holds: Holds, known: _KnownValues, dtypes: Sequence[str], names: Sequence[str],
              options: Sequence[Sequence[ParamValue]]) -> list[bool] | None:
    """The rule over the product of ``dtypes`` and the ``options`` of ``names`` (the last varying fastest), or None
    as soon as it reads a key outside ``names``."""
    params = _recording(known)
    results: list[bool] = []
    if not names:
        for dtype in dtypes:
            results.append(bool(holds(params, dtype)))
            if known.new:
                return None
        return results
    *outer_names, inner_name = names
    *outer_options, inner_options = options
    for dtype, outer in itertools.product(dtypes, itertools.product(*outer_options)):
        known.update(zip(outer_names, outer, strict=True))
        for value in inner_options:  # only the innermost parameter changes from one evaluation to the next
            known[inner_name] = value
            results.append(bool(holds(params, dtype)))
            if known.new:
                return None
    return results
