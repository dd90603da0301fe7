"""Parameter effects: the best GFLOP/s reached with each parameter value, per family.

A family of two parameters (the naive kernel's BLOCK_X × BLOCK_Y) is a heatmap per problem; any other
family gets bars of the best GFLOP/s per value of each parameter (the tiled kernel's TILE_WIDTH). Both stay
readable with hundreds of values: a large heatmap drops the numbers in its cells (the colour bar reads them) and
labels every k-th tick; a parameter with more than ``MAX_BARS`` numeric values is a line over its values, and one
with more than ``MAX_BARS`` other values shows the ``MAX_BARS`` values with the highest best, as its axis says.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from tuner.config import ParamValue
from tuner.kernels.discovery import families
from tuner.report.formatting import number, performance_unit
from tuner.report.groups import sort_value
from tuner.report.run_folder import Draw, Run
from tuner.results import table as results

SLICE_COLORS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c")
FAILED_COLOR = "#c8c8c8"
"""Heatmap cells whose evaluations all failed; cells never evaluated stay white."""
CELL_LABELS_MAX = 12
"""A heatmap with at most this many values along each axis writes the best (or the failure) in each cell."""
MAX_TICKS = 10
"""Tick labels along a heatmap axis at most: beyond, every k-th value is labelled."""
MAX_BARS = 24
"""Values of a parameter drawn as bars at most."""
BAR_LABELS_MAX = 48
"""Bars (values × problems) in one panel up to which each bar has its number written on it."""
NOT_RUN = "not run"
MIN_SLOTS = 3
"""The fewest bar widths a bar panel spans: one or two values get bars of a third of it, not all of it."""


def parameter_names(run: Run, family: str) -> list[str]:
    """The family's parameters in their declared order (names seen in the rows, for an unknown family)."""
    rows = run.kernels[run.kernels["family"] == family]
    seen = {name for params in rows["params"] for name in params}
    stored = (run.family_record(family) or {}).get("parameters")
    listed = tuple(str(n) for n in stored) if isinstance(stored, list) else ()
    declared = families()[family].parameter_names if family in families() else listed
    return [n for n in declared if n in seen] + sorted(seen - set(declared))


def _values(rows: pd.DataFrame, name: str) -> list[ParamValue]:
    return sorted({p[name] for p in rows["params"] if name in p}, key=sort_value)


