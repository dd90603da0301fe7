"""How a run's result shows itself: one line in a console (``repr``), the summary table in a notebook (HTML)."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from tuner.energy.objective import recorded_objective
from tuner.measurement import Status
from tuner.progress import describe, summary_table, unit_of_config
from tuner.results import BASELINE_FAMILY, baseline_library, best_rows, config_of_row, performance

if TYPE_CHECKING:
    from tuner.results import RunResult


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
        parts.append(f"fastest {float(performance(best).max()):.1f} {unit_of_config(config)}, {describe(config)} on "
                     f"{top['problem']} {top['dtype']}")
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
