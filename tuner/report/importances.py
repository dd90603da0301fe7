"""Parameter importances per Optuna study by PED-ANOVA (Optuna's PedAnovaImportanceEvaluator): how differently each
parameter's values spread among the best trials (the top decile, at least ``TOP_TRIALS``, at most half) than
among all. The trials are rebuilt from the results table (the study's own, read in a fraction of a second
wherever the storage is); a study of several families gets one computation per set of parameters its trials
share, time-boxed by ``deadline_s``."""

from __future__ import annotations

import logging
import math
import os
import time
import warnings
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import optuna
import pandas as pd
from matplotlib.figure import Figure
from optuna.distributions import BaseDistribution, CategoricalDistribution
from optuna.trial import FrozenTrial

from tuner.config import ParamValue
from tuner.report.groups import sort_value
from tuner.report.run_folder import Run

MIN_TRIALS = 5
"""Completed trials a set needs before its importances mean anything."""
TOP_TRIALS = 10
"""The fewest trials PED-ANOVA counts as the best (where the top decile holds fewer)."""
TOP_QUANTILE = 0.1
DEADLINE_S = 10.0
"""Seconds the importances of one report may take; the sets not reached by then are left out with a note."""
FAMILY_PARAM = "family"
METHOD = "PED-ANOVA"
BARS_UP_TO = 4
"""Studies and subsets drawn as bar charts at most; more are one table of coloured cells."""


@dataclass(frozen=True)
class Importances:
    study: str
    subset: str
    """Which trials: e.g. ``family naive``, or ``all completed trials``."""
    trials: int
    values: dict[str, float]
    """Parameter -> importance (fractions summing to 1), most important first."""
    top_trials: int = 0
    """How many of the trials PED-ANOVA took as the best."""


@dataclass(frozen=True)
class _Trial:
    params: dict[str, ParamValue]
    value: float


def study_trials(rows: pd.DataFrame) -> list[_Trial]:
    """One study's evaluations as its trials: parameters as the study names them, the value it was told."""
    several = rows["family"].nunique() > 1
    ok = (rows["status"] == "ok") & rows["performance"].notna()
    values = rows["performance"].where(ok, 0.0).astype(float)
    trials = []
    for family, params, value in zip(rows["family"], rows["params"], values, strict=True):
        named = {f"{family}.{name}": v for name, v in params.items()}
        trials.append(_Trial({FAMILY_PARAM: family, **named} if several else named, value))
    return trials


def _varying(trials: list[_Trial], names: set[str]) -> list[str]:
    return sorted(n for n in names if len({repr(t.params[n]) for t in trials}) > 1)


def _subset_label(trials: list[_Trial], names: frozenset[str], only_subset: bool) -> str:
    families = {t.params.get(FAMILY_PARAM) for t in trials}
    if len(families) == 1 and None not in families:
        return f"family {families.pop()}"
    if only_subset:
        return "all completed trials"
    return "trials with " + ", ".join(sorted(names)) if names else "trials without parameters"


def _frozen(trials: list[_Trial], names: list[str]) -> list[FrozenTrial]:
    choices = {n: sorted({t.params[n] for t in trials}, key=sort_value) for n in names}
    distributions: dict[str, BaseDistribution] = {n: CategoricalDistribution(v) for n, v in choices.items()}
    return [optuna.trial.create_trial(params={n: t.params[n] for n in names}, distributions=distributions,
                                      value=t.value) for t in trials]


@contextmanager
def _quiet_optuna() -> Iterator[None]:
    """No log line for each in-memory study, no warning on small sets (the figure states each set's size)."""
    logger = optuna.logging.get_logger("optuna")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def _evaluate(study_name: str, subset: str, trials: list[_Trial], names: list[str],
              notes: list[str]) -> Importances | None:
    if len(names) < 2:
        varied = f"only {names[0]} varied" if names else "no parameter took more than one value"
        notes.append(f"study {study_name}, {subset}: {varied}, so there is nothing to rank")
        return None
    if len(trials) < MIN_TRIALS:
        notes.append(f"study {study_name}, {subset}: {len(trials)} completed trial(s); importances need at least "
                     f"{MIN_TRIALS}")
        return None
    if len({t.value for t in trials}) < 2:
        notes.append(f"study {study_name}, {subset}: every trial has the same value ({trials[0].value:g} GFLOP/s; "
                     f"a failure counts as 0), so there is nothing to rank")
        return None
    quantile = min(0.5, max(TOP_QUANTILE, TOP_TRIALS / len(trials)))
    # imported here: optuna.importance imports scikit-learn (for fANOVA), which only the importances need
    from optuna.importance import PedAnovaImportanceEvaluator, get_param_importances

    try:
        with _quiet_optuna():
            study = optuna.create_study(direction="maximize")
            study.add_trials(_frozen(trials, names))
            values = get_param_importances(study, evaluator=PedAnovaImportanceEvaluator(target_quantile=quantile),
                                           params=names)
    except (ValueError, RuntimeError, ArithmeticError) as exc:
        notes.append(f"study {study_name}, {subset}: importances could not be computed ({exc})")
        return None
    ordered = dict(sorted(((n, float(v)) for n, v in values.items()), key=lambda item: -item[1]))
    return Importances(study_name, subset, len(trials), ordered, math.ceil(quantile * len(trials)))


