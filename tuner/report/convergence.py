"""Convergence: the best GFLOP/s found so far against trial number and against time (wall time, or a replay's
recorded device time: :mod:`tuner.report.search_time`), per study, one line per strategy (a study continued
with another strategy gets a line for each)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import Formatter, MaxNLocator

from tuner.report.formatting import number, performance_unit
from tuner.report.run_folder import Run
from tuner.report.search_time import RECORDED_LABEL, TIME_COLUMN, with_search_time

BASELINE_SCALE = 2.0
"""A cuBLAS line more than this many times the best trial is named in the corner instead of squashing the curves."""
TRIAL_LABEL = "trial number (the strategy's evaluations in the study, in order)"
STRATEGY_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#17becf")


def best_so_far(rows: pd.DataFrame, by: str = "trial") -> pd.DataFrame:
    """One strategy's evaluations in a study, ordered by ``by`` (``trial``, or a time such as ``wall_offset_s``:
    trials asked ahead finish out of trial order), with ``evaluation`` (1 for its first) and ``best`` (the best ok
    GFLOP/s up to each one; NaN before the first success)."""
    rows = rows.sort_values([by, "trial" if by != "trial" else "wall_offset_s"]).copy()
    rows["evaluation"] = range(1, len(rows) + 1)
    rows["best"] = rows["performance"].where(rows["status"] == "ok").cummax().ffill()
    return rows


class TickLabels(Formatter):
    """Labels with thousands separators and as few decimals as tell the drawn ticks apart (2.5 as 2.5, not 2)."""

    ticks: tuple[float, ...] = ()

    def set_locs(self, locs: Sequence[float]) -> None:
        self.ticks = tuple(float(t) for t in locs)

    def __call__(self, x: float, pos: int | None = None) -> str:
        ticks = self.ticks or (x,)
        decimals = next((d for d in range(7) if all(abs(round(t, d) - t) <= 1e-9 * max(1.0, abs(t)) for t in ticks)),
                        6)
        return f"{x:,.{decimals}f}"


def _draw_panel(ax_trial: Axes, ax_wall: Axes, rows: pd.DataFrame, colors: dict[str, str],
                baseline: float | None, library: str) -> None:
    lines = [(str(study), str(strategy), r)
             for (study, strategy), r in rows.groupby(["study", "strategy"], dropna=False, sort=True)]
    several_studies = len({study for study, _, _ in lines}) > 1
    for study, strategy, line_rows in lines:
        label = f"{strategy} ({study})" if several_studies else strategy
        if line_rows["replayed"].all() and not rows["replayed"].all():
            label += " (replayed)"
        for ax, x, by in ((ax_trial, "evaluation", "trial"), (ax_wall, TIME_COLUMN, TIME_COLUMN)):
            progress = best_so_far(line_rows, by)
            ok = progress[progress["status"] == "ok"]
            if progress[x].notna().any():
                ax.step(progress[x], progress["best"], where="post", color=colors[strategy], linewidth=2,
                        label=label, gid="best-so-far")
                ax.scatter(ok[x], ok["performance"], s=10, color=colors[strategy], alpha=0.3, linewidths=0,
                           gid="trials")
    top = float(rows.loc[rows["status"] == "ok", "performance"].max()) if (rows["status"] == "ok").any() else 0.0
    for ax in (ax_trial, ax_wall):
        if baseline is not None and baseline <= BASELINE_SCALE * max(top, 1e-9):
            ax.axhline(baseline, color="#444444", linestyle="--", linewidth=1.2,
                       label=f"{library} {number(baseline)}", gid="baseline")
            top = max(top, baseline)
        elif baseline is not None:
            ax.text(0.99, 0.98, f"{library} {number(baseline)} GFLOP/s (above this scale)", transform=ax.transAxes,
                    ha="right", va="top", fontsize=8, color="#444444", gid="baseline")
        ax.set_ylim(0, top * 1.15 if top > 0 else 1)
        ax.yaxis.set_major_formatter(TickLabels())
        ax.grid(True, alpha=0.3)
    ax_trial.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax_trial.legend(fontsize=8, loc="lower right")


def convergence_figure(run: Run) -> Figure:
    """One row of two panels (by trial, by time) per dtype and problem; one line per study and strategy."""
    searched = run.kernels[run.kernels["trial"].notna() & (run.kernels["trial"] >= 0)]
    searched = searched.assign(study=searched["study"].fillna("?").astype(str),
                               strategy=searched["strategy"].fillna("?").astype(str))
    searched, time_label = with_search_time(searched, run.metadata.get("runs") or [])
    slices = [(d, p) for d, p in run.slices() if ((searched["dtype"] == d) & (searched["problem"] == p)).any()]
    fig = Figure(figsize=(11, 1.2 + 3.1 * max(1, len(slices))), layout="constrained")
    if not slices:
        ax = fig.subplots()
        ax.set_axis_off()
        ax.text(0.5, 0.5, "no searched trials in this run", ha="center", va="center", fontsize=12)
        return fig
    axes = fig.subplots(len(slices), 2, squeeze=False)
    strategies = sorted(searched["strategy"].unique())
    colors = {s: STRATEGY_COLORS[i % len(STRATEGY_COLORS)] for i, s in enumerate(strategies)}
    by_slice = dict(iter(searched.groupby(["dtype", "problem"], sort=False)))
    baselines = dict(iter(run.baselines.groupby(["dtype", "problem"], sort=False)))
    for (dtype, problem), (ax_trial, ax_wall) in zip(slices, axes, strict=True):
        base = baselines.get((dtype, problem))
        _draw_panel(ax_trial, ax_wall, by_slice[(dtype, problem)], colors,
                    float(base["gflops"].max()) if base is not None else None, run.library)
        ax_trial.set_title(f"{problem}, {dtype}: best so far by trial", fontsize=10)
        ax_wall.set_title(f"{problem}, {dtype}: best so far by "
                          f"{'recorded device time' if time_label == RECORDED_LABEL else 'wall time'}", fontsize=10)
        ax_trial.set_ylabel(f"best {performance_unit(by_slice[(dtype, problem)], dtype)}")
    # Every row's axes mean the same: their names once, under the last row (each text costs drawing time).
    axes[-1][0].set_xlabel(TRIAL_LABEL)
    axes[-1][1].set_xlabel(time_label)
    fig.suptitle(f"Convergence of the search: {run.experiment_name}", fontsize=12)
    return fig
