"""Every run of a comparison in one pool of processes, one run per work unit, the longest expected first.

A comparison asks for sets of runs (:class:`RunSet`): a strategy on a case with a budget of evaluations or a time
limit, so many runs. Running each set in a pool of its own leaves processes idle while the set's slowest run
finishes, and starts (and imports Kernel Tuner in) a pool per set. Here every run of every set is a unit of work
for one pool that lives as long as the comparison; the units are handed out longest expected first, so that the
last to finish are short ones. Run r of a set draws from the seed it would draw from in a pool of its own, so the
runs are the same whatever the number of processes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Protocol

from threadpoolctl import threadpool_limits

from tuner.compare import kernel_tuner_peer as kt
from tuner.compare.harness import BestSoFar, Convention, simulate, statistics
from tuner.compare.run_progress import RunProgress
from tuner.recorded import RecordedSpace
from tuner.strategies.protocol import StrategyFactory

KERNEL_TUNER_START_S = 0.1
"""What a run of Kernel Tuner costs before its first evaluation (reading the cache, building the space), in the
ordering's units of one evaluation per millisecond."""


@dataclass(frozen=True)
class RunSet:
    """``runs`` runs of a strategy on a space: ours (``factory``) or Kernel Tuner's (``peer``, its name)."""

    space: str
    convention: Convention
    strategy: str
    budget: int | None
    time_limit_s: float | None
    runs: int
    seed: int
    factory: StrategyFactory | None = None
    peer: str | None = None


@dataclass(frozen=True)
class _Shared:
    spaces: dict[str, RecordedSpace]
    cache_paths: dict[tuple[str, Convention], str]
    sets: list[RunSet]


_shared: _Shared | None = None


def _set_shared(shared: _Shared) -> None:
    global _shared
    _shared = shared
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the comparison, which ends the pool
    threadpool_limits(1)  # one core per process: the pool has a process per core


def run_one(shared: _Shared, index: int, run: int) -> BestSoFar:
    """Run ``run`` of set ``index``."""
    chosen = shared.sets[index]
    space = shared.spaces[chosen.space]
    if chosen.peer is not None:
        return kt.run_once(space, shared.cache_paths[(chosen.space, chosen.convention)], chosen.peer,
                           kt.Budget(chosen.budget, chosen.time_limit_s), kt.run_seed(chosen.seed, run),
                           chosen.convention)
    assert chosen.factory is not None
    return simulate(chosen.factory, space, chosen.budget, chosen.convention, (chosen.seed, run),
                    time_limit_s=chosen.time_limit_s)


def _unit(index: int, run: int) -> tuple[int, int, BestSoFar, float]:
    assert _shared is not None
    started = time.process_time()
    made = run_one(_shared, index, run)
    return index, run, made, time.process_time() - started


def expected_evaluations(chosen: RunSet, space: RecordedSpace) -> float:
    """How many evaluations a run of the set is expected to make: its budget, or what its time limit buys at the
    mean cost of a random draw; at most the space's size."""
    if chosen.budget is not None:
        return float(min(chosen.budget, len(space)))
    assert chosen.time_limit_s is not None
    return float(min(chosen.time_limit_s / statistics(space).time_per_draw_s, len(space)))


def weights(sets: list[RunSet], spaces: dict[str, RecordedSpace]) -> list[float]:
    """Each set's expected evaluations per run (Kernel Tuner's with the cost of its start added)."""
    return [expected_evaluations(s, spaces[s.space]) + (KERNEL_TUNER_START_S * 1000 if s.peer else 0.0)
            for s in sets]


def order(sets: list[RunSet], spaces: dict[str, RecordedSpace]) -> list[tuple[int, int]]:
    """Every (set, run), the runs of the sets with the most expected evaluations first."""
    weight = weights(sets, spaces)
    return [(i, r) for i in sorted(range(len(sets)), key=lambda i: -weight[i]) for r in range(sets[i].runs)]


