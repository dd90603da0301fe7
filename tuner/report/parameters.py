"""Parameter effects: the best GFLOP/s reached with each parameter value, per family.

A family of two parameters (the naive kernel's BLOCK_X × BLOCK_Y) is a heatmap per problem; any other
family gets bars of the best GFLOP/s per value of each parameter (the tiled kernel's TILE_WIDTH).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from tuner.config import ParamValue
from tuner.kernels.discovery import families
from tuner.report.formatting import number, rate_unit
from tuner.report.groups import sort_value
from tuner.report.run_folder import Run

SLICE_COLORS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c")


def parameter_names(run: Run, family: str) -> list[str]:
    """The family's parameters in their declared order (names seen in the rows, for an unknown family)."""
    rows = run.kernels[run.kernels["family"] == family]
    seen = {name for params in rows["params"] for name in params}
    declared = families()[family].parameter_names if family in families() else ()
    return [n for n in declared if n in seen] + sorted(seen - set(declared))


def _values(rows: pd.DataFrame, name: str) -> list[ParamValue]:
    return sorted({p[name] for p in rows["params"] if name in p}, key=sort_value)


def _outcome(rows: pd.DataFrame) -> tuple[float, str]:
    """(best ok GFLOP/s, "") or (NaN, the status of the failures) for the rows of one parameter value."""
    ok = rows[(rows["status"] == "ok") & rows["gflops"].notna()]
    if not ok.empty:
        return float(ok["gflops"].max()), ""
    if rows.empty:
        return math.nan, "not run"
    return math.nan, "/".join(sorted(rows["status"].astype(str).unique()))


def _heatmap(fig: Figure, ax: Axes, rows: pd.DataFrame, x_name: str, y_name: str, title: str, dtype: str) -> None:
    xs, ys = _values(rows, x_name), _values(rows, y_name)
    grid = np.full((len(ys), len(xs)), np.nan)
    notes = [["" for _ in xs] for _ in ys]
    for j, y in enumerate(ys):
        for i, x in enumerate(xs):
            cell = rows[[p.get(x_name) == x and p.get(y_name) == y for p in rows["params"]]]
            grid[j, i], notes[j][i] = _outcome(cell)
    ax.set_facecolor("#eeeeee")
    image = ax.imshow(np.ma.masked_invalid(grid), cmap="viridis", origin="lower", aspect="auto")
    finite = grid[np.isfinite(grid)]
    middle = (finite.min() + finite.max()) / 2 if finite.size else 0.0
    for j in range(len(ys)):
        for i in range(len(xs)):
            value = grid[j, i]
            text = number(value) if math.isfinite(value) else notes[j][i]
            color = ("white" if value < middle else "black") if math.isfinite(value) else "#666666"
            ax.text(i, j, text, ha="center", va="center", fontsize=8, color=color, gid="cell")
    ax.set_xticks(range(len(xs)), [str(x) for x in xs])
    ax.set_yticks(range(len(ys)), [str(y) for y in ys])
    ax.set_xlabel(x_name)
    ax.set_ylabel(y_name)
    ax.set_title(title, fontsize=10)
    bar = fig.colorbar(image, ax=ax, shrink=0.9)
    bar.set_label(f"best {rate_unit(dtype)}", fontsize=8)


