"""Reading counters for a run folder's configurations: which ones, from which source, and what is said of it.

After a run's search (``measure.counters``) or later (``python -m tuner profile``), the chosen configurations are
counted by the backend's source (:mod:`tuner.counters.sources`) in one pass, outside every timed sample, and
their rows added to the folder's ``counters.parquet``; a configuration counted before on the same GPU model is
not counted again. ``best`` takes the fastest ``COUNTERS_BEST`` successful configurations of each study, ``all``
every successful one (without the instrumented metrics, whose cost grows with the kernel's memory instructions),
and a list of keys those configurations. Whatever cannot be counted is a one-line reason
in the :class:`CountersNote` the run records and the summary and the report show.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from tuner.counters import store
from tuner.counters.sources import CounterSource
from tuner.kernels.discovery import families
from tuner.results import table as results
from tuner.settings import COUNTERS_BEST


@dataclass(frozen=True)
class CountersNote:
    """What a run (or ``tuner profile``) read of counters, and why not more."""

    setting: str
    asked: int = 0
    """Configurations chosen."""
    counted: int = 0
    """Counted now."""
    before: int = 0
    """Counted before (kept, not counted again)."""
    reasons: tuple[str, ...] = ()
    how: str = ""
    seconds: float | None = None
    best: int = COUNTERS_BEST

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "reasons": list(self.reasons), "text": self.text()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CountersNote:
        fields = {k: data[k] for k in ("setting", "asked", "counted", "before", "how", "seconds", "best") if k in data}
        return cls(**fields, reasons=tuple(str(r) for r in data.get("reasons") or ()))

    @property
    def scope(self) -> str:
        return {"best": f"the fastest {self.best} of each study", "all": "every successful configuration"}.get(
            self.setting, "the configurations named")

    def text(self) -> str:
        """One line: how many were counted and how, or why none were."""
        if self.setting == "none":
            return "not read (measure.counters: none; python -m tuner profile RUN_FOLDER reads them)"
        if self.asked == 0 and not self.reasons:
            return "none read: no successful configuration to count"
        have = self.counted + self.before
        earlier = f", {self.before} of them before" if self.before else ""
        how = f" by {self.how}" if self.how and self.counted else ""
        if have == self.asked and not self.reasons:
            return f"{have} configuration{'s' if have != 1 else ''} counted ({self.scope}{earlier}){how}"
        more = f" (and {len(self.reasons) - 1} more)" if len(self.reasons) > 1 else ""
        why = f": {self.reasons[0]}{more}" if self.reasons else ""
        if have == 0:
            return f"none read{why}"
        return f"{have} of {self.asked} configurations counted ({self.scope}{earlier}){how}; not all{why}"


def countable(df: pd.DataFrame) -> pd.DataFrame:
    """The successful rows of the tuned CUDA kernels (what counters can be read for)."""
    if df.empty:
        return df
    score = results.performance(df)
    known = families()
    cuda = df["family"].astype(str).map(lambda f: f in known and known[f].target == "cuda"
                                        and known[f].recording is None)
    return df[(df["status"] == "ok") & (df["family"] != results.BASELINE_FAMILY) & score.notna() & cuda]


def chosen(df: pd.DataFrame, setting: str, best: int = COUNTERS_BEST, keys: Collection[str] = ()) -> pd.DataFrame:
    """The rows whose configurations ``setting`` asks counters of (``keys``: these configurations instead)."""
    ok = countable(df)
    ok = ok.assign(_score=results.performance(ok)).sort_values("_score", ascending=False, kind="stable")
    if keys:
        ok = ok[ok["config_key"].isin(list(keys))]
    elif setting == "best":
        group = ok["study"] if "study" in ok else ok["problem"].astype(str) + "/" + ok["dtype"].astype(str)
        ok = ok.groupby(group, sort=False).head(best)
    elif setting != "all":
        return ok.iloc[0:0].drop(columns="_score")
    return ok.drop_duplicates("config_key").drop(columns="_score")


def _not_countable(df: pd.DataFrame) -> tuple[str, ...]:
    """Why successful rows were not countable (none where the run has no successful configuration)."""
    ok = df[(df["status"] == "ok") & (df["family"] != results.BASELINE_FAMILY)] if not df.empty else df
    if ok.empty:
        return ()
    families = ", ".join(sorted(ok["family"].astype(str).unique()))
    return (f"none of its {len(ok)} successful evaluations ({families}) is of a CUDA kernel, and counters are read "
            "for CUDA kernels only (not for C kernels measured on the CPU, nor for recorded spaces)",)


def count_configurations(df: pd.DataFrame, folder: str | Path, source: CounterSource | None, setting: str,
                         say: Callable[[str], None] | None = None, unable: str = "",
                         best: int = COUNTERS_BEST, keys: Collection[str] = ()) -> CountersNote:
    """Count the chosen configurations of ``df`` (a run folder's results table) that ``folder`` has no counters
    of yet, and add them to its counters.parquet. ``unable``: why there is no source, where there is none."""
    if setting == "none" and not keys:
        return CountersNote("none")
    rows = chosen(df, setting, best, keys)
    done = store.counted_keys(store.load(folder))
    gpus = rows["gpu_name"].astype("string").fillna("") if "gpu_name" in rows else pd.Series("", index=rows.index)
    fresh = [(key, gpu) not in done for key, gpu in zip(rows["config_key"], gpus, strict=True)]
    todo = rows[fresh]
    note = CountersNote(setting, asked=len(rows), before=len(rows) - len(todo), best=best)
    if todo.empty and note.before:
        return note
    if source is None:  # said even where nothing was countable: "no successful configuration" would mislead
        return CountersNote(setting, len(rows), 0, note.before, (unable or "this backend reads no counters",),
                            best=best)
    if todo.empty:
        return replace(note, reasons=_not_countable(df)) if rows.empty else note
    if say is not None:
        say(f"counters: reading the counters of {len(todo)} configuration{'s' if len(todo) != 1 else ''} "
            f"({note.scope}), outside the timed samples")
    started = time.perf_counter()
    counted = source.count([results.config_of_row(row) for row in todo.to_dict("records")], say,
                           detail=setting != "all" or bool(keys))
    store.merge(folder, counted.rows)
    return CountersNote(setting, len(rows), len(counted.rows), note.before,
                        (*counted.reasons, *_elsewhere(counted.rows, todo)), counted.how,
                        round(time.perf_counter() - started, 3), best)


def _elsewhere(rows: list[dict[str, Any]], asked: pd.DataFrame) -> list[str]:
    """A reason where the counters were read on another GPU model than the one that measured the configurations
    (the results table joins the counters of the same model only)."""
    measured = set(asked["gpu_name"].dropna().astype(str)) if "gpu_name" in asked else set()
    counted_on = {str(row.get("gpu_name")) for row in rows} - measured
    if not counted_on or not measured:
        return []
    return [f"counted on {', '.join(sorted(counted_on))}, not on the {', '.join(sorted(measured))} that measured "
            f"the run: the results table joins counters of the GPU model that measured a row only"]
