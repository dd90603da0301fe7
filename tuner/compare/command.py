"""``python -m tuner compare``: score search strategies on recorded spaces and write the table, figures and page.

Output folder (default ``reports/compare``): ``comparison.txt`` (the table), ``comparison.json`` (settings, rows
and curves), ``comparison.csv`` (one row per space, convention, strategy and budget), one
``curves_<space>_<convention>.png`` per case and ``comparison.html``; where Kernel Tuner's strategies ran,
``summary.md`` (the default strategy against Kernel Tuner's best on each space, and every space's table); ``runs/``:
each finished cell's runs (:mod:`tuner.compare.kept_runs`), which a comparison into the same folder takes instead of
running them again, so that one interrupted goes on where it stopped.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tuner.compare import kernel_tuner_peer as kt
from tuner.compare.comparison import (
    DEFAULT_BUDGETS,
    DEFAULT_RUNS,
    CaseResult,
    brute_force_cost,
    compare,
    optuna_names,
    strategy_factories,
)
from tuner.compare.harness import Convention, cost_per_draw, statistics
from tuner.compare.inputs import recorded_spaces
from tuner.compare.kept_runs import KeptRuns
from tuner.compare.methodology import MethodologyError
from tuner.errors import Interrupted, TunerError
from tuner.recorded import RecordedSpace
from tuner.strategies.catalog import DEFAULT

CONVENTIONS = {"a": (Convention.VALID,), "b": (Convention.PRODUCT,), "both": tuple(Convention)}
DEFAULT_OUT = Path("reports") / "compare"
MAX_CANDIDATES = 2**22
"""The most candidates a space may offer under a convention: a run keeps a value and a cost per candidate."""
PEERS = ("kernel_tuner",)


def run_comparison(paths: list[str | Path], strategies: list[str] | None = None, repeats: int = DEFAULT_RUNS,
                   budgets: tuple[int, ...] = DEFAULT_BUDGETS, convention: str = "both", jobs: int | None = None,
                   out: str | Path = DEFAULT_OUT, seed: int = 0, quiet: bool = False, peers: list[str] | None = None,
                   score_repeats: int | None = None, peer_repeats: int | None = None) -> list[CaseResult]:
    """Score ``strategies`` (every one of ours by default; ``optuna`` stands for every Optuna sampler that runs
    here) and the ``peers`` (``kernel_tuner`` or ``kernel_tuner:NAME,NAME``, ``peer_repeats`` runs of each) on the
    recorded spaces ``paths`` name, and write the outputs into ``out``."""
    if convention not in CONVENTIONS:
        raise TunerError(f"unknown convention '{convention}'; choose a (valid configurations), b (the full "
                         f"product) or both")
    if jobs is not None and jobs < 1:
        raise TunerError(f"--jobs must be at least 1, not {jobs}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise TunerError(f"--seed must be a whole number ≥ 0, not {seed!r}")
    if strategies:
        strategies = [n for name in strategies for n in (optuna_names() if name == "optuna" else [name])]
    factories = strategy_factories(strategies)
    peer_names = peer_strategies(peers)
    spaces = recorded_spaces(paths)
    for space in spaces.values():
        for case_convention in CONVENTIONS[convention]:
            refusal = unscorable(space, case_convention)
            if refusal is not None:
                raise TunerError(f"{space.source}: {refusal}")
    budgets = capped_budgets(budgets, spaces, CONVENTIONS[convention], None if quiet else _note)
    folder = Path(out)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TunerError(f"{folder}: the output folder cannot be created ({exc.strerror or exc})") from None
    started = time.monotonic()
    kept = KeptRuns(folder, spaces)
    try:
        results = compare(spaces, factories, budgets, CONVENTIONS[convention], repeats, seed, jobs,
                          progress=None if quiet else _note, peers=peer_names, score_runs=score_repeats,
                          peer_runs=peer_repeats, kept=kept)
    except KeyboardInterrupt:
        print(f"interrupted: {kept.reused + kept.kept} finished cell(s) (a strategy's runs on a space with a budget) "
              f"are kept in {kept.folder}; run the same command again to go on from them", file=sys.stderr)
        raise Interrupted from None
    if kept.reused and not quiet:
        _note(f"{kept.reused} cell(s) taken from an earlier comparison in {kept.folder}")
    settings: dict[str, Any] = {
        "spaces": {name: space.source for name, space in spaces.items()}, "strategies": list(factories),
        "peers": [kt.PREFIX + name for name in peer_names], "repeats": repeats,
        "score_repeats": score_repeats or repeats, "budgets": sorted(set(budgets)), "convention": convention,
        "seed": seed, "jobs": jobs or os.cpu_count(), "scoring_s": round(time.monotonic() - started, 1),
    }
    if peer_names:
        settings["kernel_tuner"] = kt.version()
        settings["peer_repeats"] = peer_repeats or repeats
        settings["run_bounds"] = dict(kt.CUT_REASONS)
        settings["kernel_tuner_left_out"] = kt.strategy_names()[1]
    write_outputs(results, folder, settings)
    if not quiet:
        _note(f"comparison written in {folder} in {time.monotonic() - started:.0f} s")
    return results


def domain_size(space: RecordedSpace, convention: Convention) -> int:
    """The candidates a strategy draws from under a convention: the recorded configurations, or the product."""
    return len(space) if convention is Convention.VALID else space.product_size


def capped_budgets(budgets: tuple[int, ...], spaces: dict[str, RecordedSpace], conventions: tuple[Convention, ...],
                   note: Callable[[str], None] | None) -> tuple[int, ...]:
    """The budgets, each at most the largest space's size (no run evaluates more than every candidate once, and
    the curves are held as long as the largest budget)."""
    largest = max(domain_size(space, c) for space in spaces.values() for c in conventions)
    capped = tuple(sorted({min(b, largest) for b in budgets}))
    if note is not None and max(budgets) > largest:
        note(f"--budgets: {max(budgets):,} is more than the {largest:,} candidates of the largest space; the budgets "
             f"are capped at {largest:,}")
    return capped


def unscorable(space: RecordedSpace, convention: Convention) -> str | None:
    """Why the scores of a comparison are not defined on a space under a convention (they would read inf or NaN),
    or None where they are."""
    if domain_size(space, convention) > MAX_CANDIDATES:
        return (f"under convention {convention.value} its {domain_size(space, convention):,} candidates are more than "
                f"the {MAX_CANDIDATES:,} a comparison draws from (each run holds a value per candidate); compare "
                f"under convention a (--convention a), which draws from its {len(space):,} recorded configurations")
    stats = statistics(space)
    ok = len(stats.times_ms)
    if ok == 0:
        return (f"none of its {len(space):,} recorded configuration(s) ran ok ({_outcomes(space)}), so there is no "
                f"optimum to score strategies against; compare on a recording with successful configurations")
    try:
        stats.axis_evaluations()
    except MethodologyError:
        return (f"its {ok} configuration(s) that ran ok are too few or too alike to score strategies on (random "
                f"search is as good as the optimum from its first evaluations, so the methodology score has no axis "
                f"to average over); compare on a larger recorded space")
    if not brute_force_cost(space) > 0 or not cost_per_draw(space, convention) > 0:
        return ("it records no compile or benchmark time, and the scores over recorded time need one; give a "
                "recording that holds them (Kernel Tuner's compile_time, benchmark_time or times)")
    return None


def write_outputs(results: list[CaseResult], out: Path, settings: dict[str, Any]) -> list[Path]:
    from tuner.compare.figures import write_figure  # matplotlib only now
    from tuner.compare.markdown import write_summary
    from tuner.compare.page import write_page
    from tuner.compare.table import text_table, write_tables

    written = write_tables(results, out, settings)
    summary = write_summary(results, DEFAULT, out, settings)
    written += [summary] if summary is not None else []
    images = {i: write_figure(result, out) for i, result in enumerate(results)}
    written += [*images.values(), write_page(results, images, out, settings)]
    print(text_table(results))
    return written


def peer_strategies(peers: list[str] | None) -> list[str]:
    """Kernel Tuner's strategies that ``--peers`` names: ``kernel_tuner`` for every one that runs here,
    ``kernel_tuner:NAME,NAME`` for some."""
    chosen: list[str] = []
    for text in peers or []:
        peer, _, names = text.partition(":")
        if peer not in PEERS:
            raise TunerError(f"unknown peer '{peer}'; the one peer is kernel_tuner (Kernel Tuner's strategies)")
        chosen += kt.chosen_strategies([n for n in names.split(",") if n] or None)
    return list(dict.fromkeys(chosen))


def _note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def parse_budgets(text: str) -> tuple[int, ...]:
    """``100,400,1600`` → (100, 400, 1600)."""
    try:
        budgets = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise TunerError(f"--budgets takes whole numbers separated by commas (100,400,1600), not '{text}'") from None
    if not budgets or min(budgets) < 1:
        raise TunerError(f"--budgets takes whole numbers ≥ 1 separated by commas, not '{text}'")
    return budgets


def _outcomes(space: RecordedSpace) -> str:
    counts = space.status_counts()
    return ", ".join(f"{count:,} {status}" for status, count in counts.items()) or "none recorded"
