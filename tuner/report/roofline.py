"""Roofline figures: achieved GFLOP/s of every successful evaluation against its analytical intensity, under
the device's measured and theoretical ceilings and the experiment's machine models (e.g. Fermi-like)."""

from __future__ import annotations

import functools
import math
import textwrap
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from tuner.config import DTYPE_BYTES
from tuner.report.axes import log_log
from tuner.report.bandwidth import bandwidth_slices
from tuner.report.bounds import ClassBound, class_bounds
from tuner.report.formatting import number, rate_unit
from tuner.report.groups import Group, group_colors, sorted_groups
from tuner.report.run_folder import Ceiling, Draw, Run
from tuner.results.peak_source import unit_words

INTENSITY_LABEL = "arithmetic intensity (FLOP/byte of global memory, analytical no-cache model)"
DEVICE_STYLES: dict[str, dict[str, Any]] = {"measured": {"color": "#1a1a1a", "linestyle": "-", "linewidth": 2.0},
                 "theoretical": {"color": "#8a8a8a", "linestyle": "--", "linewidth": 1.6}}
MODEL_STYLES: tuple[dict[str, Any], ...] = (
    {"color": "#d62728", "linestyle": "-."}, {"color": "#17becf", "linestyle": ":"},
    {"color": "#bcbd22", "linestyle": (0, (6, 2, 1, 2, 1, 2))})
PROBLEM_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">")
"""The evaluations' markers, one per problem. Every other mark has a shape of its own: a ridge point is a vertical
bar on its roof, a class's bound on a model a horizontal bar, the best configuration a hexagon ring, the library a
star, and a class is a colour (a patch in the legend)."""
RIDGE_MARKER = "|"
BOUND_MARKER = "_"
BEST_MARKER = "H"
CUBLAS_COLOR = "#ffd700"
LABEL_SPACING = 2.0
"""Classes closer than this factor in intensity with the same bound share one written value."""
BEST_LABEL_WIDTH = 44


def compulsory_intensity(row: pd.Series) -> float:
    """FLOP per byte if A and B were read once and C written once: the least traffic any kernel needs."""
    size = DTYPE_BYTES.get(str(row["dtype"]), 4)
    M, N, K = float(row["M"]), float(row["N"]), float(row["K"])
    return 2 * M * N * K / (size * (M * K + K * N + M * N))


def _baseline_points(baselines: pd.DataFrame) -> tuple[list[float], list[float]]:
    """cuBLAS points at the compulsory-traffic intensity (recorded as its bytes_model, computed where absent)."""
    xs, ys = [], []
    for _, row in baselines.iterrows():
        intensity = row["intensity"]
        if not (isinstance(intensity, float) and math.isfinite(intensity) and intensity > 0):
            intensity = compulsory_intensity(row)
        xs.append(float(intensity))
        ys.append(float(row["gflops"]))
    return xs, ys


def _limits(values: list[float], low_pad: float, high_pad: float) -> tuple[float, float]:
    finite = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    if not finite:
        return (0.1, 10.0)
    return min(finite) / low_pad, max(finite) * high_pad


def _draw_ceiling(ax: Axes, xs: np.ndarray, ceiling: Ceiling, device: str, units: str, handles: list,
                  lower: bool = False) -> None:
    """One device roof; ``lower``: a second, lower compute roof of the same kind (the CUDA cores' under the tensor
    cores'), drawn lighter; ``units``: what its compute peak is the rate of, in words."""
    style = {**DEVICE_STYLES[ceiling.kind], **({"alpha": 0.55} if lower else {})}
    tensor = ceiling.unit == "tensor"
    ys = np.array([ceiling.bound_gflops(x) for x in xs], dtype=float)
    parts = []
    if ceiling.gflops is not None:
        parts.append(f"{number(ceiling.gflops)} GFLOP/s {units}")
    if ceiling.bandwidth_gbs is not None:
        parts.append(f"{number(ceiling.bandwidth_gbs)} GB/s")
    if ceiling.ridge_point is not None:
        parts.append(f"ridge {number(ceiling.ridge_point)} FLOP/B")
    label = f"{device}, {ceiling.kind}: {', '.join(parts)}"
    gid = f"ceiling-{ceiling.kind}" + ("-tensor" if tensor else "")
    (line,) = ax.plot(xs, ys, label=label, gid=gid, zorder=2, **style)
    handles.append(line)
    ridge = ceiling.ridge_point
    if ridge is not None and xs[0] < ridge < xs[-1]:
        suffix = "-tensor" if tensor else ""
        ax.plot([ridge], [float(ceiling.gflops or 0)], marker=RIDGE_MARKER, color=style["color"], markersize=12,
                markeredgewidth=2, zorder=3, gid=f"ridge-{ceiling.kind}{suffix}")
        above = ceiling.kind == "theoretical"
        ax.annotate(f"ridge {number(ridge)}", (ridge, ceiling.gflops), xytext=(5, 5 if above else -6),
                    textcoords="offset points", va="bottom" if above else "top", fontsize=8, color=style["color"],
                    gid=f"ridge-label-{ceiling.kind}{suffix}")


