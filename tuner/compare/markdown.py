"""A comparison with Kernel Tuner's strategies as Markdown tables: the summary (our default against Kernel Tuner's
best on each space) and one table per space with every strategy."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from tuner import atomic_file
from tuner.compare import kernel_tuner_peer as kt
from tuner.compare.comparison import CaseResult, Scored

SUMMARY_FILE = "summary.md"


def _name(space: str) -> str:
    return space.replace("_", " ")


def _mean(scored: Scored, i: int, best: float) -> str:
    text = f"{scored.fractions.mean[i]:.3f}"
    return f"**{text}**" if scored.fractions.mean[i] >= best - 1e-12 else text


def _p(value: float, best: float) -> str:
    if not math.isfinite(value):
        return "—"
    return f"**{value:.3f}**" if value >= best - 1e-12 else f"{value:.3f}"


def _cut(scored: Scored) -> str:
    if not scored.cut_runs:
        return ""
    reasons = ", ".join(f"{count} {reason}" for reason, count in sorted(scored.cut_runs.items()))
    return f"{sum(scored.cut_runs.values())} of {scored.made_runs} ({reasons})"


def summary_table(results: list[CaseResult], ours: str) -> str:
    """Per space where Kernel Tuner's strategies ran: ``ours`` and Kernel Tuner's best strategy at each budget and
    by P (picked in hindsight, per column), with its name; the better of the two in bold."""
    peers = [r for r in results if ours in r.scored and any(n.startswith(kt.PREFIX) for n in r.scored)]
    if not peers:
        return ""
    budgets = peers[0].scored[ours].budgets
    header = ["space", *(f"{label} @{b}" for b in budgets for label in (f"`{ours}`", "Kernel Tuner's best")),
              f"`{ours}` P", "Kernel Tuner's best P"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for result in peers:
        mine = result.scored[ours]
        theirs = {name.removeprefix(kt.PREFIX): s for name, s in result.scored.items() if name.startswith(kt.PREFIX)}
        cells = []
        for i in range(len(budgets)):
            name, best = max(((n, s.fractions.mean[i]) for n, s in theirs.items()), key=lambda item: item[1])
            top = max(best, mine.fractions.mean[i])
            cells += [_bold(f"{mine.fractions.mean[i]:.3f}", mine.fractions.mean[i] >= top - 1e-12),
                      _bold(f"{best:.3f}", best >= top - 1e-12) + f" (`{name}`)"]
        p_name, p_best = max(((n, s.p) for n, s in theirs.items() if math.isfinite(s.p)),
                             key=lambda item: item[1], default=("—", math.nan))
        top_p = max((v for v in (mine.p, p_best) if math.isfinite(v)), default=math.nan)
        cells += [_p(mine.p, top_p), _p(p_best, top_p) + (f" (`{p_name}`)" if math.isfinite(p_best) else "")]
        lines.append("| " + " | ".join([_name(result.case.label), *cells]) + " |")
    return "\n".join(lines)


def _bold(text: str, bold: bool) -> str:
    return f"**{text}**" if bold else text


def space_table(result: CaseResult) -> str:
    """Every strategy on one space: the fraction of the optimum after each budget (mean ± standard deviation), P
    and the runs cut short; ours first, then Kernel Tuner's by their mean at the largest budget; the best of each
    column in bold."""
    scored = result.scored
    budgets = next(iter(scored.values())).budgets
    ours = [n for n in scored if not n.startswith(kt.PREFIX)]
    theirs = sorted((n for n in scored if n.startswith(kt.PREFIX)), key=lambda n: -scored[n].fractions.mean[-1])
    best = [max(s.fractions.mean[i] for s in scored.values()) for i in range(len(budgets))]
    best_p = max((s.p for s in scored.values() if math.isfinite(s.p)), default=math.nan)
    header = ["strategy", "runs", *(f"@{b}" for b in budgets), "P", "runs cut"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name in ours + theirs:
        s = scored[name]
        cells = [f"{_mean(s, i, best[i])} ± {s.fractions.std[i]:.3f}" for i in range(len(budgets))]
        lines.append("| " + " | ".join([f"`{name}`", str(s.runs), *cells, _p(s.p, best_p), _cut(s)]) + " |")
    return f"#### {_name(result.case.label)} ({result.case.space.device or 'device not recorded'})\n\n" + "\n".join(
        lines)


def preamble(settings: dict[str, Any], ours: str) -> str:
    """What the tables are: the runs, the budgets' convention, the scores and how Kernel Tuner's runs are bounded."""
    peer_runs = settings.get("peer_repeats") or settings["repeats"]
    version = settings.get("kernel_tuner", "")
    return (f"Our default strategy `{ours}` against Kernel Tuner {version}'s strategies in its simulation mode "
            f"on the same recordings, convention (a) (a space marked (b): convention (b), where a draw that fails "
            f"counts as an evaluation): the fraction of the optimum after b "
            f"evaluations (optimum time / best time found), mean over {settings['repeats']} runs of ours and "
            f"{peer_runs} runs of each of Kernel Tuner's (each budget run apart: its strategies are told their "
            f"budget), and the methodology score P from {settings['score_repeats']} further runs of each, as the "
            f"package autotuning_methodology computes it. Kernel Tuner's best is picked per column, in hindsight. "
            f"A run ends after {kt.STALL_PROPOSALS:,} proposals in a row that evaluate nothing new (already "
            f"evaluated configurations; the same bound for ours and for Kernel Tuner's) or, for Kernel Tuner's, "
            f"after {kt.WALL_CAP_S:.0f} s of real time; 'runs cut' counts them (a run cut by the first bound had "
            f"evaluated nothing new for its last {kt.STALL_PROPOSALS:,} proposals)." + _left_out(settings))


def _left_out(settings: dict[str, Any]) -> str:
    left = settings.get("kernel_tuner_left_out") or {}
    return (" Left out of Kernel Tuner's strategies: " + "; ".join(f"`{name}` ({why})" for name, why in left.items())
            + ".") if left else ""


def write_summary(results: list[CaseResult], ours: str, out: Path, settings: dict[str, Any]) -> Path | None:
    """``summary.md``: what the tables are, the summary table and every space's table; None where Kernel Tuner's
    strategies did not run."""
    summary = summary_table(results, ours)
    if not summary:
        return None
    spaces = [space_table(r) for r in results if any(n.startswith(kt.PREFIX) for n in r.scored)]
    path = out / SUMMARY_FILE
    atomic_file.write_text(path, "\n\n".join([preamble(settings, ours), summary, *spaces]) + "\n")
    return path
