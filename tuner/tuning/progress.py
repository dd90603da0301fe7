"""What a person sees of a run: one progress line per study on stderr, and the summary table on stdout.

The line shows the evaluations done, the best so far, the time elapsed and the time left (once the pace is known).
On a terminal it is rewritten in place (tqdm), fitted to the terminal's width, the best configuration's description
shortened first; in Jupyter it is tqdm's widget; elsewhere (a log file, CI) a plain line is printed every few
seconds and when the study ends (:mod:`tuner.console.live_line`). ``quiet`` silences the progress, not the summary.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, TextIO

import pandas as pd

from tuner.config import Config
from tuner.console.live_line import LiveLine, duration
from tuner.kernels.discovery import get_family
from tuner.measure.measurement import Status
from tuner.results.environment import ceilings_under_load
from tuner.results.objective import best_rows
from tuner.results.objectives import DEFAULT, Objectives
from tuner.results.peak_source import environment_of, peak_columns, peaks_text
from tuner.results.record import row_params
from tuner.results.schema import BASELINE_FAMILY
from tuner.text_table import format_table, widest, wrapped

NOTHING_OK = "(nothing ok)"


def config_label(config: Config) -> str:
    """``tiled TILE_WIDTH=16``: a configuration in a few words."""
    values = " ".join(f"{k}={v}" for k, v in config.params)
    return f"{config.family} {values}".strip()


def unit_of_config(config: Config) -> str:
    """GFLOP/s, or GB/s for a family whose kernel does no arithmetic (what its search maximizes)."""
    return "GB/s" if get_family(config.family).flops(config.problem) == 0 else "GFLOP/s"


def time_left(remaining: int, new: int, elapsed: float, timeout_s: float | None) -> float | None:
    """The time a study is expected to take still: ``remaining`` evaluations at the pace of the ``new`` ones made
    in ``elapsed`` seconds, at most what is left of ``timeout_s``; None before the first new evaluation (no pace
    yet: a replayed study of a few seconds would otherwise start by promising its whole time budget)."""
    if not remaining:
        return 0.0
    if not new:
        return None
    estimate = elapsed / new * remaining
    return estimate if timeout_s is None else min(estimate, max(0.0, timeout_s - elapsed))


class Progress:
    """The progress line of the study being searched (:class:`tuner.console.live_line.LiveLine`)."""

    def __init__(self, quiet: bool = False, stream: TextIO | None = None):
        self.line = LiveLine(quiet, stream)
        self._name = ""
        self._budget = 0
        self._timeout: float | None = None
        self._started = time.monotonic()
        self._parts: tuple[list[str], str, str, list[str]] = ([], "", "", [])

    @property
    def quiet(self) -> bool:
        return self.line.quiet

    def study_started(self, name: str, budget: int, timeout_s: float | None) -> None:
        self._name, self._budget, self._timeout = name, budget, timeout_s
        self._started = time.monotonic()
        self._parts = ([name, f"0/{budget}"], "best -", "", [])
        self.line.start(budget)

    def evaluated(self, done: int, new: int, best: tuple[float, Config] | None) -> None:
        elapsed = time.monotonic() - self._started
        tail = [f"elapsed {duration(elapsed)}"]
        left = time_left(max(0, self._budget - done), new, elapsed, self._timeout)
        if left is not None:
            tail.append(f"~{duration(left)} left")
        self._parts = ([self._name, f"{done}/{self._budget}"],
                       f"best {best[0]:.1f} {unit_of_config(best[1])}" if best else "best -",
                       config_label(best[1]) if best else "", tail)
        self.line.show(self._fitted(), done)

    def _fitted(self, end: str = "") -> str:
        """The progress line (and ``end``, with no time left), within the terminal's width where the stream is
        one."""
        head, best, description, tail = self._parts
        if end:
            tail = [*(part for part in tail if not part.endswith(" left")), end]
        return fitted_line(head, best, description, tail, self.line.width())

    def study_finished(self, reason: str) -> None:
        end = f"[{reason}]"
        line = self._fitted(end)
        if self.line.width() is not None and not line.endswith(end):  # the reason on a line of its own
            self.line.close(self._fitted())
            self.line.note(f"  {end}")
        else:
            self.line.close(line)

    def note(self, text: str) -> None:
        """A line of its own (e.g. a baseline measured, a warning)."""
        self.line.note(text)


def fitted_line(head: list[str], best: str, description: str, tail: list[str], width: int | None) -> str:
    """``name  count  best (description)  tail`` within ``width`` columns (None: as it is): the description
    shortened with an ellipsis, then left out, then the study's name shortened from its start (its problem and
    dtype stay), then the line cut with an ellipsis."""
    def joined(name: str, about: str) -> str:
        return "  ".join([name, *head[1:], f"{best} ({about})" if about else best, *tail])

    name = head[0] if head else ""
    line = joined(name, description)
    if width is None or len(line) <= width:
        return line
    keep = len(description) - (len(line) - width) - 1
    if keep >= 8:
        return joined(name, description[:keep] + "…")
    line = joined(name, "")
    keep = len(name) - (len(line) - width) - 1
    if len(line) > width and keep >= 12:
        line = joined("…" + name[len(name) - keep:], "")
    return line if len(line) <= width else line[:width - 1] + "…"


def summary_table(df: pd.DataFrame, objective: Objectives = DEFAULT,
                  metadata: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Per problem and dtype: the best configuration (by the objective), its speed against the ceilings and the
    baseline, status counts, and whether the best, the baseline or the ceilings (of ``metadata``'s environments) were
    measured under load."""
    tuned = df[df["family"] != BASELINE_FAMILY]
    best = best_rows(df, objective).set_index(["problem", "dtype"])
    baseline = df[(df["family"] == BASELINE_FAMILY) & (df["status"] == Status.OK.value)].set_index(["problem", "dtype"])
    counts = tuned.groupby(["problem", "dtype"], sort=False)["status"].value_counts().unstack(fill_value=0)
    rows = []
    for (problem, dtype), _ in tuned.groupby(["problem", "dtype"], sort=False):
        key = (problem, dtype)
        row: dict[str, Any] = {"problem": problem, "dtype": dtype, "best_under_load": False,
                               "ceilings_under_load": False, "peak_of": None, "peak_short": False}
        if key in best.index:
            b = best.loc[key]
            values = " ".join(f"{name}={value}" for name, value in row_params(b).items())
            bandwidth_only = pd.isna(b["gflops"])
            row.update({
                "best": f"{b['family']} {values}".strip(),
                "GFLOP/s": f"{float(b['performance']):.1f} GB/s" if bandwidth_only else round(float(b["gflops"]), 1),
                "% peak": _rounded(b["pct_flops_ceiling"]),
                "% DRAM BW": _rounded(b["pct_bandwidth_ceiling"]),
                "best_under_load": _true(b.get("under_load")),
                "ceilings_under_load": ceilings_under_load(metadata, b.get("metadata_id")),
                **peak_columns(environment_of(metadata, b.get("metadata_id")), dtype),
            })
        else:
            row.update({"best": NOTHING_OK, "GFLOP/s": None, "% peak": None, "% DRAM BW": None})
        row["cuBLAS GFLOP/s"] = round(float(baseline.loc[key, "gflops"]), 1) if key in baseline.index else None
        row["baseline_under_load"] = key in baseline.index and _true(baseline.loc[key].get("under_load"))
        for status in Status:
            row[status.value] = int(counts.loc[key, status.value]) if status.value in counts.columns else 0
        rows.append(row)
    return pd.DataFrame(rows)