def _study_sets(study_name: str, trials: list[_Trial]) -> list[tuple[str, list[_Trial], list[str]]]:
    """(subset label, its trials, the parameters to rank) for each set of trials sharing their parameters, after
    the set of all trials over their common parameters when those vary."""
    by_names: dict[frozenset[str], list[_Trial]] = defaultdict(list)
    for trial in trials:
        by_names[frozenset(trial.params)].append(trial)
    sets = []
    if len(by_names) > 1:
        common = _varying(trials, set.intersection(*(set(names) for names in by_names)))
        if len(common) > 1:
            sets.append(("all completed trials", trials, common))
    for names, members in sorted(by_names.items(), key=lambda item: sorted(item[0])):
        sets.append((_subset_label(members, names, len(by_names) == 1), members, _varying(members, set(names))))
    return sets


def param_importances(run: Run, deadline_s: float = DEADLINE_S) -> tuple[list[Importances], list[str]]:
    """Importances of the run's studies, and notes on what was skipped and why; sets not begun within
    ``deadline_s`` seconds are left out with a note."""
    started = time.monotonic()
    kernels = run.kernels
    searched = kernels[(kernels["trial"].fillna(-1) >= 0) & (kernels["study"] != "")]
    notes: list[str] = []
    if searched.empty:
        return [], ["no evaluation of a study in this run: parameter importances are left out"]
    found, skipped = [], []
    for study_name, rows in searched.groupby("study", sort=True):
        for subset, trials, names in _study_sets(str(study_name), study_trials(rows)):
            if time.monotonic() - started > deadline_s:
                skipped.append(f"{study_name} ({subset})")
                continue
            entry = _evaluate(str(study_name), subset, trials, names, notes)
            found += [entry] if entry else []
    if skipped:
        notes.append(f"importances left out after {deadline_s:g} s, the time the report gives them: "
                     + ", ".join(skipped))
    return found, notes


def importances_figure(importances: list[Importances]) -> Figure:
    """One horizontal bar chart per study and subset of trials; beyond ``BARS_UP_TO`` of them, one table of
    coloured cells (a row per study and subset, a column per parameter), which reads as well and draws in a
    fraction of the time."""
    if len(importances) > BARS_UP_TO:
        return _importances_grid(importances)
    columns = 2 if len(importances) > 1 else 1
    lines = math.ceil(len(importances) / columns)
    heights = [max(1.6, 0.45 * len(entry.values) + 1.1) for entry in importances]
    fig = Figure(figsize=(11 if columns == 2 else 7, sum(heights[::columns]) + 0.8), layout="constrained")
    axes = fig.subplots(lines, columns, squeeze=False).ravel()
    for ax, entry in zip(axes, importances, strict=False):
        names = list(entry.values)[::-1]
        values = np.array([entry.values[n] for n in names])
        ax.barh(names, values, color="#4c72b0", gid="importance")
        for y, value in enumerate(values):
            ax.text(value, y, f" {value:.2f}", va="center", fontsize=8)
        ax.set_xlim(0, 1.1)
        ax.set_title(f"{entry.study}\n{entry.subset} ({entry.trials} trials, best {entry.top_trials})", fontsize=9)
        ax.set_xlabel(f"importance ({METHOD}; they sum to 1)")
        ax.grid(True, axis="x", alpha=0.3)
    for ax in axes[len(importances):]:
        ax.set_axis_off()
    fig.suptitle("Optuna parameter importances", fontsize=12)
    return fig


def _importances_grid(importances: list[Importances]) -> Figure:
    totals: dict[str, float] = defaultdict(float)
    for entry in importances:
        for name, value in entry.values.items():
            totals[name] += value
    names = sorted(totals, key=lambda n: -totals[n])
    grid = np.array([[entry.values.get(n, np.nan) for n in names] for entry in importances])
    prefix = os.path.commonprefix([entry.study for entry in importances])
    prefix = prefix[:prefix.rfind("/") + 1]
    rows = [f"{entry.study.removeprefix(prefix)}, {entry.subset} ({entry.trials} trials, best {entry.top_trials})"
            for entry in importances]
    fig = Figure(figsize=(min(14.0, 5.5 + 1.1 * len(names)), 1.4 + 0.32 * len(rows)), layout="constrained")
    ax = fig.subplots()
    image = ax.imshow(np.ma.masked_invalid(grid), cmap="Blues", vmin=0, vmax=1, aspect="auto", gid="importance")
    for (row, column), value in np.ndenumerate(grid):
        if np.isfinite(value):
            ax.text(column, row, f"{value:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if value > 0.6 else "black")
    ax.set_xticks(range(len(names)), names, rotation=30 if len(names) > 4 else 0, ha="right" if len(names) > 4
                  else "center")
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.tick_params(length=0)
    fig.colorbar(image, ax=ax, shrink=0.8).set_label(f"importance ({METHOD}; each row sums to 1)", fontsize=8)
    fig.suptitle(f"Optuna parameter importances{f' ({prefix.rstrip(chr(47))})' if prefix else ''}", fontsize=12)
    return fig
