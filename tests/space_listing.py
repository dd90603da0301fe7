"""The configurations of an experiment listed whole, for the tests: a run makes them on demand, one study at a
time
(:mod:`tuner.search.study_space`), and never needs the whole list."""

from __future__ import annotations

from dataclasses import dataclass

from tuner.config import Config, Problem
from tuner.space.configs import ConfigSequence, union
from tuner.space.entry_space import Entries, EntrySpace, KernelSpec, entry_space, entry_spaces


@dataclass(frozen=True)
class KernelSpace:
    """The configurations of one kernel entry for one problem."""

    problem: Problem
    entry: EntrySpace

    @property
    def family(self) -> str:
        return self.entry.family.name

    @property
    def valid(self) -> ConfigSequence:
        return ConfigSequence(self.problem, ((self.entry, self.entry.valid_rows),))

    @property
    def rejected(self) -> ConfigSequence:
        return ConfigSequence(self.problem, ((self.entry, self.entry.invalid_rows),))

    @property
    def size_before(self) -> int:
        return self.entry.size

    @property
    def size_after(self) -> int:
        return len(self.entry.valid_rows)


def kernel_space(spec: KernelSpec, problem: Problem) -> KernelSpace:
    return KernelSpace(problem, entry_space(spec))


def experiment_space(experiment: Entries) -> list[KernelSpace]:
    """One KernelSpace per problem and kernel entry, problems first."""
    entries = entry_spaces(experiment)
    return [KernelSpace(problem, entry) for problem in experiment.problems for entry in entries]


def valid_configs(experiment: Entries) -> list[Config]:
    """Every valid configuration of the experiment, without repeats, in a deterministic order."""
    entries = entry_spaces(experiment)
    return [config for problem in experiment.problems for config in union(problem, entries)]
