"""The warning at the end of a run where a kernel family never compiled: its rows are all compile errors, so the
summary's "0 ok" would otherwise be all it says."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tuner.measure.measurement import Status
from tuner.results.files import RESULTS_CSV
from tuner.results.schema import BASELINE_FAMILY


def never_compiled(df: pd.DataFrame) -> dict[str, int]:
    """The families none of whose evaluations compiled, with their count of compile errors."""
    tuned = df[df["family"] != BASELINE_FAMILY] if len(df) else df
    found = {}
    for family, rows in tuned.groupby("family", sort=True) if len(tuned) else ():
        errors = int((rows["status"] == Status.COMPILE_ERROR.value).sum())
        if errors and not rows["status"].isin([Status.OK.value, Status.WRONG.value, Status.CRASHED.value]).any():
            found[str(family)] = errors
    return found


def compile_failure_warning(df: pd.DataFrame, out: Path) -> str | None:
    """One paragraph naming each family that never compiled, its compile errors and where their messages are."""
    families = never_compiled(df)
    if not families:
        return None
    named = ", ".join(f"{family} ({count} compile error{'s' if count != 1 else ''})"
                      for family, count in families.items())
    return (f"warning: no configuration of {named} compiled; each compiler message is in the reason column of "
            f"{out / RESULTS_CSV} (and in the failures table of {out / 'report.html'}); the first one usually "
            f"names the mistake in the template")
