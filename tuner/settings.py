"""The settings of a run: how to search, how to measure, how to compile.

This module imports nothing of the project, so that the measuring process, the compiler pool and the report
can take settings without pulling in the experiment parser.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

STORAGE_FILE = "study.log"
"""The Optuna storage a run keeps in its output folder unless another storage is named: a journal file, which
this process alone writes (the folder's lock sees to that), one appended line per change."""
COUNTERS_CHOICES = ("none", "best", "all")
COUNTERS_BEST = 3
"""Configurations of each study whose counters ``counters: best`` reads: the fastest this many."""

Named = TypeVar("Named", bound=Callable[..., Any])


def renamed_keyword(former: str, name: str) -> Callable[[Named], Named]:
    """A function's or dataclass's keyword ``name`` refused under ``former``, its name before, with a TypeError that
    names it as it is called now."""

    def refusing(target: Named) -> Named:
        function = getattr(target, "__init__") if isinstance(target, type) else target  # noqa: B009
        owner = target.__qualname__

        @functools.wraps(function)
        def called(*args: Any, **kwargs: Any) -> Any:
            if former in kwargs:
                raise TypeError(f"{owner}(): {former} is called {name} now")
            return function(*args, **kwargs)

        if isinstance(target, type):
            setattr(target, "__init__", called)  # noqa: B010
            return target
        return called  # type: ignore[return-value]

    return refusing


@dataclass(frozen=True)
class SearchSettings:
    strategy: str = "bo"
    """A strategy of tuner.strategies.catalog (its DEFAULT)."""
    trials: int = 40
    """Distinct configurations evaluated per study at most."""
    timeout_s: float | None = None
    seed: int = 0
    transfer: int = 0
    """Configurations measured fastest on the run's earlier problems tried first on each next one of the same
    dtype and kernels (tuner.search.transfer); 0: none."""
    objective: tuple[str, ...] = ("time",)
    """What the search pursues (tuner.results.objectives): ("time",), ("energy",), ("edp",) or ("time", "energy")."""


@renamed_keyword("flush_l2", "cold_caches")
@dataclass(frozen=True)
class MeasureSettings:
    cold_caches: bool = True
    """Evict the device's caches before each timed sample, untimed: the L2 on a GPU, every level on a CPU."""
    warmup: int = 2
    min_samples: int = 10
    max_samples: int = 200
    max_time_s: float = 2.0
    target_noise: float = 0.005
    """Stop sampling once the standard error of the mean falls under this fraction of the mean."""
    timeout_s: float = 60.0
    """Per-evaluation limit: a kernel still running then is a hang and its measuring process is killed."""
    verify: bool = True
    input_seed: int = 0
    energy: bool = False
    """Measure one launch's energy after the timed samples (tuner.energy); on whenever the objective needs it."""
    counters: str = "best"
    """Hardware counters read after the search, outside the timed samples (tuner.counters): none, best (the
    fastest COUNTERS_BEST configurations of each study) or all (every successful configuration)."""


@dataclass(frozen=True)
class CompileSettings:
    arch: str = "sm_90"
    options: tuple[str, ...] = ("-O3",)
    workers: int | None = None
    """Parallel compiler processes; None means one per CPU core."""


def cache_root() -> Path:
    """Where compiled kernels and measured ceilings are cached: ``$TUNER_CACHE_DIR``, else ``~/.cache/tuner``."""
    return Path(os.environ.get("TUNER_CACHE_DIR") or Path.home() / ".cache" / "tuner")