def _draw_models(ax: Axes, run: Run, dtype: str, xs: np.ndarray, ylim: tuple[float, float], handles: list) -> None:
    for model, style in zip(run.machine_models, MODEL_STYLES * len(run.machine_models), strict=False):
        peak = model.peak_gflops.get(dtype)
        ys = np.array([model.bound_gflops(dtype, x) for x in xs], dtype=float)
        compute = f"{number(peak)} GFLOP/s, " if peak is not None else ""
        ridge = model.ridge_point(dtype)
        at_ridge = f", ridge {number(ridge)} FLOP/B" if ridge is not None else ""
        label = f"{model.name} model: {compute}{number(model.bandwidth_gbs)} GB/s{at_ridge}"
        (line,) = ax.plot(xs, ys, label=label, linewidth=1.8, zorder=2, gid=f"model-{model.name}", **style)
        handles.append(line)
        if ridge is not None and xs[0] < ridge < xs[-1]:
            ax.plot([ridge], [float(peak or 0)], marker=RIDGE_MARKER, color=style["color"], markersize=12,
                    markeredgewidth=2, zorder=3, gid=f"ridge-{model.name}")
        _label_slope(ax, f"{model.name} model", model.bandwidth_gbs, xs, ylim, style["color"],
                     f"model-label-{model.name}")


def _label_slope(ax: Axes, text: str, bandwidth: float, xs: np.ndarray, ylim: tuple[float, float], color: str,
                 gid: str) -> None:
    """Name a roofline just under its bandwidth slope where it enters the plot (below it, nothing is drawn)."""
    x = max(xs[0], ylim[0] * 1.15 / bandwidth) * 1.25
    if x < xs[-1]:
        ax.annotate(text, (x, bandwidth * x), xytext=(6, -2), textcoords="offset points", ha="left", va="top",
                    fontsize=8.5, color=color, gid=gid)


def _draw_bounds(ax: Axes, bounds: list[ClassBound], colors: dict) -> None:
    """Each class's bound on each machine model, on that model's ceiling at the class's intensity, joined to
    the best it achieved by a dotted line; a value is written once where classes share it side by side."""
    labelled: dict[str, tuple[float, str]] = {}  # model -> (intensity, text) of the last label written
    for entry in sorted(bounds, key=lambda b: b.intensity):
        color = colors[entry.group]
        for (name, bound), style in zip(entry.model_bounds, MODEL_STYLES * len(entry.model_bounds), strict=False):
            ax.plot([entry.intensity], [bound], marker=BOUND_MARKER, markersize=14, markeredgecolor=color,
                    markeredgewidth=3, linestyle="none", zorder=5,
                    gid=f"bound-{name}-{entry.group.label}")
            if entry.best_gflops is not None:
                ax.plot([entry.intensity] * 2, [bound, entry.best_gflops], color=color, linestyle=":",
                        linewidth=1.2, zorder=1, gid="bound-gap")
            text = number(bound)
            last = labelled.get(name)
            if last is not None and last[1] == text and entry.intensity / last[0] < LABEL_SPACING:
                continue
            labelled[name] = (entry.intensity, text)
            ax.annotate(text, (entry.intensity, bound), xytext=(7, -3), textcoords="offset points",
                        fontsize=8.5, fontweight="bold", color=style["color"], zorder=6, va="top",
                        bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.8},
                        gid=f"bound-label-{name}-{entry.group.label}")