def _true(value: Any) -> bool:
    return value is not None and not pd.isna(value) and bool(value)


def _rounded(value: Any) -> float | None:
    return None if pd.isna(value) else round(float(value), 1)


SUMMARY_NOTES = (
    "GFLOP/s: the best configuration at its median time (GB/s of one read and one write of each element for a "
    "kernel without arithmetic). % peak: of the device's measured arithmetic peak for the dtype ({peaks}). "
    "% DRAM: the no-cache model's bytes (every operand read counted as DRAM traffic) over that time, of the "
    "measured DRAM bandwidth, so caches can push it past 100%. {library}: the library's GFLOP/s on the same problem. "
    "ok, invalid, ...: distinct configurations evaluated, by outcome."
)
MARK_NOTES = {
    "*": "* measured while other processes used the {device} (under load): slower than it can be.",
    "!": "! above the measured arithmetic peak, which no kernel can be: the peak was measured too low (under load, "
         "say); measure it again on an idle machine ({remeasure}).",
    "?": "? of ceilings measured under load, which read low: measure them again on an idle machine ({remeasure}).",
    "^": "^ of the tensor cores' mma.sync rate, below what this GPU's tensor cores reach through wgmma, which its "
         "ceilings did not measure: a share above 100% is no error ({remeasure} measures both).",
}
REMEASURE = {"CPU": "python -m tuner device --cpu --remeasure", "GPU": "python -m tuner device --remeasure"}


