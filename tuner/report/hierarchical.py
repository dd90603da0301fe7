"""The hierarchical roofline: each counted kernel at the intensities measured at DRAM, the L2 and the L1.

A kernel's counted operations over the bytes each level moved for it (tuner.counters) give three intensities; the
kernel is one point at each, at the same performance (the counted operations at the tuner's median time), joined by
a line: the gap between the points is what each cache saved. Each level's measured bandwidth is drawn as its roof
(DRAM's streaming copy, the L2's, the L1's and shared memory's ceiling kernels,
tuner.backends.pycuda.memory_ceilings) under the device's compute peak. The family's analytical point (its no-cache
model's intensity, what the plain roofline shows) is kept as a hollow diamond. A kernel is bounded by the lowest of
its levels' roofs.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from tuner.peaks import UNITS, unit_peaks
from tuner.report.axes import log_log
from tuner.report.formatting import number, rate_unit
from tuner.report.groups import group_colors, sorted_groups
from tuner.report.run_folder import Draw, Run

LEVELS = ("dram", "l2", "l1")
LEVEL_NAMES = {"dram": "DRAM", "l2": "L2", "l1": "L1", "shared": "shared memory"}
LEVEL_MARKERS = {"dram": "o", "l2": "s", "l1": "^"}
LEVEL_BANDWIDTHS = {"dram": "bandwidth_gbs", "l2": "l2_bandwidth_gbs", "l1": "l1_bandwidth_gbs",
                    "shared": "shared_bandwidth_gbs"}
ROOF_STYLES: dict[str, dict[str, Any]] = {
    "dram": {"color": "#1a1a1a", "linestyle": "-", "linewidth": 2.0},
    "l2": {"color": "#3b6ea5", "linestyle": "--", "linewidth": 1.8},
    "l1": {"color": "#2e8b57", "linestyle": "-.", "linewidth": 1.8},
    "shared": {"color": "#8a8a8a", "linestyle": ":", "linewidth": 1.6},
}
MODEL_MARKER = "D"
HIERARCHICAL_PNG = "roofline_hierarchical.png"


def counted(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows with counters enough to be placed: counted operations and bytes at every level."""
    needed = ["flops_counted", *(f"intensity_{level}" for level in LEVELS)]
    if rows.empty or any(c not in rows for c in needed):
        return rows.iloc[0:0]
    values = rows[needed].apply(pd.to_numeric, errors="coerce")
    return rows[np.isfinite(values).all(axis=1) & (values > 0).all(axis=1)]


def counted_performance(rows: pd.DataFrame) -> pd.Series:
    """Counted operations over the tuner's median time (GFLOP/s)."""
    seconds = pd.to_numeric(rows["time_median_ms"], errors="coerce") * 1e-3
    return pd.to_numeric(rows["flops_counted"], errors="coerce") / seconds / 1e9


def hierarchical_slices(run: Run) -> list[tuple[str, str]]:
    """The (dtype, problem) slices with at least one counted kernel, largest problem first."""
    rows = counted(run.ok)
    present = set(zip(rows["dtype"], rows["problem"], strict=True))
    return [s for s in run.slices() if s in present]


def level_roofs(run: Run, rows: pd.DataFrame) -> dict[str, float]:
    """The measured bandwidth (GB/s) of each level the device's environment knows."""
    measured = run.environment(rows).measured_peaks
    roofs = {}
    for level, key in LEVEL_BANDWIDTHS.items():
        try:
            value = float(measured[key])
        except (KeyError, TypeError, ValueError):
            continue
        if math.isfinite(value) and value > 0:
            roofs[level] = value
    return roofs


def compute_roofs(run: Run, rows: pd.DataFrame, dtype: str) -> dict[str, float]:
    """The measured compute peaks of the dtype by unit (CUDA cores, tensor cores), GFLOP/s."""
    return unit_peaks(run.environment(rows).measured_peaks, dtype)


def _limits(values: list[float], pad: float) -> tuple[float, float]:
    finite = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    return (min(finite) / pad, max(finite) * pad) if finite else (0.01, 100.0)


