"""Kernel Tuner's strategies on a recorded space in its simulation mode, scored as ours are: each run one
``tune_kernel(..., simulation_mode=True, cache=FILE)`` call over a cache file written from the recording
(:func:`cache_document`: its recorded cost split so that Kernel Tuner's simulated time is ours), with the same
restrictions (:func:`restrictions_of`), the same budget (``max_fevals`` or ``time_limit``) and seeded global
generators; its results read back as a :class:`tuner.compare.harness.BestSoFar` (:func:`curve_of`). How both sides
count: the README, "Comparing strategies on recorded spaces"."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import itertools
import json
import math
import os
import random
import tempfile
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tuner.compare.harness import MAX_REPEATS, STALLED, WALL_CAP, BestSoFar, Convention
from tuner.errors import TunerError
from tuner.measure.measurement import Status
from tuner.recorded import RecordedSpace

PREFIX = "kt:"
"""What names Kernel Tuner's strategies in a comparison."""
NO_BUDGET = ("brute_force",)
"""Strategies that take no budget (an exhaustive sweep is no search at these budgets)."""
NEEDS = {"skopt": "skopt", "pyatf_strategies": "pyatf"}
"""Strategies that import another package when they start (Kernel Tuner does not say so beforehand)."""
FAILURE_NAMES = {Status.INVALID.value: "InvalidConfig", Status.COMPILE_ERROR.value: "CompilationFailedConfig",
                 Status.CRASHED.value: "RuntimeFailedConfig", Status.WRONG.value: "RuntimeFailedConfig"}
INSTALL = "pip install kernel_tuner (or the project's extra: pip install -e \".[kernel_tuner]\")"
STALL_PROPOSALS = MAX_REPEATS
"""A run ends after this many proposals in a row answered from already evaluated configurations
(:mod:`tuner.compare.kernel_tuner_bound`), as a run of ours ends after as many repeats."""
WALL_CAP_S = 300.0
"""A run ends after this much real time (a safety net; the slowest run here takes well under a minute)."""
CUT_REASONS = {STALLED: f"{STALL_PROPOSALS:,} proposals in a row answered from already evaluated configurations",
               WALL_CAP: f"{WALL_CAP_S:.0f} s of real time"}


def available() -> str | None:
    """None where Kernel Tuner can be imported, else the one-line reason it cannot."""
    try:
        importlib.import_module("kernel_tuner")
    except ImportError as exc:
        return f"Kernel Tuner is not installed ({exc.msg}); {INSTALL}"
    return None


def version() -> str:
    from importlib.metadata import version as installed

    return installed("kernel_tuner")


def strategy_names() -> tuple[list[str], dict[str, str]]:
    """Kernel Tuner's strategies that run here with a budget, and why each other one does not."""
    reason = available()
    if reason is not None:
        raise TunerError(reason)
    from kernel_tuner.interface import strategy_map

    usable, skipped = [], {}
    for name in strategy_map:
        if name in NO_BUDGET:
            skipped[name] = "takes no budget (it evaluates every configuration)"
            continue
        needed = [NEEDS[name]] if name in NEEDS else []
        try:
            strategy_map[name].tune  # noqa: B018  (imports the strategy's module and what it needs at once)
        except ImportError as exc:
            needed.append(exc.name or name)
        missing = [module for module in needed if importlib.util.find_spec(module) is None]
        if missing:
            skipped[name] = f"needs the Python package '{missing[0]}', which is not installed"
            continue
        usable.append(name)
    return usable, skipped


def chosen_strategies(names: list[str] | None) -> list[str]:
    """The strategies named (all usable ones by default), each checked."""
    usable, skipped = strategy_names()
    if not names:
        return usable
    for name in names:
        if name in skipped:
            raise TunerError(f"Kernel Tuner's strategy '{name}' cannot run here: it {skipped[name]}")
        if name not in usable:
            raise TunerError(f"Kernel Tuner has no strategy '{name}'; choose from {', '.join(usable)}")
    return list(dict.fromkeys(names))