def _bars(ax: Axes, slices: list[tuple[str, pd.DataFrame]], name: str, dtype_label: str) -> None:
    values = sorted({v for _, rows in slices for v in _values(rows, name)}, key=sort_value)
    width = 0.8 / max(1, len(slices))
    top = 0.0
    for s, (label, rows) in enumerate(slices):
        offsets = np.arange(len(values)) - 0.4 + width * (s + 0.5)
        outcomes = [_outcome(rows[[p.get(name) == v for p in rows["params"]]]) for v in values]
        heights = [best for best, _ in outcomes]
        color = SLICE_COLORS[s % len(SLICE_COLORS)]
        ax.bar(offsets, np.nan_to_num(heights), width=width * 0.95, color=color, label=label, gid="bars")
        for x, (best, note) in zip(offsets, outcomes, strict=True):
            if math.isfinite(best):
                top = max(top, best)
                ax.annotate(number(best), (x, best), xytext=(0, 2), textcoords="offset points", ha="center",
                            va="bottom", fontsize=7, rotation=90 if len(slices) > 2 else 0)
            else:
                ax.text(x, 0, f" {note}", rotation=90, ha="center", va="bottom", fontsize=7, color="#aa0000")
    ax.set_xticks(range(len(values)), [str(v) for v in values])
    ax.set_xlabel(name)
    ax.set_ylabel(f"best {dtype_label}")
    ax.set_ylim(0, top * 1.25 if top > 0 else 1)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.grid(True, axis="y", alpha=0.3)


def _title(fig: Figure, run: Run, family: str, dtype_label: str) -> None:
    fig.suptitle(f"Best {dtype_label} per parameter value: {family} ({run.experiment_name})", fontsize=12)


def parameter_figure(run: Run, family: str) -> Figure:
    """The effect of each of the family's parameters on the best GFLOP/s, per problem and dtype."""
    names = parameter_names(run, family)
    rows = run.kernels[run.kernels["family"] == family]
    slices = [(d, p) for d, p in run.slices() if ((rows["dtype"] == d) & (rows["problem"] == p)).any()]
    dtypes = sorted({d for d, _ in slices})
    dtype_label = rate_unit(dtypes[0]) if len(dtypes) == 1 else "GFLOP/s"
    if len(names) == 2:
        columns = min(3, len(slices))
        lines = math.ceil(len(slices) / columns)
        fig = Figure(figsize=(4.2 * columns + 0.8, 3.6 * lines + 0.7), layout="constrained")
        _title(fig, run, family, dtype_label)
        axes = fig.subplots(lines, columns, squeeze=False).ravel()
        for ax, (dtype, problem) in zip(axes, slices, strict=False):
            cell_rows = rows[(rows["dtype"] == dtype) & (rows["problem"] == problem)]
            _heatmap(fig, ax, cell_rows, names[0], names[1], f"{problem}, {dtype}", dtype)
        for ax in axes[len(slices):]:
            ax.set_axis_off()
    else:
        varying = [n for n in names if len(_values(rows, n)) > 1] or names[:1]
        fixed = [f"{n}={_values(rows, n)[0]}" for n in names if n not in varying]
        columns = 2 if len(varying) > 2 else 1
        lines = math.ceil(len(varying) / columns)
        width = min(14.0, max(6.0, 1.5 + 0.9 * len(slices) * max(len(_values(rows, n)) for n in varying)))
        fig = Figure(figsize=(width if columns == 1 else 12.0, 0.9 + 3.3 * lines), layout="constrained")
        _title(fig, run, family, dtype_label)
        axes = fig.subplots(lines, columns, squeeze=False).ravel()
        labelled = [(f"{p}, {d}" if len(dtypes) > 1 else p,
                     rows[(rows["dtype"] == d) & (rows["problem"] == p)]) for d, p in slices]
        for ax, name in zip(axes, varying, strict=False):
            _bars(ax, labelled, name, dtype_label)
        # One legend for all panels, beside them, where it covers no bar.
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside right upper", fontsize=8)
        for ax in axes[len(varying):]:
            ax.set_axis_off()
        if fixed:
            fig.supxlabel("the same in every evaluation: " + ", ".join(fixed), fontsize=8, color="#555555")
    return fig


def parameter_figures(run: Run) -> dict[str, Figure]:
    """File name -> figure: params_<family>.png for each tuned family with parameters."""
    figures = {}
    for family in sorted(run.kernels["family"].astype(str).unique()):
        if parameter_names(run, family):
            figures[f"params_{family}.png"] = parameter_figure(run, family)
    return figures
