"""The vendor baseline of each study (cuBLAS on the GPU, numpy's BLAS on the CPU): measured once, kept in the
study's user attribute ``baseline`` (so that a resumed run does not measure it again), and measured again when the
load it was measured under differs from the load the study's best configuration was measured under.

A baseline timed while other processes held the CPUs and a kernel timed on an idle machine (or the other way
round) make a ratio that says more about the neighbours than about the kernel: after each study's search, where
one of the two was measured under load (:mod:`tuner.measure.machine_load`) and the other not, the baseline is measured
again, once per run. The baseline it replaces is kept in the study's user attribute ``replaced baselines``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import optuna
import pandas as pd

from tuner.backends.protocol import Backend
from tuner.optuna_attrs import BASELINE_ATTR, REPLACED_BASELINES_ATTR
from tuner.results import table as results
from tuner.results.schema import BASELINE
from tuner.search.study_space import StudySpace
from tuner.tuning.folder import Table
from tuner.tuning.progress import Progress

BASELINE_DTYPES = ("float32", "float64", "tf32", "bfloat16", "float16", "float8_e4m3", "float8_e5m2",
                   "float8_e4m3_e5m2", "bfloat16_out_bfloat16", "float16_out_float16", "float8_e4m3_out_bfloat16",
                   "float8_e5m2_out_bfloat16", "float8_e4m3_e5m2_out_bfloat16")


def _wanted(space: StudySpace) -> bool:
    return bool(space.baseline) and space.dtype in BASELINE_DTYPES


def measure_baseline(space: StudySpace, study: optuna.Study, backend: Backend, table: Table,
                     progress: Progress) -> None:
    """The study's baseline, where its family has one and the study does not hold it yet."""
    if _wanted(space) and BASELINE_ATTR not in study.user_attrs:
        progress.note(f"{space.name}: measuring the vendor baseline ({space.baseline})")
        _measure(space, study, backend, table)


def measure_again_if_load_changed(space: StudySpace, study: optuna.Study, backend: Backend, table: Table,
                                  progress: Progress) -> None:
    """The baseline measured again where it was measured under load and the study's best configuration not, or
    the other way round (never for a replayed run, whose answers are recorded)."""
    stored = study.user_attrs.get(BASELINE_ATTR)
    if not _wanted(space) or stored is None or backend.recording() is not None:
        return
    baseline_loaded = attrs_under_load(stored)
    best_loaded = best_under_load(table.rows_of(space.name))
    if baseline_loaded is None or best_loaded is None or baseline_loaded == best_loaded:
        return
    how = {True: "under load", False: "on an idle machine"}
    progress.note(f"{space.name}: the baseline was measured {how[baseline_loaded]}, the best configuration "
                  f"{how[best_loaded]}: measuring the baseline again")
    study.set_user_attr(REPLACED_BASELINES_ATTR, [*study.user_attrs.get(REPLACED_BASELINES_ATTR, []), stored])
    _measure(space, study, backend, table)


def _measure(space: StudySpace, study: optuna.Study, backend: Backend, table: Table) -> None:
    busy_before = backend.busy_seconds
    measurement = backend.baseline(space.problem, space.dtype)
    if measurement is None:
        return
    config = results.baseline_config(space.problem, space.dtype)
    record = table.record(BASELINE, -1, BASELINE, config, measurement, backend.busy_seconds - busy_before)
    study.set_user_attr(BASELINE_ATTR, record.attrs())
    table.replace_baseline(record)


def attrs_under_load(attrs: Mapping[str, Any]) -> bool | None:
    """Whether a stored record (a trial's or a baseline's user attribute) was measured under load; None where its
    load was not watched."""
    load = (attrs.get("measurement") or {}).get("load")
    return bool(load["under_load"]) if isinstance(load, Mapping) and "under_load" in load else None


def best_under_load(rows: Iterable[Mapping[str, Any]]) -> bool | None:
    """Whether the fastest ok row among ``rows`` was measured under load; None where there is none, or its load
    was not watched."""
    best: Mapping[str, Any] | None = None
    for row in rows:
        value = row.get("performance")
        if row.get("status") != "ok" or value is None or pd.isna(value):
            continue
        if best is None or value > best["performance"]:
            best = row
    loaded = best.get("under_load") if best is not None else None
    return None if loaded is None or pd.isna(loaded) else bool(loaded)