def _draw_evaluations(ax: Axes, ok: pd.DataFrame, groups: list[Group], colors: dict, problems: list[str],
                      handles: list) -> None:
    """One point per successful evaluation: colour by class, marker by problem."""
    markers = dict(zip(problems, PROBLEM_MARKERS * len(problems), strict=False))
    by_class = dict(iter(ok.groupby(["group", "problem"], sort=False)))
    for group in groups:
        for problem in problems:
            points = by_class.get((group, problem))
            if points is not None:
                ax.scatter(points["intensity"], points["gflops"], s=30, color=colors[group], marker=markers[problem],
                           edgecolors="white", linewidths=0.5, alpha=0.9, zorder=4, gid="evaluations",
                           label=f"{group.label} ({problem})")
        achieved = any((group, problem) in by_class for problem in problems)
        handles.append(Patch(facecolor=colors[group], edgecolor="none",
                             label=group.label if achieved else f"{group.label} (no successful evaluation)"))
    if len(problems) > 1:
        for problem in problems:
            handles.append(Line2D([], [], marker=markers[problem], linestyle="none", color="#666666",
                                  markerfacecolor="none", markersize=7, label=f"problem {problem}"))


def _mark_best(ax: Axes, ok: pd.DataFrame, problems: list[str], unit: str, describe: bool, handles: list) -> None:
    """Ring the best evaluation of each problem; with ``describe``, name its configuration in a corner box."""
    for problem in problems:
        points = ok[ok["problem"] == problem]
        if points.empty:
            continue
        best = points.loc[points["gflops"].idxmax()]
        ax.scatter([best["intensity"]], [best["gflops"]], s=230, marker=BEST_MARKER, facecolors="none",
                   edgecolors="black", linewidths=1.8, zorder=6, gid="best")
        if describe:
            params = ", ".join(f"{k}={v}" for k, v in best["params"].items())
            text = textwrap.fill(f"best: {best['family']} {params}", BEST_LABEL_WIDTH, subsequent_indent="  ")
            label = ax.annotate(f"{text}\n{number(best['gflops'])} {unit}", (best["intensity"], best["gflops"]),
                                xytext=(0.985, 0.025), textcoords="axes fraction", ha="right", va="bottom",
                                multialignment="left", fontsize=8.5, gid="best-label", zorder=8,
                                bbox={"boxstyle": "round,pad=0.3", "facecolor": "white", "edgecolor": "#999999"},
                                arrowprops={"arrowstyle": "-|>", "color": "#555555", "linewidth": 0.9,
                                            "shrinkB": 9, "connectionstyle": "arc3,rad=0.15"})
            label.set_in_layout(False)
    if not ok.empty:
        handles.append(Line2D([], [], marker=BEST_MARKER, linestyle="none", markerfacecolor="none",
                              markeredgecolor="black", markersize=12, markeredgewidth=1.8, label="best configuration"))


def _draw_baselines(ax: Axes, xs: list[float], ys: list[float], describe: bool, handles: list, library: str) -> None:
    if not xs:
        return
    label = f"{library} (at its compulsory-traffic intensity)"
    ax.scatter(xs, ys, s=260, marker="*", color=CUBLAS_COLOR, edgecolors="black", linewidths=0.9, zorder=7,
               gid="baseline", label=label)
    handles.append(Line2D([], [], marker="*", linestyle="none", markerfacecolor=CUBLAS_COLOR, markeredgecolor="black",
                          markersize=14, label=label))
    if describe:
        for x, y in zip(xs, ys, strict=True):
            ax.annotate(f"{library} {number(y)}", (x, y), xytext=(0, -11), textcoords="offset points", ha="center",
                        va="top", fontsize=8.5, gid="cublas-label")


def _first_per_class(bounds: list[ClassBound]) -> list[ClassBound]:
    first: dict[Group, ClassBound] = {}
    for entry in bounds:
        first.setdefault(entry.group, entry)
    return list(first.values())


