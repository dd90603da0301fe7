"""The search space: every combination of an experiment's parameter values, and the static constraints
that reject some of them before anything is compiled."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol

from tuner.config import Config, Problem
from tuner.kernels.discovery import get_family
from tuner.kernels.family import Constraint, Family, Params
from tuner.kernels.targets import Target, target
from tuner.settings import CompileSettings


@dataclass(frozen=True)
class KernelSpec:
    """One kernel entry of an experiment: a family, the values to search per parameter, the dtypes, and the
    architecture whose resource limits the configurations must respect."""

    family: str
    values: dict[str, tuple[Any, ...]]
    dtypes: tuple[str, ...]
    arch: str = CompileSettings().arch


class Entries(Protocol):
    """What the space needs of an experiment: its problems and kernel entries."""

    @property
    def problems(self) -> tuple[Problem, ...]: ...

    @property
    def kernels(self) -> tuple[KernelSpec, ...]: ...


def rules(family: Family, on: Target | None = None) -> tuple[Constraint, ...]:
    """Every static rule of ``family`` on the target ``on`` (default: the default compile target): the
    target's resource limits first, then the family's own constraints."""
    return _rules(family, on or target(CompileSettings().arch))


@cache
def _rules(family: Family, on: Target) -> tuple[Constraint, ...]:
    return (*family.resource_rules(on), *family.constraints)


def violations(family: Family, params: Params, dtype: str, on: Target | None = None) -> list[str]:
    """The static rules these parameter values break (empty when the configuration is valid); only the broken
    preconditions where there are any, since the other rules rely on them."""
    broken = family.broken_preconditions(params, dtype)
    if broken:
        return broken
    return [rule.description for rule in rules(family, on) if not rule.precondition and not rule.holds(params, dtype)]


def combinations(spec: KernelSpec) -> Iterator[tuple[str, dict]]:
    """Every (dtype, parameter values) combination a kernel entry lists, in file order."""
    names = list(spec.values)
    for dtype in spec.dtypes:
        for combo in itertools.product(*(spec.values[n] for n in names)):
            yield dtype, dict(zip(names, combo, strict=True))


def count_valid(spec: KernelSpec) -> tuple[int, int, Counter]:
    """(combinations, valid combinations, how many each rule rejected) for one kernel entry."""
    family = get_family(spec.family)
    on = target(spec.arch)
    total = valid = 0
    reasons: Counter = Counter()
    for dtype, params in combinations(spec):
        total += 1
        broken = violations(family, params, dtype, on)
        valid += not broken
        reasons.update(broken)
    return total, valid, reasons


@dataclass(frozen=True)
class KernelSpace:
    """The configurations of one kernel entry for one problem."""

    problem: Problem
    family: str
    valid: tuple[Config, ...]
    rejected: tuple[tuple[Config, str], ...]

    @property
    def size_before(self) -> int:
        return len(self.valid) + len(self.rejected)

    @property
    def size_after(self) -> int:
        return len(self.valid)


def kernel_space(spec: KernelSpec, problem: Problem) -> KernelSpace:
    family = get_family(spec.family)
    on = target(spec.arch)
    valid, rejected = [], []
    for dtype, params in combinations(spec):
        config = Config.make(problem, spec.family, dtype, params)
        broken = violations(family, params, dtype, on)
        if broken:
            rejected.append((config, "; ".join(broken)))
        else:
            valid.append(config)
    return KernelSpace(problem, spec.family, tuple(valid), tuple(rejected))


def experiment_space(experiment: Entries) -> list[KernelSpace]:
    """One KernelSpace per problem and kernel entry, problems first."""
    return [kernel_space(spec, problem) for problem in experiment.problems for spec in experiment.kernels]


def valid_configs(experiment: Entries) -> list[Config]:
    """Every valid configuration of the experiment, without repeats, in a deterministic order."""
    seen: dict[Config, None] = {}
    for space in experiment_space(experiment):
        seen.update(dict.fromkeys(space.valid))
    return list(seen)
