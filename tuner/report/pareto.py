"""Speed against energy: per study, every evaluation with an energy at its median time and energy per launch, the
Pareto front through them with each of its points numbered, and a table naming each point's configuration."""

from __future__ import annotations

import functools

import pandas as pd
from matplotlib.figure import Figure

from tuner.energy.front import ENERGY_COLUMN, TIME_COLUMN, knee, measured, pareto_front
from tuner.report.axes import log_log
from tuner.report.formatting import fixed, number, params_text
from tuner.report.run_folder import Draw, Run
from tuner.report.tables import Table

FRONT_COLOR, CLOUD_COLOR = "#c0392b", "#9aa3ad"
MARKS = {"fastest": ("^", "#1f77b4"), "knee": ("*", "#d4a017"), "most efficient": ("v", "#2ca02c")}
MARGIN = 1.25


def _study(run: Run, dtype: str, problem: str) -> pd.DataFrame:
    return run.ok[(run.ok["dtype"] == dtype) & (run.ok["problem"] == problem)]


def energy_slices(run: Run) -> list[tuple[str, str]]:
    """The (dtype, problem) studies whose rows hold energy."""
    return [(dtype, problem) for dtype, problem in run.slices() if not measured(_study(run, dtype, problem)).empty]


def roles(front: pd.DataFrame) -> dict[object, list[str]]:
    """Front index -> what it is: the fastest, the knee, the most efficient (a point may be several)."""
    named: dict[object, list[str]] = {}
    for role, index in (("fastest", front.index[0]), ("knee", knee(front)), ("most efficient", front.index[-1])):
        named.setdefault(index, []).append(role)
    return named


def pareto_figure(run: Run, dtype: str, problem: str) -> Figure:
    rows = _study(run, dtype, problem)
    points, front = measured(rows), pareto_front(rows)
    baseline = measured(run.baselines[(run.baselines["dtype"] == dtype) & (run.baselines["problem"] == problem)])
    figure = Figure(figsize=(8.5, 5.6), layout="constrained")
    ax = figure.add_subplot()
    everything = pd.concat([points, baseline])
    times, joules = everything[TIME_COLUMN].astype(float), everything[ENERGY_COLUMN].astype(float)
    log_log(ax, (times.min() / MARGIN, times.max() * MARGIN), (joules.min() / MARGIN, joules.max() * MARGIN))
    ax.scatter(points[TIME_COLUMN], points[ENERGY_COLUMN], s=14, color=CLOUD_COLOR, alpha=0.7, linewidths=0,
               label=f"evaluations with energy ({len(points)})")
    ax.step(front[TIME_COLUMN], front[ENERGY_COLUMN], where="post", color=FRONT_COLOR, linewidth=1.2,
            label=f"Pareto front ({len(front)} points)")
    ax.scatter(front[TIME_COLUMN], front[ENERGY_COLUMN], s=22, color=FRONT_COLOR, zorder=3)
    for number_, (_, row) in enumerate(front.iterrows(), start=1):
        ax.annotate(str(number_), (row[TIME_COLUMN], row[ENERGY_COLUMN]), textcoords="offset points",
                    xytext=(5, 4), fontsize=8, color=FRONT_COLOR)
    for index, named in roles(front).items():
        for role in named:
            marker, color = MARKS[role]
            ax.scatter([front.loc[index, TIME_COLUMN]], [front.loc[index, ENERGY_COLUMN]], s=110, marker=marker,
                       facecolors="none", edgecolors=color, linewidths=1.5, zorder=4, label=role)
    if not baseline.empty:
        ax.scatter(baseline[TIME_COLUMN], baseline[ENERGY_COLUMN], s=60, marker="x", color="black", zorder=4,
                   label=run.library)
    ax.set_xlabel("median time (ms)")
    ax.set_ylabel("energy per launch (J)")
    ax.set_title(f"{problem} {dtype}: time against energy (numbers: the front's points, fastest first)", fontsize=10)
    ax.legend(fontsize=8, loc="best")
    return figure


def pareto_plan(run: Run) -> dict[str, Draw]:
    """File name -> how to draw it: one figure per study whose rows hold energy."""
    return {f"pareto_{dtype}_{problem}.png": functools.partial(pareto_figure, dtype=dtype, problem=problem)
            for dtype, problem in energy_slices(run)}


def front_tables(run: Run) -> list[tuple[str, Table]]:
    """Per study with energy: its front, point by point (the numbers of the figure), each with its configuration."""
    tables = []
    for dtype, problem in energy_slices(run):
        rows = _study(run, dtype, problem)
        front = pareto_front(rows)
        named = roles(front)
        table = Table(["#", "point", "configuration", "time (ms)", "energy (J)", "power (W)", "performance",
                       "GFLOP/s per W"], numeric={0, 3, 4, 5, 6, 7},
                      caption=f"{len(front)} of the {len(measured(rows))} evaluations with an energy; performance: "
                              f"GFLOP/s (GB/s for a kernel without arithmetic)")
        for number_, (index, row) in enumerate(front.iterrows(), start=1):
            table.rows.append([str(number_), ", ".join(named.get(index, [])),
                               f"{row['family']} {params_text(row['params'])}", fixed(row[TIME_COLUMN], 4),
                               fixed(row[ENERGY_COLUMN], 4), fixed(row["power_w"], 0), number(row["performance"]),
                               fixed(row["gflops_per_watt"], 1)])
        tables.append((f"{problem} {dtype}", table))
    return tables
