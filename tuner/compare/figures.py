"""The comparison's performance curves: per case, the fraction of the optimum against evaluations and against
recorded time, median and inter-quartile band per strategy, uniform random search drawn as the baseline."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from tuner.compare.comparison import BASELINE, CaseResult, Scored
from tuner.compare.table import CONVENTION_LABEL
from tuner.report.literal_text import as_written

COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
          "#7f7f7f", "#aec7e8", "#ffbb78")


def figure_name(result: CaseResult) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", result.case.name).strip("_")
    return f"curves_{slug}_{result.case.convention.value}.png"


def write_figure(result: CaseResult, out: Path) -> Path:
    """The two panels of one case, as a PNG in ``out``."""
    figure = Figure(figsize=(13, 5), layout="constrained")
    by_evaluation, by_time = figure.subplots(1, 2, sharey=True)
    colors = dict(zip((s for s in result.scored if s != BASELINE), COLORS, strict=False))
    for strategy, scored in result.scored.items():
        color, style = (colors[strategy], "-") if strategy != BASELINE else ("black", "--")
        _band(by_evaluation, np.arange(1, len(scored.curve.median) + 1), scored, strategy, color, style, time=False)
        _band(by_time, scored.times_s, scored, strategy, color, style, time=True)
    for budget in next(iter(result.scored.values())).budgets:
        by_evaluation.axvline(budget, color="0.6", linewidth=0.8, linestyle=":")
    case = result.case
    by_evaluation.set(xscale="log", xlabel="evaluations", ylabel="fraction of the optimum (optimum / best found)",
                      title="against evaluations (dotted: the budgets)")
    by_time.set(xscale="log", xlabel="recorded compile + benchmark time (s)",
                title="against the time the recording spent")
    lowest = min(float(s.curve.q25[min(9, len(s.curve.q25) - 1)]) for s in result.scored.values())
    by_evaluation.set_ylim(max(0.0, min(lowest, 0.9) - 0.05), 1.005)
    for ax in (by_evaluation, by_time):
        ax.grid(True, which="both", alpha=0.3)
    by_evaluation.legend(loc="lower right", fontsize="small")
    figure.suptitle(f"{case.name} on {case.space.device or 'an unrecorded device'}, convention "
                    f"{CONVENTION_LABEL[case.convention.value]}: median and inter-quartile range of "
                    f"{next(iter(result.scored.values())).runs} runs (dashed: uniform random search)")
    path = out / figure_name(result)
    as_written(figure).savefig(path, dpi=110)
    return path


def _band(ax: Axes, x: np.ndarray, scored: Scored, label: str, color: str, style: str, time: bool) -> None:
    curve = scored.time_curve if time else scored.curve
    ax.plot(x, curve.median, style, color=color, linewidth=1.6 if style == "-" else 1.3, label=label)
    ax.fill_between(x, curve.q25, curve.q75, color=color, alpha=0.12 if style == "-" else 0.08, linewidth=0)