@contextlib.contextmanager
def cache_files(spaces: dict[str, RecordedSpace],
                sets: list[RunSet]) -> Iterator[dict[tuple[str, Convention], str]]:
    """Kernel Tuner's cache file of each space and convention a set of Kernel Tuner's runs needs, for as long as
    they run."""
    with contextlib.ExitStack() as stack:
        needed = dict.fromkeys((s.space, s.convention) for s in sets if s.peer is not None)
        yield {(name, convention): stack.enter_context(kt.cache_file(spaces[name], convention))
               for name, convention in needed}


Progress = Callable[[str], None]


class Keeper(Protocol):
    """Where finished sets are kept (:mod:`tuner.compare.kept_runs`)."""

    def get(self, chosen: RunSet) -> list[BestSoFar] | None:
        """The set's runs, when they were kept."""
        ...

    def keep(self, chosen: RunSet, runs: list[BestSoFar]) -> None:
        """Keep a set whose runs have all ended."""
        ...


class _Found:
    """The runs made so far, by set and run; a set is handed to the keeper when its last run ends."""

    def __init__(self, sets: list[RunSet], kept: Keeper | None):
        self.sets, self.kept = sets, kept
        self.runs: list[list[BestSoFar | None]] = [[None] * s.runs for s in sets]
        self.missing = [s.runs for s in sets]
        for index, chosen in enumerate(sets):
            earlier = kept.get(chosen) if kept is not None else None
            if earlier is not None:
                self.runs[index], self.missing[index] = list(earlier), 0

    def add(self, index: int, run: int, made: BestSoFar) -> None:
        self.runs[index][run] = made
        self.missing[index] -= 1
        if self.missing[index] == 0 and self.kept is not None:
            self.kept.keep(self.sets[index], [r for r in self.runs[index] if r is not None])

    def result(self) -> list[list[BestSoFar]]:
        return [[made for made in runs if made is not None] for runs in self.runs]


def run_sets(sets: list[RunSet], spaces: dict[str, RecordedSpace], jobs: int | None = None,
             progress: Progress | None = None, kept: Keeper | None = None) -> list[list[BestSoFar]]:
    """Every set's runs, in order, over ``jobs`` processes (one per CPU by default; 1: in this one); ``kept``: the
    sets kept by an earlier comparison, taken from there, and where each set is kept as its last run ends."""
    found = _Found(sets, kept)
    units = [(index, run) for index, run in order(sets, spaces) if found.missing[index]]
    workers = min(jobs or os.cpu_count() or 1, max(len(units), 1))
    weight = weights(sets, spaces)
    with cache_files(spaces, [s for s, missing in zip(sets, found.missing, strict=True) if missing]) as paths, \
            contextlib.closing(RunProgress([(sets[i].strategy, weight[i]) for i, _ in units], progress)) as shown:
        shared = _Shared(spaces, paths, sets)

        def report(index: int, cpu_s: float) -> None:
            shown(sets[index].strategy, sets[index].space, weight[index], cpu_s)

        if workers <= 1:
            for index, run in units:
                started = time.process_time()
                found.add(index, run, run_one(shared, index, run))
                report(index, time.process_time() - started)
        else:
            with ProcessPoolExecutor(max_workers=workers, initializer=_set_shared, initargs=(shared,)) as pool:
                try:
                    _run_in_pool(pool, units, 2 * workers, found, report)
                except KeyboardInterrupt:
                    pool.shutdown(wait=True, cancel_futures=True)  # the units under way end soon; none start
                    raise
    return found.result()


def _run_in_pool(pool: ProcessPoolExecutor, units: list[tuple[int, int]], ahead: int, found: _Found,
                 report: Callable[[int, float], None]) -> None:
    pending: set[Future[tuple[int, int, BestSoFar, float]]] = set()
    queue = iter(units)
    for index, run in queue:  # a few units ahead per process, the rest handed out as they finish
        pending.add(pool.submit(_unit, index, run))
        if len(pending) >= ahead:
            break
    while pending:
        done, pending = wait(pending, return_when=FIRST_COMPLETED)
        for future in done:
            index, run, made, seconds = future.result()
            found.add(index, run, made)
            report(index, seconds)
            following = next(queue, None)
            if following is not None:
                pending.add(pool.submit(_unit, *following))