def _cell(value: object, mark: str = "") -> str:
    return "-" if value is None or pd.isna(value) else f"{value}{mark}"


def _marks(row: Mapping[str, Any]) -> dict[str, str]:
    """The mark of each number of a summary row: * under load, ! above a ceiling, ? of ceilings under load."""
    share = row["% peak"]
    doubt = "?" if row.get("ceilings_under_load") else ""
    above = "^" if row.get("peak_short") else "!" if share is not None and not pd.isna(share) and share > 100 else ""
    return {"GFLOP/s": "*" if row.get("best_under_load") else "",
            "% peak": above + doubt,
            "% DRAM BW": doubt,
            "cuBLAS GFLOP/s": "*" if row.get("baseline_under_load") else ""}


def summary_text(table: pd.DataFrame, width: int, library: str = "cuBLAS", device: str = "GPU") -> str:
    """The summary table within ``width`` columns where it can be: the best configurations named in the table, or
    by a number in it and in full below it; the status columns that count anything; a note on the numbers, and on
    each mark (*, !, ?) that flags a number measured under load or above its ceiling."""
    statuses = ["ok", *(s.value for s in Status if s is not Status.OK and table[s.value].any())]
    header = ["problem", "dtype", "best", "GFLOP/s", "% peak", "% DRAM", library, *statuses]
    right = [i for i, name in enumerate(header) if name not in ("problem", "dtype", "best")]
    marks = [_marks(r) for _, r in table.iterrows()]
    numbers = ("GFLOP/s", "% peak", "% DRAM BW", "cuBLAS GFLOP/s")

    def render(best: list[str]) -> str:
        rows = [[r["problem"], r["dtype"], name, *(_cell(r[column], mark[column]) for column in numbers),
                 *(r[s] for s in statuses)]
                for name, (_, r), mark in zip(best, table.iterrows(), marks, strict=True)]
        return format_table(header, rows, right=right, indent="")

    text = render(list(table["best"]))
    legend = []
    if widest(text) > width:
        numbered = {name: f"[{i}]" for i, name in enumerate(dict.fromkeys(b for b in table["best"]
                                                                          if b != NOTHING_OK), start=1)}
        text = render([numbered.get(b, b) for b in table["best"]])
        legend = [wrapped(f"{number} {name}", width) for name, number in numbered.items()]
    used = {symbol for mark in marks for text_mark in mark.values() for symbol in text_mark}
    flags = [wrapped(note.format(device=device, remeasure=REMEASURE.get(device, REMEASURE["GPU"])), width, hanging="")
             for symbol, note in MARK_NOTES.items() if symbol in used]
    notes = SUMMARY_NOTES.format(library=library, peaks=peaks_text(table))
    return "\n".join([text, *legend, wrapped(notes, width, hanging=""), *flags])