def draw_roofline(ax: Axes, run: Run, dtype: str, problems: list[str]) -> None:
    """One roofline panel for ``dtype`` with the evaluations of ``problems`` (largest first). Each class's bound is
    drawn for the first (largest) of these problems it was evaluated on; a single problem gets its best and cuBLAS
    named."""
    kernels = run.kernels
    in_slice = (kernels["dtype"] == dtype) & kernels["problem"].isin(problems)
    ok = run.ok[(run.ok["dtype"] == dtype) & run.ok["problem"].isin(problems)]
    ok = ok[ok["intensity"].notna() & (ok["intensity"] > 0) & (ok["gflops"] > 0)]
    baselines = run.baselines[(run.baselines["dtype"] == dtype) & run.baselines["problem"].isin(problems)]
    ceilings = run.device_ceilings(dtype, kernels[in_slice])
    bounds = _first_per_class([b for problem in problems for b in class_bounds(run, dtype=dtype, problem=problem)])
    base_x, base_y = _baseline_points(baselines)

    ridges = [c.ridge_point for c in ceilings] + [m.ridge_point(dtype) for m in run.machine_models]
    xlim = _limits([*ok["intensity"], *base_x, *(b.intensity for b in bounds), *(r for r in ridges if r)], 3.0, 3.0)
    peaks = [c.gflops for c in ceilings] + [m.peak_gflops.get(dtype) for m in run.machine_models]
    y_values = [*ok["gflops"], *base_y, *(p for p in peaks if p)]
    y_values += [bound for b in bounds for _, bound in (*b.model_bounds, *b.device_bounds)]
    y_values += [c.bound_gflops(xlim[0]) for c in ceilings if c.bound_gflops(xlim[0])]
    ylim = _limits(y_values, 2.5, 2.5)
    xs = np.geomspace(*xlim, 400)

    handles: list = []
    for i, ceiling in enumerate(ceilings):
        lower = any(c.kind == ceiling.kind for c in ceilings[:i])
        units = unit_words(run.environment(kernels[in_slice]), dtype, ceiling.unit, ceiling.kind == "measured")
        _draw_ceiling(ax, xs, ceiling, run.device_name(kernels[in_slice]), units, handles, lower)
    _draw_models(ax, run, dtype, xs, ylim, handles)
    colors = group_colors(kernels["group"].dropna())
    _draw_evaluations(ax, ok, sorted_groups(kernels.loc[in_slice, "group"].dropna()), colors, problems, handles)
    describe = len(problems) == 1
    _mark_best(ax, ok, problems, rate_unit(dtype), describe, handles)
    _draw_baselines(ax, base_x, base_y, describe, handles, run.library)
    _draw_bounds(ax, bounds, colors)
    if bounds and run.machine_models:
        handles.append(Line2D([], [], marker=BOUND_MARKER, linestyle="none", markeredgecolor="#555555",
                              markeredgewidth=3, markersize=14, label="bound of each class on the model (GFLOP/s)"))
    if any(str(line.get_gid()).startswith("ridge-") for line in ax.get_lines()):
        handles.append(Line2D([], [], marker=RIDGE_MARKER, linestyle="none", markeredgecolor="#555555",
                              markeredgewidth=2, markersize=12,
                              label="ridge point (where a roof's slope meets its peak)"))
    if ok.empty:
        ax.text(0.5, 0.5, "no successful evaluation", transform=ax.transAxes, ha="center", fontsize=12,
                color="#aa0000")

    log_log(ax, xlim, ylim)
    ax.set_xlabel(INTENSITY_LABEL)
    ax.set_ylabel(f"achieved {rate_unit(dtype)}")
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.11), ncols=2, fontsize=8.5,
              frameon=False)


def roofline_figure(run: Run, dtype: str | None = None, problem: str | None = None) -> Figure:
    """The roofline of one dtype and problem, or (no arguments) the overview: one panel per dtype, all problems
    (of kernels that compute)."""
    data_only = set(bandwidth_slices(run))
    slices = [s for s in run.slices() if s not in data_only]
    dtypes = [dtype] if dtype is not None else list(dict.fromkeys(d for d, _ in slices))
    fig = Figure(figsize=(10, 8.6 * len(dtypes)), layout="constrained")
    axes = fig.subplots(len(dtypes), 1, squeeze=False)[:, 0]
    for ax, panel_dtype in zip(axes, dtypes, strict=True):
        problems = [problem] if problem is not None else [p for d, p in slices if d == panel_dtype]
        draw_roofline(ax, run, panel_dtype, problems)
        scope = problems[0] if len(problems) == 1 else "all problems"
        ax.set_title(f"Roofline of {run.experiment_name}: {panel_dtype}, {scope}", fontsize=12)
    return fig


def roofline_plan(run: Run) -> dict[str, Draw]:
    """File name -> how to draw it: roofline.png, and one per dtype and problem when there are several (none without
    any tuned kernel's row, nor for kernels that only move data: tuner.report.bandwidth draws those)."""
    data_only = set(bandwidth_slices(run))
    slices = [s for s in run.slices() if s not in data_only]
    if not slices:
        return {}
    plan: dict[str, Draw] = {"roofline.png": roofline_figure}
    if len(slices) > 1:
        for dtype, problem in slices:
            plan[f"roofline_{dtype}_{problem}.png"] = functools.partial(roofline_figure, dtype=dtype, problem=problem)
    return plan