# --- the space as Kernel Tuner reads it -------------------------------------------------------------------------


def _failed_record(params: dict[str, Any]) -> dict[str, Any]:
    """A combination the recording lacks (it broke a constraint), as Kernel Tuner caches an invalid one: no time,
    no cost."""
    return {**params, "time": FAILURE_NAMES[Status.INVALID.value], "times": [], "compile_time": 0.0,
            "verification_time": 0.0, "benchmark_time": 0.0, "framework_time": 0.0, "strategy_time": 0.0}


def cache_document(space: RecordedSpace, convention: Convention = Convention.VALID) -> dict[str, Any]:
    """A Kernel Tuner cache (schema 1.0.0) of the recorded configurations: parameters and values as recorded, the
    time in ms or the failure's name, the runs, and the recorded cost as ``compile_time`` (the cost less the runs)
    plus ``benchmark_time`` (the runs), so that the simulation's time of a configuration is its recorded cost. Under
    convention (b) every other combination of the parameters' values is there too, invalid and costing nothing."""
    names = list(space.names)
    cache: dict[str, Any] = {}
    if Convention(convention) is Convention.PRODUCT:
        for values in itertools.product(*space.values):
            cache[",".join(str(v) for v in values)] = _failed_record(dict(zip(names, values, strict=True)))
    for row in range(len(space)):
        params = space.params_of(row)
        runs = space.runs_ms[row][~np.isnan(space.runs_ms[row])].tolist() if space.runs_ms.size else []
        benchmark = float(sum(runs))
        record: dict[str, Any] = {**params}
        record["time"] = float(space.time_ms[row]) if space.ok[row] else FAILURE_NAMES[str(space.status[row])]
        record.update(times=runs, compile_time=max(float(space.cost_s[row]) * 1000 - benchmark, 0.0),
                      verification_time=0.0, benchmark_time=benchmark, framework_time=0.0, strategy_time=0.0)
        cache[space.key_string(row)] = record
    return {"device_name": space.device or "recorded device", "kernel_name": space.kernel or "recorded_kernel",
            "problem_size": [1], "tune_params_keys": names,
            "tune_params": {name: list(values) for name, values in zip(names, space.values, strict=True)},
            "objective": "time", "cache": cache}


def restrictions_of(space: RecordedSpace, convention: Convention = Convention.VALID) -> list[Any] | None:
    """What Kernel Tuner's ``restrictions`` get: under convention (a) the recording's checked expressions, else
    membership in it; under (b) none (every combination is a candidate)."""
    if Convention(convention) is Convention.PRODUCT:
        return None
    if space.restrictions:
        return list(space.restrictions)
    names = list(space.names)
    recorded = {tuple(space.params_of(row).values()) for row in range(len(space))}

    def recorded_configuration(params: dict[str, Any]) -> bool:
        return tuple(params[name] for name in names) in recorded

    return [recorded_configuration]


# --- runs -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Budget:
    """A run's budget: evaluations, or elapsed seconds (Kernel Tuner's ``time_limit``)."""

    evaluations: int | None = None
    seconds: float | None = None

    def options(self) -> dict[str, Any]:
        return {"max_fevals": self.evaluations} if self.evaluations is not None else {"time_limit": self.seconds}


@dataclass
class _Job:
    space: RecordedSpace
    cache_path: str
    strategy: str
    budget: Budget
    convention: Convention = Convention.VALID


_job: _Job | None = None


def _set_job(job: _Job) -> None:
    global _job
    _job = job


def _run(seed: int) -> BestSoFar:
    assert _job is not None
    return run_once(_job.space, _job.cache_path, _job.strategy, _job.budget, seed, _job.convention)


def run_seed(seed: int, run: int) -> int:
    """The seed of run ``run`` of a strategy whose runs draw from ``seed``."""
    return int(np.random.SeedSequence((seed, run)).generate_state(1)[0])


