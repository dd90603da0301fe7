"""The comparison's performance curves: per case, the fraction of the optimum against evaluations and against
recorded time, median and inter-quartile band per strategy, uniform random search drawn as the baseline.

Our strategies are drawn solid, Optuna's dash-dotted, and of Kernel Tuner's the :data:`PEERS_DRAWN` with the best
mean at the largest budget, dotted (every one is in the tables)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from tuner import atomic_file
from tuner.compare.comparison import BASELINE, OPTUNA_PREFIX, CaseResult, Scored
from tuner.compare.table import CONVENTION_LABEL, PEER_PREFIX
from tuner.names.file_names import fitting_name
from tuner.report.literal_text import as_written

COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
          "#7f7f7f", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94")
PEERS_DRAWN = 3


def figure_name(result: CaseResult) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", result.case.name).strip("_")
    return fitting_name(f"curves_{slug}_{result.case.convention.value}", ".png")


def write_figure(result: CaseResult, out: Path) -> Path:
    """The two panels of one case, as a PNG in ``out``."""
    figure = Figure(figsize=(13, 5), layout="constrained")
    by_evaluation, by_time = figure.subplots(1, 2, sharey=True)
    drawn = drawn_strategies(result)
    colors = dict(zip((s for s in drawn if s != BASELINE), COLORS, strict=False))
    for strategy in drawn:
        scored = result.scored[strategy]
        color, style = (colors.get(strategy, "0.5"), _style(strategy)) if strategy != BASELINE else ("black", "--")
        _band(by_evaluation, np.arange(1, len(scored.curve.median) + 1), scored, strategy, color, style, time=False)
        _band(by_time, scored.times_s, scored, strategy, color, style, time=True)
    for budget in next(iter(result.scored.values())).budgets:
        by_evaluation.axvline(budget, color="0.6", linewidth=0.8, linestyle=":")
    case = result.case
    by_evaluation.set(xscale="log", xlabel="evaluations", ylabel="fraction of the optimum (optimum / best found)",
                      title="against evaluations (dotted: the budgets)")
    by_time.set(xscale="log", xlabel="recorded compile + benchmark time (s)",
                title="against the time the recording spent")
    lowest = min(float(result.scored[s].curve.q25[min(9, len(result.scored[s].curve.q25) - 1)]) for s in drawn)
    by_evaluation.set_ylim(max(0.0, min(lowest, 0.9) - 0.05), 1.005)
    for ax in (by_evaluation, by_time):
        ax.grid(True, which="both", alpha=0.3)
    by_evaluation.legend(loc="lower right", fontsize="small")
    figure.suptitle(f"{case.name} on {case.space.device or 'an unrecorded device'}, convention "
                    f"{CONVENTION_LABEL[case.convention.value]}: median and inter-quartile range of "
                    f"{next(iter(result.scored.values())).runs} runs (dashed: uniform random search)")
    path = out / figure_name(result)
    written = as_written(figure)
    atomic_file.replace_with(path, lambda partial: written.savefig(partial, dpi=110, format="png"))
    return path


def drawn_strategies(result: CaseResult) -> list[str]:
    """Ours and Optuna's, and Kernel Tuner's best few at the largest budget."""
    peers = [name for name in result.scored if name.startswith(PEER_PREFIX)]
    best = sorted(peers, key=lambda name: -float(result.scored[name].fractions.mean[-1]))[:PEERS_DRAWN]
    return [name for name in result.scored if not name.startswith(PEER_PREFIX) or name in best]


def _style(strategy: str) -> str:
    return ":" if strategy.startswith(PEER_PREFIX) else "-." if strategy.startswith(OPTUNA_PREFIX) else "-"


def _band(ax: Axes, x: np.ndarray, scored: Scored, label: str, color: str, style: str, time: bool) -> None:
    curve = scored.time_curve if time else scored.curve
    ax.plot(x, curve.median, style, color=color, linewidth=1.6 if style != "--" else 1.3, label=label)
    ax.fill_between(x, curve.q25, curve.q75, color=color, alpha=0.12 if style == "-" else 0.06, linewidth=0)