def draw_hierarchical(ax: Axes, run: Run, dtype: str, problem: str) -> None:
    """The counted kernels of one dtype and problem at their three measured intensities, under the levels' roofs."""
    rows = counted(run.ok[(run.ok["dtype"] == dtype) & (run.ok["problem"] == problem)])
    performance = counted_performance(rows)
    roofs, peaks = level_roofs(run, rows), compute_roofs(run, rows, dtype)
    peak = max(peaks.values()) if peaks else None
    intensities = [float(v) for level in LEVELS for v in rows[f"intensity_{level}"]]
    model = pd.to_numeric(rows["intensity"], errors="coerce")
    ridges = [peak / bw for bw in roofs.values()] if peak else []
    xlim = _limits([*intensities, *model.dropna(), *ridges], 4.0)
    ylim = _limits([*performance, *rows["gflops"], *(peaks.values()),
                    *(bw * xlim[0] for bw in roofs.values())], 3.0)
    xs = np.geomspace(*xlim, 300)
    unit = rate_unit(dtype)
    handles: list = []
    for level, bandwidth in roofs.items():
        ys = np.minimum(bandwidth * xs, peak) if peak else bandwidth * xs
        ridge = f", ridge {number(peak / bandwidth)} FLOP/B" if peak else ""
        (line,) = ax.plot(xs, ys, gid=f"roof-{level}", zorder=2,
                          label=f"{LEVEL_NAMES[level]} roof: {number(bandwidth)} GB/s measured{ridge}",
                          **ROOF_STYLES[level])
        handles.append(line)
    for unit_name, value in sorted(peaks.items(), key=lambda item: -item[1]):
        (line,) = ax.plot(xlim, [value, value], color="#555555", linewidth=1.0, linestyle=(0, (1, 2)),
                          gid=f"peak-{unit_name}", zorder=1,
                          label=f"{dtype} {UNITS[unit_name]} peak: {number(value)} {unit} measured")
        handles.append(line)
    groups = sorted_groups(rows["group"].dropna())
    colors = group_colors(run.kernels["group"].dropna())
    for _, row in rows.iterrows():
        color = colors.get(row["group"], "#444444")
        y = float(performance[row.name])
        xs_row = [float(row[f"intensity_{level}"]) for level in LEVELS]
        ax.plot(xs_row, [y] * len(xs_row), color=color, linewidth=1.2, alpha=0.8, zorder=3, gid="levels")
        for level, x in zip(LEVELS, xs_row, strict=True):
            ax.scatter([x], [y], marker=LEVEL_MARKERS[level], s=46, color=color, edgecolors="black",
                       linewidths=0.5, zorder=4, gid=f"point-{level}")
        if math.isfinite(model[row.name]) and model[row.name] > 0:
            ax.scatter([model[row.name]], [float(row["gflops"])], marker=MODEL_MARKER, s=150, facecolors="none",
                       edgecolors=[color], linewidths=1.6, zorder=5, gid="point-model")
    for level in LEVELS:
        handles.append(Line2D([], [], marker=LEVEL_MARKERS[level], linestyle="none", color="#bbbbbb",
                              markeredgecolor="black", markersize=8,
                              label=f"counted FLOPs / {LEVEL_NAMES[level]} bytes"))
    handles.append(Line2D([], [], marker=MODEL_MARKER, linestyle="none", markerfacecolor="white",
                          markeredgecolor="#444444", markeredgewidth=1.6, markersize=8,
                          label="analytical: the family's no-cache model"))
    for group in groups:
        handles.append(Line2D([], [], color=colors.get(group, "#444444"), marker="o", linewidth=1.2,
                              markersize=6, label=group.label))
    log_log(ax, xlim, ylim)
    ax.set_xlabel("arithmetic intensity at each level (FLOP per byte: counted FLOPs / bytes the level moved)")
    ax.set_ylabel(f"counted {unit} at the tuner's median time")
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.11), ncols=2, fontsize=8.5,
              frameon=False)


def hierarchical_figure(run: Run, dtype: str, problem: str) -> Figure:
    rows = counted(run.ok[(run.ok["dtype"] == dtype) & (run.ok["problem"] == problem)])
    fig = Figure(figsize=(10, 8.2), layout="constrained")
    ax = fig.subplots()
    draw_hierarchical(ax, run, dtype, problem)
    ax.set_title(f"Hierarchical roofline of {run.experiment_name}: {dtype}, {problem}, {run.device_name(rows)}\n"
                 f"{len(rows)} counted kernel{'s' if len(rows) != 1 else ''} (hardware counters); "
                 f"▲ L1, ■ L2, ● DRAM on one line per kernel, ◇ the analytical point", fontsize=11)
    return fig


def hierarchical_plan(run: Run) -> dict[str, Draw]:
    """roofline_hierarchical.png for a run of one problem and dtype, else one per dtype and problem with counted
    kernels (roofline_hierarchical_<dtype>_<problem>.png); none without counters."""
    slices = hierarchical_slices(run)
    if len(slices) == 1 and len(run.slices()) == 1:
        return {HIERARCHICAL_PNG: functools.partial(hierarchical_figure, dtype=slices[0][0], problem=slices[0][1])}
    return {f"roofline_hierarchical_{dtype}_{problem}.png": functools.partial(hierarchical_figure, dtype=dtype,
                                                                               problem=problem)
            for dtype, problem in slices}
