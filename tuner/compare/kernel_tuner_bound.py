"""Kernel Tuner's strategies with a bound on runs that no longer evaluate anything new (imports Kernel Tuner):
:class:`BoundedStrategy` runs a strategy unchanged with its budget replaced by a :class:`BoundedBudget` of the same
limits and clock, which also ends the run after :data:`tuner.compare.kernel_tuner_peer.STALL_PROPOSALS` proposals
in a row answered from evaluated configurations, or after :data:`~tuner.compare.kernel_tuner_peer.WALL_CAP_S` of
real time; why it ended is kept in :attr:`BoundedStrategy.cut`. Why: the README, "Bounded runs"."""

from __future__ import annotations

from typing import Any

from kernel_tuner import util
from kernel_tuner.interface import strategy_map

from tuner.compare.harness import STALLED, WALL_CAP


class BoundedBudget(util.TuningBudget):
    """Kernel Tuner's budget, ended also by a stall or the real-time cap (see the module's notes)."""

    def __init__(self, original: Any, stall_proposals: int, wall_cap_s: float) -> None:
        self.__dict__.update(original.__dict__)  # the same limits, counts and clock
        self.stall_proposals = stall_proposals
        self.wall_cap_s = wall_cap_s
        self.repeats = 0
        self.last_count: int | None = None
        self.cut = ""

    def is_done(self) -> bool:
        # The simulation asks before each configuration it answers: a count unchanged since the last ask means
        # the configuration answered then had been evaluated before.
        self.repeats = self.repeats + 1 if self.num_fevals == self.last_count else 0
        self.last_count = self.num_fevals
        return self._bounded() or bool(super().is_done())

    def raise_exception_if_done(self) -> None:
        if self._bounded():
            raise util.StopCriterionReached(f"run cut ({self.cut})")
        super().raise_exception_if_done()

    def _bounded(self) -> bool:
        if not self.cut and self.repeats >= self.stall_proposals:
            self.cut = STALLED
        if not self.cut and self.start_timer.get() >= self.wall_cap_s:
            self.cut = WALL_CAP
        return bool(self.cut)


class BoundedStrategy:
    """One of Kernel Tuner's strategies, run with a :class:`BoundedBudget` (Kernel Tuner takes any object with a
    ``tune`` method as a strategy)."""

    def __init__(self, name: str, stall_proposals: int, wall_cap_s: float) -> None:
        self.name = name
        self.strategy = strategy_map[name]
        self.stall_proposals = stall_proposals
        self.wall_cap_s = wall_cap_s
        self.cut = ""

    def tune(self, searchspace: Any, runner: Any, tuning_options: Any) -> Any:
        budget = BoundedBudget(tuning_options.budget, self.stall_proposals, self.wall_cap_s)
        tuning_options["budget"] = budget
        tuning_options["strategy"] = self.name  # what tune_kernel keeps of its argument (nsga2 reads its name)
        try:
            return self.strategy.tune(searchspace, runner, tuning_options)
        finally:
            self.cut = budget.cut
