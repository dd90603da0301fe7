"""An honest measure of the prediction on recorded runs: each tuned shape is held out in turn, a configuration is
predicted for it from the other shapes alone, and the time the runs recorded for that configuration on the held-out
shape is set against the shape's own best. A predicted configuration the runs never measured on the held-out shape
cannot be scored; it is counted, not guessed. Each row says where the predicted configuration ranks among the
configurations recorded on the held-out shape (1: the shape's own best)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from tuner.config import Config, Problem
from tuner.names.key_text import pairs_text
from tuner.table.build import KEPT_PER_SHAPE
from tuner.table.evaluations import Recorded
from tuner.table.predict import Candidate, candidates_of, predict

SOURCES = ("table", "evaluations")
"""Predict from the other shapes' fastest few configurations alone (what a kernel table holds: its winner and
alternatives), or from every ok evaluation."""


@dataclass(frozen=True)
class HeldOut:
    problem: Problem
    dtype: str
    source: str
    best_ms: float
    predicted: Config | None
    neighbour: Problem | None
    predicted_ms: float | None
    """What the runs recorded for the predicted configuration on this shape; None where they never measured it."""
    rank: int | None = None
    """Where the predicted configuration ranks among those recorded on this shape (1: its best); None: not there."""
    recorded_here: int = 0
    """How many configurations the runs recorded on this shape."""

    @property
    def share_of_best(self) -> float | None:
        return self.best_ms / self.predicted_ms if self.predicted_ms else None


def _pool(runs: Recorded, source: str) -> list[Candidate]:
    pairs = list(runs.times.items())
    candidates = candidates_of(pairs, runs.multiprocessors, runs.arch)
    if source == "table":
        ranked = sorted(candidates, key=lambda c: (c.time_ms, c.config.key))
        seen: dict[tuple[Problem, str], int] = {}
        candidates = []
        for c in ranked:
            shape = (c.config.problem, c.config.dtype)
            seen[shape] = seen.get(shape, 0) + 1
            if seen[shape] <= KEPT_PER_SHAPE:
                candidates.append(c)
    return candidates


def hold_out(runs: Recorded, source: str) -> list[HeldOut]:
    """One row per recorded shape and dtype that has another shape of its dtype to be predicted from."""
    pool = _pool(runs, source)
    shapes = sorted({(c.config.problem, c.config.dtype) for c in pool}, key=lambda s: (s[1], s[0].label))
    rows = []
    for problem, dtype in shapes:
        others = [c for c in pool if c.config.problem != problem]
        if not any(c.config.dtype == dtype for c in others):
            continue
        here = sorted((t, c.key) for c, t in runs.times.items() if c.problem == problem and c.dtype == dtype)
        found = predict(others, problem, dtype)
        measured = runs.times.get(found.config) if found else None
        rank = here.index((measured, found.config.key)) + 1 if found and measured is not None else None
        rows.append(HeldOut(problem, dtype, source, here[0][0], found.config if found else None,
                            found.neighbour.config.problem if found else None, measured, rank, len(here)))
    return rows


def report(rows: Sequence[HeldOut], title: str) -> str:
    """The held-out shapes, predicted against their own best, and a summary per source."""
    lines = [title, "",
             f"{'held-out shape':<18}{'dtype':<24}{'from':<13}{'neighbour':<18}{'best ms':>10}{'predicted ms':>14}"
             f"{'time/best':>11}{'share':>8}{'rank':>9}  predicted configuration"]
    for r in rows:
        cell = (f"{r.predicted_ms:>14.4f}{r.predicted_ms / r.best_ms:>11.3f}{r.best_ms / r.predicted_ms:>8.3f}"
                f"{f'{r.rank}/{r.recorded_here}':>9}"
                if r.predicted_ms else f"{'not measured' if r.predicted else 'none valid':>14}{'—':>11}{'—':>8}"
                                       f"{'—':>9}")
        neighbour = r.neighbour.label if r.neighbour else "—"
        chosen = f"{r.predicted.family} {pairs_text(r.predicted.params)}" if r.predicted else "—"
        lines.append(f"{r.problem.label:<18}{r.dtype:<24}{r.source:<13}{neighbour:<18}{r.best_ms:>10.4f}{cell}"
                     f"  {chosen}")
    lines.append("")
    for source in dict.fromkeys(r.source for r in rows):
        mine = [r for r in rows if r.source == source]
        shares = [s for r in mine if (s := r.share_of_best) is not None]
        summary = (f"mean share of the best {statistics.fmean(shares):.3f}, worst {min(shares):.3f}"
                   if shares else "none could be scored")
        lines.append(f"from the {source}: {len(shares)} of {len(mine)} held-out shapes scored; {summary}; "
                     f"{len(mine) - len(shares)} not scored (the runs never measured the predicted configuration "
                     f"on that shape, or no configuration was valid there)")
    lines += ["", "share = the held-out shape's best recorded time / the predicted configuration's recorded time "
                  "(1.000: the prediction is the shape's own best); time/best is its inverse; rank = where the "
                  "predicted configuration stands among those recorded on the held-out shape (1: its best)"]
    return "\n".join(lines)
