"""An Optuna sampler object given by the user (``strategy=optuna.samplers.TPESampler(seed=1)``), copied for each trial.

One sampler object cannot serve several studies (TPE's search space remembers the first study it saw and refuses
the next), and one used across trials proposes what its random state has come to, which a resumed run cannot
know. So the object is copied once when the run starts (a sampler that cannot be copied is refused before anything
is written), and each trial asks a fresh copy of that pristine one whose random states (Optuna's lazy random
states, numpy's RandomState and Generator, Python's Random, those of the samplers it holds) are seeded from the
run's seed, the study and the trial, like the samplers named by their names. The object's own seed counts too:
two runs with ``TPESampler(seed=1)`` propose the same, and ``seed=2`` proposes otherwise.
"""

from __future__ import annotations

import contextlib
import copy
import random
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import optuna
from optuna.samplers._lazy_random_state import LazyRandomState
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState

from tuner.errors import TunerError
from tuner.strategies.sampler import History, OptunaProposer

SamplerMaker = Callable[[int, int], optuna.samplers.BaseSampler]


def pristine_copy(sampler: optuna.samplers.BaseSampler) -> optuna.samplers.BaseSampler:
    """A copy of the object as given, or TunerError where it cannot be copied."""
    try:
        return copy.deepcopy(sampler)
    except Exception as exc:  # whatever the object holds that cannot be copied
        raise TunerError(f"the sampler object {type(sampler).__name__} cannot be copied ({type(exc).__name__}: "
                         f"{exc}); each study and trial needs a copy of its own, so give a sampler that "
                         f"copy.deepcopy can copy, or a sampler's name") from None


def copies_of(sampler: optuna.samplers.BaseSampler) -> SamplerMaker:
    """Makes, from (the study's seed, the trial's seed), a fresh copy of the sampler seeded by them and its own
    seed (see the module text)."""
    pristine = pristine_copy(sampler)
    own = _own_seed(pristine)

    def make(study_seed: int, trial_seed: int) -> optuna.samplers.BaseSampler:
        made = copy.deepcopy(pristine)
        for offset, holder in enumerate(_random_states(made)):
            _seed(holder, (trial_seed * 1_000_003 + own + offset * 7919) % 2**32)
        return made

    return make


class GivenSamplerProposer(OptunaProposer):
    """Proposals of a sampler object given by the user: whatever it raises while it proposes (an assertion of
    Optuna's, a grid of other parameters) is a TunerError naming it, rather than a traceback."""

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        with self._driven():
            super().before_trial(study, trial)

    def propose(self, study: Study, trial: FrozenTrial, history: History) -> np.ndarray:
        with self._driven():
            return super().propose(study, trial, history)

    def after_trial(self, study: Study, trial: FrozenTrial, state: TrialState,
                    values: Sequence[float] | None) -> None:
        with self._driven():
            super().after_trial(study, trial, state, values)

    @contextlib.contextmanager
    def _driven(self) -> Iterator[None]:
        try:
            yield
        except (TunerError, KeyboardInterrupt):
            raise
        except Exception as exc:  # the object's own code: any failure means it cannot drive this search
            raise TunerError(f"the sampler object {self.name} cannot search this space ({type(exc).__name__}: "
                             f"{str(exc)[:200] or 'no message'}); the space's parameters are "
                             f"{', '.join(self.parameters.index_distributions())}: give a sampler that proposes "
                             f"values for them, or a strategy's name") from None


def _own_seed(sampler: optuna.samplers.BaseSampler) -> int:
    """A number drawn from a copy of the sampler's first seeded random state (0 where none was seeded)."""
    for holder in _random_states(copy.deepcopy(sampler)):
        state = holder._rng if isinstance(holder, LazyRandomState) else holder
        if isinstance(state, np.random.RandomState):
            return int(state.randint(2**31))
        if isinstance(state, np.random.Generator):
            return int(state.integers(2**31))
        if isinstance(state, random.Random):
            return state.randrange(2**31)
    return 0


def _random_states(sampler: object, depth: int = 0) -> Iterator[Any]:
    """The random states a sampler holds, its own and those of the samplers it holds, in attribute order."""
    for value in vars(sampler).values() if hasattr(sampler, "__dict__") else ():
        if isinstance(value, LazyRandomState | np.random.RandomState | np.random.Generator | random.Random):
            yield value
        elif isinstance(value, optuna.samplers.BaseSampler) and depth < 4:
            yield from _random_states(value, depth + 1)


def _seed(holder: Any, seed: int) -> None:
    if isinstance(holder, LazyRandomState):
        holder.rng.seed(seed)
    elif isinstance(holder, np.random.RandomState | random.Random):
        holder.seed(seed)
    else:  # a Generator: its bit generator takes the state of a new one of its kind
        holder.bit_generator.state = type(holder.bit_generator)(seed).state
