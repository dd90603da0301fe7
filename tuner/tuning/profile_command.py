"""``python -m tuner profile RUN_FOLDER``: add hardware counters to a finished run folder.

The folder's configurations (the fastest few of each study, all of them, or those named) are counted on this
machine's GPU by Nsight Compute, with the compile settings and inputs the run measured with (from its
metadata), in one session; their rows join the folder's ``counters.parquet``, the results table is saved again
with the counted columns, and the report is written again. A configuration whose family's template has changed
since the run is left out (its kernel would not be the one measured). Only the package's families and those of
``--templates`` folders are loaded: a run folder is data, and the family folders its metadata names are not
imported.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from tuner.counters import store
from tuner.counters.collect import CountersNote, chosen, count_configurations, countable
from tuner.counters.sources import NcuCounters
from tuner.errors import TunerError
from tuner.kernels.discovery import changed_template, families, use_family_dirs
from tuner.results import table as results
from tuner.settings import COUNTERS_BEST, CompileSettings


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _environment(df: pd.DataFrame, metadata: dict[str, Any]) -> dict[str, Any]:
    """The environment most of the rows were measured in."""
    environments = _mapping(metadata.get("environments"))
    ids = Counter(str(i) for i in df.get("metadata_id", pd.Series(dtype=str)).dropna() if str(i) in environments)
    if ids:
        return _mapping(environments[ids.most_common(1)[0][0]])
    return _mapping(next(iter(environments.values()), {}))


def _changed_templates(df: pd.DataFrame, env: dict[str, Any]) -> set[str]:
    """The families whose template differs from the one the run measured (by the hash its metadata keeps)."""
    known = families()
    return {f for f in set(df["family"].astype(str)) if f in known and changed_template(env, f) is not None}


def _source(env: dict[str, Any], template_dirs: Sequence[str | os.PathLike[str]]) -> NcuCounters:
    compiled, measured, device = (_mapping(env.get(key)) for key in ("compile", "measure", "device"))
    settings = CompileSettings(arch=str(compiled.get("arch") or CompileSettings().arch),
                               options=tuple(compiled.get("options") or CompileSettings().options))
    return NcuCounters(settings, int(measured.get("input_seed") or 0), None, template_dirs,
                       str(device.get("name") or ""))


def profile_folder(run_dir: str | os.PathLike[str], setting: str = "best", best: int = COUNTERS_BEST,
                   keys: Collection[str] = (), template_dirs: Sequence[str | os.PathLike[str]] = (),
                   report: bool = True, quiet: bool = False) -> CountersNote:
    """Count the folder's chosen configurations on this GPU and save them with its results (see the module
    text); TunerError when the folder cannot be read or nothing could be counted."""
    from tuner.tuning.run import lock_folder

    folder = Path(run_dir)
    if not (folder / results.RESULTS_PARQUET).is_file():
        raise TunerError(f"{folder}: no {results.RESULTS_PARQUET} here; give the output folder of "
                         f"`python -m tuner run`")
    if best < 1:
        raise TunerError(f"--best must be at least 1, not {best}")
    use_family_dirs([os.fspath(d) for d in template_dirs])
    say = None if quiet else (lambda text: print(text, file=sys.stderr, flush=True))
    lock = lock_folder(folder)
    try:
        try:
            df, metadata = results.load(folder)
        except (OSError, ValueError) as exc:
            raise TunerError(f"{folder}: the run's results cannot be read ({exc})") from None
        metadata = metadata if isinstance(metadata, dict) else {}
        unknown = sorted(set(keys) - set(countable(df)["config_key"].astype(str)))
        if unknown:
            raise TunerError(f"{folder}: no successful GPU kernel configuration of the run is called "
                             f"{', '.join(repr(k) for k in unknown)}; name configurations by their config_key in "
                             f"{results.RESULTS_CSV}")
        env = _environment(chosen(df, setting, best, keys), metadata)
        changed = _changed_templates(df, env)
        kept = df[~df["family"].astype(str).isin(changed)]
        note = count_configurations(kept, folder, _source(env, template_dirs), setting, say, best=best, keys=keys)
        if changed:
            left = f"the template of {', '.join(sorted(changed))} changed since the run: its kernels are not counted"
            note = CountersNote(note.setting, note.asked, note.counted, note.before, (*note.reasons, left), note.how,
                                note.seconds, note.best)
        if note.counted == 0 and note.before == 0:
            raise TunerError(f"{folder}: no counters were read: {note.text()}")
        table = store.join_folder(df, folder)
        results.save(table, {**metadata, "counters": store.conditions(store.load(folder))}, folder)
    finally:
        os.close(lock)
    if report:
        from tuner.report import default_jobs, write_report

        write_report(folder, quiet=quiet, jobs=default_jobs())
    return note
