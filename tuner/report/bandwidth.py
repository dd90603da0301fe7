"""The bandwidth roofline of kernels that only move data (a transpose, say): they do no arithmetic, so their
intensity is 0 FLOP/B and the log-log roofline has no place for them.

Each analytical class (tuner.report.groups: for the transpose, the naive and the tiled variant) is one column of
points: the effective bandwidth every successful evaluation reached (the compulsory bytes, each input read once and
each output written once, over the median time). The ceilings are the device's copy bandwidth, measured and
theoretical, and each machine model's bandwidth. A class whose traffic model moves more than the compulsory bytes
(the naive transpose writes a 32-byte sector for each element) can reach only that share of a ceiling: its bound
is the ceiling × compulsory bytes / modelled bytes, drawn as a short line over its column.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from tuner.report.formatting import number
from tuner.report.groups import group_colors, sorted_groups
from tuner.report.run_folder import Draw, Run

CEILING_STYLES: dict[str, dict[str, Any]] = {"measured": {"color": "#1a1a1a", "linestyle": "-"},
                                             "theoretical": {"color": "#8a8a8a", "linestyle": "--"}}
MODEL_COLOR = "#d62728"


def moves_data_only(rows: pd.DataFrame) -> bool:
    """Whether every one of these rows is of a kernel without arithmetic."""
    flops = pd.to_numeric(rows.get("flops", pd.Series(dtype=float)), errors="coerce")
    return len(rows) > 0 and bool((flops.fillna(0) == 0).all())


def bandwidth_slices(run: Run) -> list[tuple[str, str]]:
    """The (dtype, problem) slices whose kernels only move data."""
    kernels = run.kernels
    return [(d, p) for d, p in run.slices() if moves_data_only(kernels[(kernels["dtype"] == d) &
                                                                       (kernels["problem"] == p)])]


def bandwidth_figure(run: Run, dtype: str, problem: str) -> Figure:
    kernels = run.kernels[(run.kernels["dtype"] == dtype) & (run.kernels["problem"] == problem)]
    ok = run.ok[(run.ok["dtype"] == dtype) & (run.ok["problem"] == problem)]
    ok = ok[ok["effective_bandwidth_gbs"].notna()]
    groups = sorted_groups(kernels["group"].dropna())
    colors = group_colors(groups)
    fig = Figure(figsize=(10, 6.5), layout="constrained")
    ax = fig.subplots()
    ceilings = [c for c in run.device_ceilings(dtype, kernels) if c.bandwidth_gbs is not None]
    device = run.device_name(kernels)
    for ceiling in ceilings:
        bandwidth = float(ceiling.bandwidth_gbs or 0)
        ax.axhline(bandwidth, linewidth=1.8, label=f"{device}, {ceiling.kind}: {number(bandwidth)} GB/s",
                   gid=f"ceiling-{ceiling.kind}", **CEILING_STYLES[ceiling.kind])
    for model in run.machine_models:
        ax.axhline(model.bandwidth_gbs, color=MODEL_COLOR, linestyle="-.", linewidth=1.4,
                   label=f"{model.name} model: {number(model.bandwidth_gbs)} GB/s", gid=f"model-{model.name}")
    measured = next((c.bandwidth_gbs for c in ceilings if c.kind == "measured"), None)
    rng = np.random.default_rng(0)
    for x, group in enumerate(groups):
        points = ok[ok["group"] == group]
        if points.empty:
            continue
        jitter = x + rng.uniform(-0.18, 0.18, len(points))
        ax.scatter(jitter, points["effective_bandwidth_gbs"], s=28, color=colors[group], alpha=0.75,
                   edgecolors="white", linewidths=0.4, label=group.label, gid="evaluations")
        best = points.loc[points["effective_bandwidth_gbs"].idxmax()]
        ax.scatter([x], [best["effective_bandwidth_gbs"]], s=190, facecolors="none", edgecolors="black",
                   linewidths=1.6, gid="best")
        ax.annotate(f"{number(best['effective_bandwidth_gbs'])} GB/s", (x, best["effective_bandwidth_gbs"]),
                    xytext=(14, 0), textcoords="offset points", va="center", fontsize=8.5)
        share = (points["effective_bandwidth_gbs"] / points["bandwidth_gbs"]).median()
        if measured is not None and np.isfinite(share) and share < 0.999:
            ax.plot([x - 0.32, x + 0.32], [measured * share] * 2, color=colors[group], linewidth=2.5,
                    gid="class-bound", label=f"{group.label}: bound, {share:.0%} of the measured copy bandwidth")
    if ok.empty:
        ax.text(0.5, 0.5, "no successful evaluation", transform=ax.transAxes, ha="center", fontsize=12,
                color="#aa0000")
    ax.set_xticks(range(len(groups)), [g.label for g in groups], rotation=15, ha="right", fontsize=9)
    ax.set_xlim(-0.6, max(len(groups), 1) - 0.4)
    ax.set_ylim(0, None)
    ax.set_ylabel("effective bandwidth (GB/s)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8.5, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncols=2, frameon=False)
    ax.set_title(f"Bandwidth roofline of {run.experiment_name}: {dtype}, {problem}", fontsize=12)
    return fig


def bandwidth_plan(run: Run) -> dict[str, Draw]:
    """File name -> how to draw it: one per dtype and problem whose kernels only move data."""
    return {f"bandwidth_{dtype}_{problem}.png": functools.partial(bandwidth_figure, dtype=dtype, problem=problem)
            for dtype, problem in bandwidth_slices(run)}
