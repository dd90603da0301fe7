"""The one protocol every search strategy follows, wherever it runs.

A strategy is made for one :class:`~tuner.strategies.domain.Domain` and a numpy random generator (a
:data:`StrategyFactory` takes both), proposes candidates (``ask``) and is told results (``tell``). The same
object runs in a tuning study (:mod:`tuner.strategies.sampler` puts it inside the Optuna study) and in the
comparison harness on recorded spaces (:mod:`tuner.compare.harness`).

The contract:

* ``ask()`` returns a candidate that was neither told nor asked before (the strategy keeps track). It may be
  called several times before any ``tell``: a study asks a few configurations ahead so that the next ones
  compile while one is measured.
* ``tell(candidate, value)`` gives a candidate's value, to be minimised: a time, or anything proportional to
  one (a study tells the inverse of the GFLOP/s), ``inf`` for a failure. Any candidate may be told, also one the
  strategy did not ask (a result from another worker, a resumed study's history, a configuration someone put in
  the queue), and a strategy must take it as information.
* Everything a strategy does is a function of the generator it was given and of the sequence of calls, so a
  strategy fed the same calls again proposes the same candidates: that is how a resumed study rebuilds it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np

from tuner.strategies.domain import Domain


@runtime_checkable
class Strategy(Protocol):
    def ask(self) -> int:
        """The next candidate to evaluate: one neither told nor asked before."""
        ...

    def tell(self, candidate: int, value: float) -> None:
        """A candidate's value, to be minimised (``inf``: it failed)."""
        ...


StrategyFactory = Callable[[Domain, np.random.Generator], Strategy]
"""Makes a strategy for a domain, drawing its randomness from the generator (a strategy class is one)."""
