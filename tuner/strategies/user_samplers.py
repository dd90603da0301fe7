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

import copy
import random
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import optuna
from optuna.samplers._lazy_random_state import LazyRandomState

from tuner.errors import TunerError

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