def run_once(space: RecordedSpace, cache_path: str, strategy: str, budget: Budget, seed: int,
             convention: Convention = Convention.VALID) -> BestSoFar:
    """One run of Kernel Tuner's ``strategy`` on the space's cache file (written for ``convention``), as a
    best-so-far curve; bounded as :mod:`tuner.compare.kernel_tuner_bound` says."""
    from kernel_tuner import tune_kernel

    from tuner.compare.kernel_tuner_bound import BoundedStrategy

    bounded = BoundedStrategy(strategy, STALL_PROPOSALS, WALL_CAP_S)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    with _quiet():
        results, _ = tune_kernel(space.kernel or "recorded_kernel", "", (1,), [],
                                 {name: list(values) for name, values in zip(space.names, space.values, strict=True)},
                                 restrictions=restrictions_of(space, convention), cache=cache_path,
                                 simulation_mode=True, strategy=bounded, strategy_options=budget.options(),
                                 quiet=True, seed=seed)
    return curve_of(space, results, budget.evaluations, bounded.cut, convention)


def curve_of(space: RecordedSpace, results: list[dict[str, Any]], budget: int | None, cut: str = "",
             convention: Convention = Convention.VALID) -> BestSoFar:
    """The best-so-far curve of Kernel Tuner's results, in order (see the module's notes). Under convention (b) a
    combination the recording lacks counts as an evaluation that failed and cost nothing, as in our runs."""
    names = list(space.names)
    keys = space.encode(np.array([[space.values[j].index(result[name]) for j, name in enumerate(names)]
                                  for result in results], dtype=np.int64).reshape(len(results), len(names)))
    rows = space.rows_of(keys)
    value = np.where(space.ok, space.time_ms, np.inf)
    best, total, thinking = math.inf, 0.0, 0.0
    seen: set[int] = set()
    best_ms, cost_s, candidates, elapsed_s = [], [], [], []
    product = Convention(convention) is Convention.PRODUCT
    for result, key, row in zip(results, keys.tolist(), rows.tolist(), strict=True):
        thinking += (_ms(result.get("strategy_time")) + _ms(result.get("framework_time"))) / 1000
        if (row < 0 and not product) or key in seen or (budget is not None and len(seen) >= budget):
            continue
        seen.add(key)
        if row >= 0:
            best = min(best, float(value[row]))
            total += float(space.cost_s[row])
        best_ms.append(best)
        cost_s.append(total)
        candidates.append(row if not product else key)
        elapsed_s.append(total + thinking)
    return BestSoFar(np.array(best_ms), np.array(cost_s), np.array(candidates, dtype=np.int64), np.array(elapsed_s),
                     cut)


def _ms(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else 0.0


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Kernel Tuner's warnings (a configuration its restrictions reject, simulated) and prints, silenced."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


@contextlib.contextmanager
def cache_file(space: RecordedSpace, convention: Convention = Convention.VALID) -> Iterator[str]:
    """The space's cache document (for ``convention``) in a temporary file, for as long as the runs need it."""
    with tempfile.TemporaryDirectory(prefix="tuner-kt-") as folder:
        path = Path(folder) / "space.json"
        path.write_text(json.dumps(cache_document(space, convention)), encoding="utf-8")
        yield str(path)


def kernel_tuner_runs(space: RecordedSpace, cache_path: str, strategy: str, budget: Budget, runs: int,
                      seed: int = 0, workers: int | None = None,
                      convention: Convention = Convention.VALID) -> list[BestSoFar]:
    """``runs`` runs of one strategy with one budget, run r seeded by (seed, r), spread over ``workers``
    processes."""
    seeds = [run_seed(seed, r) for r in range(runs)]
    job = _Job(space, cache_path, strategy, budget, convention)
    workers = min(workers or os.cpu_count() or 1, runs)
    if workers <= 1:
        return [run_once(space, cache_path, strategy, budget, s, convention) for s in seeds]
    with ProcessPoolExecutor(max_workers=workers, initializer=_set_job, initargs=(job,)) as pool:
        return list(pool.map(_run, seeds, chunksize=max(1, runs // (4 * workers))))


RunMaker = Callable[[Budget, int], list[BestSoFar]]
