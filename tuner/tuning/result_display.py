"""What ``tuner.run`` returns, and how it shows itself: one line in a console (``repr``), the summary table in a
notebook (HTML) and on the terminal at the end of a run."""

from __future__ import annotations

import html
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import pandas as pd

from tuner.console.live_line import duration
from tuner.measure.measurement import Status
from tuner.results.environment import baseline_library, measuring_device
from tuner.results.objective import best_rows, performance
from tuner.results.objectives import recorded_objective
from tuner.results.record import config_of_row
from tuner.results.schema import BASELINE_FAMILY
from tuner.text_table import terminal_width, wrapped
from tuner.tuning.energy_summary import energy_summary
from tuner.tuning.progress import config_label, summary_table, summary_text, unit_of_config


@dataclass(frozen=True, repr=False)
class RunResult:
    """What ``tuner.run`` returns: the results table, the output folder and its metadata. It shows itself in one
    line in a console and as the summary table in a notebook."""

    df: pd.DataFrame
    """Every evaluation of the experiment's studies, one row each (the saved results table)."""
    out: Path
    metadata: dict[str, Any]
    """What metadata.json holds: the experiment, the environments and the runs."""

    @property
    def best(self) -> pd.DataFrame:
        """The best ``ok`` row per problem and dtype (cuBLAS rows aside) by the run's objective (the fastest
        where it searched time and energy at once)."""
        return best_rows(self.df, recorded_objective(self.metadata))

    def __repr__(self) -> str:
        return short_text(self)

    def _repr_html_(self) -> str:
        return html_view(self)


def _counts(result: RunResult) -> tuple[str, int, int, int]:
    df = result.df
    tuned = df[df["family"] != BASELINE_FAMILY]
    name = str(df["experiment"].iloc[0]) if len(df) else str(result.metadata.get("experiment", {}).get("name", "?"))
    return name, int(tuned["study"].nunique()), len(tuned), int((tuned["status"] == Status.OK.value).sum())


def short_text(result: RunResult) -> str:
    """``RunResult(fermi_like: 3 studies, 18 evaluations, 18 ok; fastest 8561.2 GFLOP/s, tiled TILE_WIDTH=32 on
    4096x4096x4096 float32; out='reports/fermi_like')``."""
    name, studies, evaluations, ok = _counts(result)
    parts = [f"{name}: {studies} {'study' if studies == 1 else 'studies'}, {evaluations} evaluations, {ok} ok"]
    best = best_rows(result.df, recorded_objective(result.metadata))
    if len(best):
        top = best.loc[performance(best).idxmax()]
        config = config_of_row(top)
        parts.append(f"fastest {float(performance(best).max()):.1f} {unit_of_config(config)}, "
                     f"{config_label(config)} on {top['problem']} {top['dtype']}")
    return f"RunResult({'; '.join(parts)}; out={str(result.out)!r})"


def html_view(result: RunResult) -> str:
    """A heading line and the summary table (the best configuration of each study), for a notebook."""
    name, studies, evaluations, ok = _counts(result)
    head = (f"<p><b>{html.escape(name)}</b>: {studies} {'study' if studies == 1 else 'studies'}, {evaluations} "
            f"evaluations, {ok} ok; results in <code>{html.escape(str(result.out))}</code> "
            f"(<code>.df</code>: every evaluation, <code>.best</code>: the best of each study)</p>")
    table = summary_table(result.df, recorded_objective(result.metadata), result.metadata)
    if table.empty:
        return head
    shown = table[["problem", "dtype", "best", "GFLOP/s", "% peak", "% DRAM BW", "cuBLAS GFLOP/s",
                   *(s.value for s in Status if table[s.value].any())]]
    shown = shown.rename(columns={"cuBLAS GFLOP/s": f"{baseline_library(result.metadata)} GFLOP/s"})
    return head + shown.to_html(index=False, na_rep="-", escape=True, border=0)


def print_summary(result: RunResult, stream: TextIO | None = None, width: int | None = None) -> None:
    stream = stream if stream is not None else sys.stdout
    objective = recorded_objective(result.metadata)
    table = summary_table(result.df, objective, result.metadata)
    device = measuring_device(result.metadata)
    if table.empty:
        print("nothing was evaluated", file=stream)
    else:
        print(summary_text(table, width or terminal_width(), baseline_library(result.metadata), device), file=stream)
        energy = energy_summary(result.df, objective, width or terminal_width())
        if energy:
            print(energy, file=stream)
    run = result.metadata["runs"][-1]
    busy = run.get("gpu_busy_fraction")
    if busy is not None:
        print(f"{device} busy: {100 * busy:.0f}% of {duration(run['wall_s'])} wall time", file=stream)
    elif run.get("device_busy_s") is not None:
        print(f"{device} busy: {run['device_busy_s']:.1f} s of recorded device time (replayed in "
              f"{duration(run['wall_s'])})", file=stream)
    counters = run.get("counters") or {}
    if counters.get("text") and counters.get("setting") != "none":
        print(wrapped(f"counters: {counters['text']}", width or terminal_width(), hanging="  "), file=stream)
    print(f"results: {result.out}", file=stream)
