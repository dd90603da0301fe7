"""The search space: every combination of an experiment's parameter values, and the static constraints
that reject some of them before anything is compiled."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tuner.config import DTYPE_BYTES, Config, Problem
from tuner.family import MAX_THREADS_PER_BLOCK, Family, Params, get_family

if TYPE_CHECKING:
    from tuner.experiment import Experiment, KernelSpec


def violations(family: Family, params: Params, dtype: str) -> list[str]:
    """The static rules these parameter values break (empty when the configuration is valid); only the broken
    preconditions where there are any."""
    broken = family.broken_preconditions(params, dtype)
    if broken:
        return broken
    threads = family.threads_per_block(params)
    if threads > MAX_THREADS_PER_BLOCK:
        broken.append(f"threads per block ≤ {MAX_THREADS_PER_BLOCK}")
    if family.shared_bytes(params, DTYPE_BYTES[dtype]) > family.shared_limit:
        broken.append(f"shared memory per block ≤ {family.shared_limit // 1024} KB")
    for constraint in family.constraints:
        if not constraint.precondition and not constraint.holds(params, dtype):
            broken.append(constraint.description)
    return broken


def combinations(spec: KernelSpec) -> Iterator[tuple[str, dict]]:
    """Every (dtype, parameter values) combination a kernel entry lists, in file order."""
    names = list(spec.values)
    for dtype in spec.dtypes:
        for combo in itertools.product(*(spec.values[n] for n in names)):
            yield dtype, dict(zip(names, combo, strict=True))


def count_valid(spec: KernelSpec) -> tuple[int, int, Counter]:
    """(combinations, valid combinations, how many each rule rejected) for one kernel entry."""
    family = get_family(spec.family)
    total = valid = 0
    reasons: Counter = Counter()
    for dtype, params in combinations(spec):
        total += 1
        broken = violations(family, params, dtype)
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
    valid, rejected = [], []
    for dtype, params in combinations(spec):
        config = Config.make(problem, spec.family, dtype, params)
        broken = violations(family, params, dtype)
        if broken:
            rejected.append((config, "; ".join(broken)))
        else:
            valid.append(config)
    return KernelSpace(problem, spec.family, tuple(valid), tuple(rejected))


def experiment_space(experiment: Experiment) -> list[KernelSpace]:
    """One KernelSpace per problem and kernel entry, problems first."""
    return [kernel_space(spec, problem) for problem in experiment.problems for spec in experiment.kernels]


def valid_configs(experiment: Experiment) -> list[Config]:
    """Every valid configuration of the experiment, without repeats, in a deterministic order."""
    seen: dict[Config, None] = {}
    for space in experiment_space(experiment):
        seen.update(dict.fromkeys(space.valid))
    return list(seen)