def outcomes(rows: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """Per combination of the values of ``names`` that the rows hold: ``best`` (the best ok GFLOP/s, NaN when
    none was ok) and ``note`` ("" or, without a success, the statuses of its evaluations joined by /)."""
    values = pd.DataFrame(list(rows["params"]), index=rows.index, columns=names)
    ok = (rows["status"] == "ok") & rows["performance"].notna()
    frame = values.assign(status=rows["status"].astype(str), best=rows["performance"].where(ok).astype(float))
    grouped = frame.groupby(names, sort=False, dropna=True)
    table = grouped["best"].max().to_frame().assign(note="")
    failed = frame[grouped["best"].transform("max").isna()].drop_duplicates([*names, "status"])
    if not failed.empty:
        statuses = failed.sort_values("status").groupby(names, sort=False, dropna=True)["status"].agg("/".join)
        table["note"] = statuses.reindex(table.index).fillna("")  # by label: boolean values would index as a mask
    return table


def _outcome(table: pd.DataFrame, key: ParamValue | tuple[ParamValue, ...]) -> tuple[float, str]:
    if key not in table.index:
        return math.nan, NOT_RUN
    best, note = table.loc[key, "best"], table.loc[key, "note"]
    return float(best), str(note)


def _ticks(count: int) -> range:
    """The positions of the labelled ticks along an axis of ``count`` values."""
    return range(0, count, max(1, math.ceil(count / MAX_TICKS)))


def _heatmap(fig: Figure, ax: Axes, rows: pd.DataFrame, x_name: str, y_name: str, title: str, dtype: str) -> None:
    unit = performance_unit(rows, dtype)
    xs, ys = _values(rows, x_name), _values(rows, y_name)
    table = outcomes(rows, [x_name, y_name])
    grid = np.full((len(ys), len(xs)), np.nan)
    failed = np.zeros_like(grid, dtype=bool)
    x_index, y_index = {x: i for i, x in enumerate(xs)}, {y: j for j, y in enumerate(ys)}
    for (x, y), best, note in zip(table.index, table["best"], table["note"], strict=True):
        grid[y_index[y], x_index[x]] = best
        failed[y_index[y], x_index[x]] = bool(note)
    image = ax.imshow(np.ma.masked_invalid(grid), cmap="viridis", origin="lower", aspect="auto", interpolation="none")
    if failed.any():
        edges_x, edges_y = np.arange(len(xs) + 1) - 0.5, np.arange(len(ys) + 1) - 0.5
        ax.pcolormesh(edges_x, edges_y, np.ma.masked_where(~failed, np.ones_like(grid)),
                      cmap=ListedColormap([FAILED_COLOR]), shading="flat", gid="failed")
    if len(xs) <= CELL_LABELS_MAX and len(ys) <= CELL_LABELS_MAX:
        finite = grid[np.isfinite(grid)]
        middle = (finite.min() + finite.max()) / 2 if finite.size else 0.0
        for j, y in enumerate(ys):
            for i, x in enumerate(xs):
                best, note = _outcome(table, (x, y))
                text = number(best) if math.isfinite(best) else note
                color = ("white" if best < middle else "black") if math.isfinite(best) else "#666666"
                ax.text(i, j, text, ha="center", va="center", fontsize=8, color=color, gid="cell")
    x_ticks, y_ticks = _ticks(len(xs)), _ticks(len(ys))
    ax.set_xticks(list(x_ticks), [str(xs[i]) for i in x_ticks])
    ax.set_yticks(list(y_ticks), [str(ys[j]) for j in y_ticks])
    ax.set_xlabel(x_name)
    ax.set_ylabel(y_name)
    ax.set_title(title, fontsize=10)
    bar = fig.colorbar(image, ax=ax, shrink=0.9)
    bar.set_label(f"best {unit}", fontsize=8)


def _shown_values(slices: list[tuple[str, pd.DataFrame]], name: str) -> tuple[list[ParamValue], str]:
    """The values of ``name`` one panel shows, and its axis label (saying which values, when not all)."""
    values = sorted({v for _, rows in slices for v in _values(rows, name)}, key=sort_value)
    if len(values) <= MAX_BARS or all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return values, name
    best = pd.concat([outcomes(rows, [name])["best"] for _, rows in slices]).groupby(level=0).max()

    def rank(value: ParamValue) -> float:  # the highest best first, the values never ok last
        score = best.get(value, math.nan)
        return -score if pd.notna(score) else math.inf

    shown = sorted(sorted(values, key=rank)[:MAX_BARS], key=sort_value)
    return shown, f"{name} (the {MAX_BARS} values with the highest best, of {len(values)})"


def _bars(ax: Axes, slices: list[tuple[str, pd.DataFrame]], name: str, dtype_label: str) -> None:
    values, label = _shown_values(slices, name)
    if len(values) > MAX_BARS:
        _lines(ax, slices, name, values, dtype_label)
        return
    width = 0.8 / max(1, len(slices))
    labelled = len(values) * len(slices) <= BAR_LABELS_MAX
    top = 0.0
    for s, (slice_label, rows) in enumerate(slices):
        offsets = np.arange(len(values)) - 0.4 + width * (s + 0.5)
        table = outcomes(rows, [name])
        results = [_outcome(table, v) for v in values]
        heights = [best for best, _ in results]
        color = SLICE_COLORS[s % len(SLICE_COLORS)]
        ax.bar(offsets, np.nan_to_num(heights), width=width * 0.95, color=color, label=slice_label, gid="bars")
        for x, (best, note) in zip(offsets, results, strict=True):
            if math.isfinite(best):
                top = max(top, best)
                if labelled:
                    ax.annotate(number(best), (x, best), xytext=(0, 2), textcoords="offset points", ha="center",
                                va="bottom", fontsize=7, rotation=90 if len(slices) > 2 else 0)
            elif labelled:
                ax.text(x, 0, f" {note}", rotation=90, ha="center", va="bottom", fontsize=7, color="#aa0000")
            else:
                ax.plot([x], [0], marker="x", color="#aa0000", markersize=4, gid="never-ok")
    ticks = _ticks(len(values))
    ax.set_xticks(list(ticks), [str(values[i]) for i in ticks])
    room = max(0.0, (MIN_SLOTS - len(values)) / 2)
    ax.set_xlim(-0.5 - room, len(values) - 0.5 + room)
    ax.set_xlabel(label)
    _rate_axis(ax, top, dtype_label)


def _lines(ax: Axes, slices: list[tuple[str, pd.DataFrame]], name: str, values: list[ParamValue],
           dtype_label: str) -> None:
    """Many numeric values: the best per value as a line over the values, a cross at 0 where none was ok."""
    top = 0.0
    for s, (slice_label, rows) in enumerate(slices):
        table = outcomes(rows, [name])
        xs = [v for v in values if v in table.index]
        best = np.array([_outcome(table, v)[0] for v in xs])
        color = SLICE_COLORS[s % len(SLICE_COLORS)]
        ax.plot(xs, best, marker="o", markersize=2.5, linewidth=1, color=color, label=slice_label, gid="bars")
        never = [x for x, b in zip(xs, best, strict=True) if not math.isfinite(b)]
        if never:
            ax.plot(never, [0] * len(never), linestyle="none", marker="x", color="#aa0000", markersize=4,
                    gid="never-ok")
        if np.isfinite(best).any():
            top = max(top, float(np.nanmax(best)))
    ax.set_xlabel(f"{name} ({len(values)} values; a cross: never ok)")
    _rate_axis(ax, top, dtype_label)


def _rate_axis(ax: Axes, top: float, dtype_label: str) -> None:
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
    dtype_label = performance_unit(rows, dtypes[0]) if len(dtypes) == 1 else results.unit_of(rows)
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
        shown = max(min(MAX_BARS, len(_values(rows, n))) for n in varying)
        width = min(14.0, max(6.0, 1.5 + 0.9 * len(slices) * shown))
        fig = Figure(figsize=(width if columns == 1 else 12.0, 0.9 + 3.3 * lines), layout="constrained")
        _title(fig, run, family, dtype_label)
        axes = fig.subplots(lines, columns, squeeze=False).ravel()
        labelled = [(f"{p}, {d}" if len(dtypes) > 1 else p,
                     rows[(rows["dtype"] == d) & (rows["problem"] == p)]) for d, p in slices]
        for ax, name in zip(axes, varying, strict=False):
            _bars(ax, labelled, name, dtype_label)
        # One legend for all panels, beside them, where it covers no bar.
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside right center", fontsize=8)
        for ax in axes[len(varying):]:
            ax.set_axis_off()
        if fixed:
            fig.supxlabel("the same in every evaluation: " + ", ".join(fixed), fontsize=8, color="#555555")
    return fig


def parameter_plan(run: Run) -> dict[str, Draw]:
    """File name -> how to draw it: params_<family>.png for each tuned family with parameters."""
    return {f"params_{family}.png": functools.partial(parameter_figure, family=family)
            for family in sorted(run.kernels["family"].astype(str).unique()) if parameter_names(run, family)}
