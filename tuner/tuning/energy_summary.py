"""The summary's lines on energy: per study, the Pareto front's fastest point, most efficient point and knee."""

from __future__ import annotations

from typing import Any

import pandas as pd

from tuner.energy.front import measured, study_fronts
from tuner.results.objectives import OBJECTIVES, TIME, Objectives, is_pair, label, needs_energy
from tuner.results.record import row_params
from tuner.results.schema import BASELINE_FAMILY
from tuner.text_table import format_table, widest, wrapped

POINTS = ("fastest", "most efficient", "knee")
NOTE = ("Pareto front of the median time and the energy per launch (its mean power over back-to-back launches "
        "after the timed samples, times their time per launch); knee: the front's point farthest below the line "
        "from its fastest to its most efficient point, both scaled to the front. W: mean power; GFLOP/s/W: GFLOP "
        "per joule.")


def configuration(row: pd.Series) -> str:
    values = " ".join(f"{name}={value}" for name, value in row_params(row).items())
    return f"{row['family']} {values}".strip()


def _number(value: Any, digits: str) -> str:
    return "-" if value is None or pd.isna(value) else format(float(value), digits)


def energy_summary(df: pd.DataFrame, objective: Objectives, width: int) -> str | None:
    """What the summary prints about energy (None where the run neither measured nor asked for any)."""
    lines = []
    if objective[0] != TIME or is_pair(objective):
        best = "the fastest of the front" if is_pair(objective) else OBJECTIVES[objective[0]].meaning
        lines.append(wrapped(f"objective {label(objective)}: 'best' above is {best}.", width, hanging=""))
    tuned = df[df["family"] != BASELINE_FAMILY]
    ok = tuned[tuned["status"] == "ok"]
    unmeasured = len(ok) - len(measured(ok))
    if needs_energy(objective) and unmeasured:
        lines.append(wrapped(f"energy not recorded for {unmeasured} ok evaluation(s): the search counted them as "
                             f"failures.", width, hanging=""))
    rows, names = [], []
    for front in study_fronts(df, BASELINE_FAMILY):
        for i, (point, index) in enumerate(zip(POINTS, (front.fastest, front.efficient, front.knee), strict=True)):
            row = front.front.loc[index]
            names.append(configuration(row))
            rows.append([front.problem if i == 0 else "", front.dtype if i == 0 else "", point,
                         _number(row["time_median_ms"], ".4g"), _number(row["energy_j"], ".4g"),
                         _number(row["power_w"], ".0f"), _number(row.get("gflops_per_watt"), ".1f")])
    if rows:
        header = ["problem", "dtype", "Pareto front", "configuration", "ms", "J", "W", "GFLOP/s/W"]

        def render(cells: list[str]) -> str:
            return format_table(header, [[*r[:3], c, *r[3:]] for r, c in zip(rows, cells, strict=True)],
                                right=[4, 5, 6, 7], indent="")

        text = render(names)
        legend = []
        if widest(text) > width:
            numbers = {name: f"[e{i}]" for i, name in enumerate(dict.fromkeys(names), start=1)}
            text = render([numbers[name] for name in names])
            legend = [wrapped(f"{number} {name}", width) for name, number in numbers.items()]
        lines += [text, *legend, wrapped(NOTE, width, hanging="")]
    return "\n".join(lines) if lines else None
