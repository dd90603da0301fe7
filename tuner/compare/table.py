"""A comparison's numbers as rows, and as the text table, JSON and CSV written beside the figures."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

from tuner import atomic_file
from tuner.compare import kernel_tuner_peer as kt
from tuner.compare.comparison import CaseResult
from tuner.strategies.catalog import DEFAULT
from tuner.text_table import stacked_table, wrapped

TEXT_WIDTH = 80
"""The columns comparison.txt (and what compare prints) fits its text to."""
CONVENTION_LABEL = {"valid": "(a) valid", "product": "(b) product"}


def rows(results: list[CaseResult]) -> list[dict[str, Any]]:
    """One row per case, strategy and budget."""
    found = []
    for result in results:
        case = result.case
        for strategy, scored in result.scored.items():
            for i, budget in enumerate(scored.budgets):
                found.append({
                    "space": case.name, "device": case.space.device, "convention": case.convention.value,
                    "strategy": strategy, "budget": budget, "runs": scored.runs,
                    "mean": _number(scored.fractions.mean[i]), "std": _number(scored.fractions.std[i]),
                    "q25": _number(scored.fractions.q25[i]), "median": _number(scored.fractions.median[i]),
                    "q75": _number(scored.fractions.q75[i]),
                    "p": _number(scored.p), "mean_evaluations": round(scored.evaluations, 2),
                    "near_optimum_cost": _number(scored.near_optimum_cost), "think_ms": _number(scored.think_ms),
                    "runs_made": scored.made_runs, "runs_cut": sum(scored.cut_runs.values()),
                    "cut_reasons": ";".join(f"{r}:{n}" for r, n in sorted(scored.cut_runs.items())),
                })
    return found


def _number(value: float) -> float | None:
    return None if not math.isfinite(float(value)) else round(float(value), 6)


def text_table(results: list[CaseResult]) -> str:
    """Per case, each strategy's mean ± standard deviation of the fraction of the optimum after each budget and its
    methodology scores, the best mean of each budget marked with *."""
    blocks = []
    for result in results:
        case = result.case
        first = next(iter(result.scored.values()))
        budgets = first.budgets
        header = (f"{case.name} ({case.space.device or 'device not recorded'}), convention "
                  f"{CONVENTION_LABEL[case.convention.value]}, {first.runs} runs, optimum {result.optimum_ms:.4g} ms")
        best = [max(s.fractions.mean[i] for s in result.scored.values()) for i in range(len(budgets))]
        best_p = max((s.p for s in result.scored.values() if math.isfinite(s.p)), default=math.nan)
        header_row = ["strategy", *(f"@{b}" for b in budgets), "P", "3% cost", "ms/eval"]
        table = [[strategy, *(_cell(scored.fractions.mean[i], scored.fractions.std[i], best[i])
                              for i in range(len(budgets))),
                  _p(scored.p, best_p), _share(scored.near_optimum_cost), f"{scored.think_ms:.2f}"]
                 for strategy, scored in result.scored.items()]
        lines = [wrapped(header, TEXT_WIDTH, hanging="  "), stacked_table(header_row, table, TEXT_WIDTH)]
        notes = [f"{strategy}: P not scored ({scored.score_note})" for strategy, scored in result.scored.items()
                 if scored.score is None]
        notes += [f"{strategy}: {sum(scored.cut_runs.values())} of {scored.made_runs} runs cut ("
                  + ", ".join(f"{n} {CUT_LABEL.get(r, r)}" for r, n in sorted(scored.cut_runs.items())) + ")"
                  for strategy, scored in result.scored.items() if scored.cut_runs]
        blocks.append("\n".join(lines + [wrapped(note, TEXT_WIDTH, hanging="  ") for note in notes]))
    return "\n\n".join(blocks) + "\n\n" + wrapped(LEGEND, TEXT_WIDTH, hanging="")


LEGEND = ("@b: fraction of the optimum after b evaluations (optimum time / best time found), mean ± standard "
          "deviation over the runs; * the best mean. P: the methodology score (Willemsen et al. 2024) as the package "
          "autotuning_methodology computes it, the mean over its time axis of (strategy − random) / (optimum − "
          "random), time counting each evaluation's recorded compile + verification + framework + benchmark time "
          "and the strategy's own; * the best. (a): the budget counts configurations that pass the space's "
          "restrictions; (b): a draw from all combinations that fails counts as an evaluation. 3% cost: the median "
          "run's recorded time until its best is within 3% of the optimum, as a share of what measuring every "
          "configuration costs (— where the median run does not get there within the largest budget). ms/eval: the "
          "strategy's own time per evaluation. optuna:NAME: Optuna's sampler NAME; kt:NAME: Kernel Tuner's strategy "
          "NAME in its simulation mode, which is told its budget, so that each budget is run apart (under each "
          "convention, as ours). Runs cut: runs ended short of their budget, " + ", or ".join(
              f"{label} ({reason})" for reason, label in kt.CUT_REASONS.items()) + "; the first bound holds for "
          "ours and Kernel Tuner's alike.")
CUT_LABEL = {reason: reason.replace("_", " ") for reason in kt.CUT_REASONS}


def _p(value: float, best: float) -> str:
    if not math.isfinite(value):
        return "—"
    return f"{value:.3f}" + ("*" if value >= best - 1e-12 else " ")


def _share(value: float) -> str:
    return f"{value:.1%}" if math.isfinite(value) else "—"


def _cell(mean: float, std: float, best: float) -> str:
    mark = "*" if mean >= best - 1e-12 else " "
    return f"{mean:.3f} ± {std:.3f}{mark}"


def write_tables(results: list[CaseResult], out: Path, settings: dict[str, Any]) -> list[Path]:
    """``comparison.txt``, ``comparison.json`` (settings, rows, and each case's curves) and ``comparison.csv``."""
    found = rows(results)
    text, data, table = out / "comparison.txt", out / "comparison.json", out / "comparison.csv"
    summary = side_by_side(results, DEFAULT)
    atomic_file.write_text(text, text_table(results) + ("\n\n" + wrapped(SIDE_BY_SIDE_TITLE, TEXT_WIDTH, hanging="")
                                                        + "\n" + summary if summary else "") + "\n")
    atomic_file.write_text(data, json.dumps({"settings": settings, "rows": found, "curves": _curves(results)},
                                            indent=1) + "\n")
    atomic_file.replace_with(table, lambda partial: _write_csv(partial, found))
    return [text, data, table]


def _write_csv(path: Path, found: list[dict[str, Any]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.DictWriter(stream, fieldnames=list(found[0]))
        writer.writeheader()
        writer.writerows(found)


def _curves(results: list[CaseResult]) -> list[dict[str, Any]]:
    return [{
        "space": r.case.name, "convention": r.case.convention.value, "strategy": strategy,
        "median": [_number(v) for v in s.curve.median], "q25": [_number(v) for v in s.curve.q25],
        "q75": [_number(v) for v in s.curve.q75], "times_s": [_number(v) for v in s.times_s],
        "time_median": [_number(v) for v in s.time_curve.median],
    } for r in results for strategy, s in r.scored.items()]


def side_by_side(results: list[CaseResult], ours: str) -> str:
    """Per case where Kernel Tuner's strategies ran: ``ours`` against the best of them at each budget (picked
    per budget, in hindsight) and against the best P of theirs; '' where none ran."""
    header: list[str] = []
    lines: list[list[str]] = []
    for result in results:
        theirs = {name: s for name, s in result.scored.items() if name.startswith(PEER_PREFIX)}
        if not theirs or ours not in result.scored:
            continue
        mine = result.scored[ours]
        if not header:
            header = ["space", *(f"{label} @{b}" for b in mine.budgets for label in (ours, "best kt")),
                      f"{ours} P", "best kt P"]
        cells = []
        for i in range(len(mine.budgets)):
            name, best = max(((n, s.fractions.mean[i]) for n, s in theirs.items()), key=lambda item: item[1])
            cells += [f"{mine.fractions.mean[i]:.3f}", f"{best:.3f} ({name})"]
        p_name, p_best = max(((n, s.p) for n, s in theirs.items() if math.isfinite(s.p)),
                             key=lambda item: item[1], default=("—", math.nan))
        lines.append([result.case.label, *cells, f"{mine.p:.3f}", f"{p_best:.3f} ({p_name})"])
    return stacked_table(header, lines, TEXT_WIDTH) if lines else ""


PEER_PREFIX = "kt:"
SIDE_BY_SIDE_TITLE = ("The default strategy against the best of Kernel Tuner's strategies on each space (convention "
                      "(a), or (b) where marked; the best picked per budget, in hindsight):")
