"""Optuna parameter importances per study (fANOVA: the variance of a random-forest fit that each parameter
explains), read from the run folder's Optuna storage (study.db). fANOVA rather than Optuna's default PED-ANOVA,
which compares the top decile with the rest and so rests on one or two trials in a kernel study of a few dozen.

Only trials that hold an evaluation count (tuner.results.is_evaluation: not the repeated suggestions). A study
that searches several families has a conditional space (naive.BLOCK_X exists only in naive trials), so
importances are computed per set of parameters the trials share, e.g. once for the naive trials and once for
the tiled ones, plus once over the parameters common to all trials (such as the family) when those vary.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import optuna
import sqlalchemy.exc
from matplotlib.figure import Figure
from optuna.importance import FanovaImportanceEvaluator, get_param_importances
from optuna.trial import FrozenTrial, TrialState

from tuner.results import is_evaluation
from tuner.settings import STORAGE_FILE

MIN_TRIALS = 5
"""Completed trials a set needs before its importances mean anything."""


@dataclass(frozen=True)
class Importances:
    study: str
    subset: str
    """Which trials: e.g. ``family naive``, or ``all completed trials``."""
    trials: int
    values: dict[str, float]
    """Parameter -> importance (fractions summing to 1), most important first."""


def _varying(trials: list[FrozenTrial], names: set[str]) -> list[str]:
    return sorted(n for n in names if len({repr(t.params[n]) for t in trials}) > 1)


def _subset_label(trials: list[FrozenTrial], names: frozenset[str], only_subset: bool) -> str:
    for source in ("params", "user_attrs"):
        families = {getattr(t, source).get("family") for t in trials}
        if len(families) == 1 and None not in families:
            return f"family {families.pop()}"
    if only_subset:
        return "all completed trials"
    return "trials with " + ", ".join(sorted(names)) if names else "trials without parameters"


def _evaluate(study_name: str, subset: str, trials: list[FrozenTrial], names: list[str],
              directions: list[optuna.study.StudyDirection], notes: list[str]) -> Importances | None:
    if len(names) < 2:
        varied = f"only {names[0]} varied" if names else "no parameter took more than one value"
        notes.append(f"study {study_name}, {subset}: {varied}, so there is nothing to rank")
        return None
    if len(trials) < MIN_TRIALS:
        notes.append(f"study {study_name}, {subset}: {len(trials)} completed trial(s); importances need at least "
                     f"{MIN_TRIALS}")
        return None
    sub = optuna.create_study(directions=directions)
    sub.add_trials(trials)
    try:
        values = get_param_importances(sub, evaluator=FanovaImportanceEvaluator(seed=0), params=names)
    except (ValueError, RuntimeError) as exc:
        notes.append(f"study {study_name}, {subset}: importances could not be computed ({exc})")
        return None
    ordered = dict(sorted(values.items(), key=lambda item: -item[1]))
    return Importances(study_name, subset, len(trials), ordered)


def _study_importances(study: optuna.study.Study, notes: list[str]) -> list[Importances]:
    if len(study.directions) > 1:
        notes.append(f"study {study.study_name}: several objectives; importances are left out")
        return []
    completed = [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                 if is_evaluation(t) and t.value is not None and math.isfinite(t.value)]
    by_names: dict[frozenset[str], list[FrozenTrial]] = defaultdict(list)
    for trial in completed:
        by_names[frozenset(trial.params)].append(trial)
    found = []
    if len(by_names) > 1:
        common = set.intersection(*(set(names) for names in by_names))
        common_varying = _varying(completed, common)
        if len(common_varying) > 1:
            entry = _evaluate(study.study_name, "all completed trials", completed, common_varying, study.directions,
                              notes)
            found += [entry] if entry else []
    for names, trials in sorted(by_names.items(), key=lambda item: sorted(item[0])):
        subset = _subset_label(trials, names, len(by_names) == 1)
        entry = _evaluate(study.study_name, subset, trials, _varying(trials, set(names)), study.directions, notes)
        found += [entry] if entry else []
    if not completed:
        notes.append(f"study {study.study_name}: no completed trials")
    return found


def param_importances(run_dir: str | Path, studies: list[str] | None = None) -> tuple[list[Importances], list[str]]:
    """Importances of the studies in the folder's Optuna storage (only those named in ``studies`` when given,
    e.g. the studies of the results table), and notes on what was skipped and why."""
    path = Path(run_dir) / STORAGE_FILE
    if not path.is_file():
        return [], [f"no Optuna storage ({STORAGE_FILE}) in the run folder: parameter importances are left out"]
    notes: list[str] = []
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        storage = optuna.storages.RDBStorage(f"sqlite:///{path}", skip_table_creation=True)
        names = [n for n in optuna.get_all_study_names(storage) if studies is None or n in studies]
        loaded = [optuna.load_study(study_name=name, storage=storage) for name in sorted(names)]
    except (RuntimeError, ValueError, KeyError, sqlalchemy.exc.SQLAlchemyError) as exc:
        return [], [f"{path} could not be read as an Optuna storage ({exc}): parameter importances are left out"]
    found = []
    for study in loaded:
        found += _study_importances(study, notes)
    if not loaded:
        notes.append(f"{path} holds no study: parameter importances are left out")
    return found, notes


def importances_figure(importances: list[Importances]) -> Figure:
    """One horizontal bar chart per study and subset of trials."""
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
        ax.set_title(f"{entry.study}\n{entry.subset} ({entry.trials} trials)", fontsize=9)
        ax.set_xlabel("importance (fANOVA; they sum to 1)")
        ax.grid(True, axis="x", alpha=0.3)
    for ax in axes[len(importances):]:
        ax.set_axis_off()
    fig.suptitle("Optuna parameter importances", fontsize=12)
    return fig
