"""Opening a study: the strategy that searches it (a name, an Optuna sampler or a strategy factory) and its
sampler, the checks that keep a stored study's objective, parameters and strategy, the trials a dead worker
measured but did not tell, and a trial asked with its configuration's parameters."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import Trial, TrialState

from tuner.errors import Naming, TunerError, did_you_mean, option_name
from tuner.measure.measurement import Measurement
from tuner.optuna_attrs import (
    AXES_ATTR,
    DTYPE_ATTR,
    EXPERIMENT_ATTR,
    FIXED_PARAMS_ATTR,
    FORMER_STRATEGY_ATTR,
    OBJECTIVE_ATTR,
    PROBLEM_ATTR,
    RECORD_ATTR,
    STORED_ATTR,
    STRATEGY_ATTR,
    WORKER_ATTR,
)
from tuner.results.objectives import DEFAULT, Objectives, label, metric_names, study_objective
from tuner.search.claims import Liveness, SoleWorker
from tuner.search.energy_values import reported
from tuner.search.study_space import VALUES, StudySpace
from tuner.strategies import catalog
from tuner.strategies.optuna_samplers import sampler_maker
from tuner.strategies.protocol import StrategyFactory
from tuner.strategies.sampler import DomainSampler, OptunaProposer, Proposer, StrategyProposer
from tuner.strategies.user_samplers import GivenSamplerProposer, copies_of, pristine_copy

Choice = str | optuna.samplers.BaseSampler | StrategyFactory
"""A strategy: a name (:mod:`tuner.strategies.catalog`), an Optuna sampler, or a factory of a Strategy."""


def strategy_name(strategy: Choice) -> str:
    """How a strategy is named in the results table (the ``strategy`` column)."""
    if isinstance(strategy, str):
        return strategy
    named = getattr(strategy, "name", None)
    if isinstance(named, str) and not isinstance(strategy, optuna.samplers.BaseSampler):
        return named
    return type(strategy).__name__ if isinstance(strategy, optuna.samplers.BaseSampler) else \
        getattr(strategy, "__name__", type(strategy).__name__)


def check_strategy(strategy: Choice, name: Naming = option_name) -> None:
    """TunerError for a name that names no strategy, a strategy whose package is missing, or a sampler object
    that cannot be copied for each study and trial; ``name``: how the errors name the run's settings
    (:mod:`tuner.errors`)."""
    if isinstance(strategy, str):
        if strategy not in catalog.NAMES:
            raise TunerError(f"unknown strategy '{strategy}'{did_you_mean(strategy, catalog.NAMES)}; choose one of "
                             f"{', '.join(catalog.NAMES)}")
        if strategy in catalog.OPTUNA:
            sampler_maker(strategy, name)
    elif isinstance(strategy, optuna.samplers.BaseSampler):
        pristine_copy(strategy)
    elif not callable(strategy):
        raise TunerError(f"a strategy is a name ({', '.join(catalog.NAMES)}), an Optuna sampler or a strategy "
                         f"factory (a callable taking a Domain and a numpy Generator), not {strategy!r}")


def make_sampler(strategy: Choice, space: StudySpace, seed: int) -> DomainSampler:
    """The study's sampler: proposals of the chosen strategy, each a free valid configuration."""
    name = strategy_name(strategy)
    proposer: Proposer
    if isinstance(strategy, optuna.samplers.BaseSampler):
        proposer = GivenSamplerProposer(name, copies_of(strategy), space, seed, space.name)
    elif isinstance(strategy, str) and strategy in catalog.OPTUNA:
        proposer = OptunaProposer(name, sampler_maker(strategy), space, seed, space.name)
    else:
        factory = catalog.strategy_factory(strategy) if isinstance(strategy, str) else strategy
        proposer = StrategyProposer(name, factory, space, seed, space.name)
    return DomainSampler(space, proposer, seed, space.name)


def open_study(storage: optuna.storages.BaseStorage, space: StudySpace, strategy: Choice, seed: int,
               liveness: Liveness | None = None, objective: Objectives = DEFAULT) -> optuna.Study:
    """Create the study or continue it: with the chosen strategy's sampler, and every trial a dead worker measured
    but did not finish completed from its record. ``objective``: one value per name, each maximised."""
    refuse_earlier_format(storage, space.name)
    study = optuna.create_study(storage=storage, study_name=space.name, directions=["maximize"] * len(objective),
                                load_if_exists=True)
    attrs = study.user_attrs
    if (OBJECTIVE_ATTR in attrs or AXES_ATTR in attrs) and study_objective(attrs) != objective:
        raise TunerError(f"study '{space.name}' in the Optuna storage searched for {label(study_objective(attrs))}, "
                         f"not {label(objective)}; run into a new output folder or storage, or search for "
                         f"{label(study_objective(attrs))} again")
    if AXES_ATTR not in attrs:
        p = space.problem
        attrs = {EXPERIMENT_ATTR: space.experiment, PROBLEM_ATTR: p.label, **p.as_dict(), DTYPE_ATTR: space.dtype,
                 OBJECTIVE_ATTR: list(objective), STRATEGY_ATTR: strategy_name(strategy), STORED_ATTR: VALUES,
                 AXES_ATTR: space.axes_attr()}
        for key, value in attrs.items():
            study.set_user_attr(key, value)
        attrs = study.user_attrs
    elif attrs[AXES_ATTR] != space.axes_attr():
        raise TunerError(f"study '{space.name}' in the Optuna storage was created with other parameter values than "
                         f"the experiment now lists; restore the values, or run into a new output folder or storage")
    names = metric_names(objective, space.unit)
    if study.metric_names != names:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names(names)
    complete_measured(study, space, liveness or SoleWorker())
    study.sampler = make_sampler(strategy, space, seed)
    return study


def refuse_earlier_format(storage: optuna.storages.BaseStorage, name: str) -> None:
    """TunerError where the study ``name`` exists as an earlier version wrote it; nothing is written."""
    try:
        study_id = storage.get_study_id_from_name(name)
    except KeyError:
        return
    trials = storage.get_all_trials(study_id, deepcopy=False)
    changed = earlier_format(storage.get_study_user_attrs(study_id), bool(trials))
    if changed:
        raise TunerError(f"study '{name}' in the Optuna storage was written by an earlier version of the tuner: "
                         f"{changed}; it is left as it was: run into a new output folder or storage")


def earlier_format(attrs: Mapping[str, Any], has_trials: bool) -> str | None:
    """What changed since an earlier version wrote a study with these user attributes; None for a current one."""
    if AXES_ATTR not in attrs:
        return "its trials hold their parameters in a representation since replaced" if has_trials else None
    if STORED_ATTR not in attrs:
        return "its trials hold each parameter's position in its list, where they now hold the values themselves"
    if FORMER_STRATEGY_ATTR in attrs:
        return f"it names its strategy '{FORMER_STRATEGY_ATTR}', which is called '{STRATEGY_ATTR}' now"
    return None


def check_same_strategy(storage: optuna.storages.BaseStorage, name: str, strategy: Choice,
                        called: Naming = option_name) -> None:
    """TunerError where the study ``name`` exists and was searched with another strategy than ``strategy``; nothing
    is written. A run into a
    folder's own storage calls it: continuing a study with another strategy would mix the two, so that the results
    would say nothing about either (workers sharing a storage may each bring their own strategy; each row names
    its strategy). ``called``: how the error names the run's settings (:mod:`tuner.errors`)."""
    try:
        study_id = storage.get_study_id_from_name(name)
    except KeyError:
        return
    searched = storage.get_study_user_attrs(study_id).get(STRATEGY_ATTR)
    chosen = strategy_name(strategy)
    if searched is not None and searched != chosen:
        raise TunerError(f"study '{name}' in the Optuna storage was searched with the strategy '{searched}', not "
                         f"'{chosen}': continuing it with another strategy would mix the two, so that the results "
                         f"say nothing about either; run with {called('strategy', str(searched))} to continue it, or "
                         f"into a new output folder ({called('out')}) or storage to search with '{chosen}'")


def ask_configuration(study: optuna.Study, space: StudySpace) -> Trial:
    """A new trial of the study (the first of its queue, if any) with its configuration's parameters set."""
    trial = study.ask()
    suggest_configuration(trial, space)
    return trial


def suggest_configuration(trial: Trial, space: StudySpace) -> None:
    """Set a trial's parameters: those it was queued with, else its sampler's proposal (each trial holds its
    family's parameters only, so the search space is not fixed in advance)."""
    frozen = trial.study._storage.get_trial(trial._trial_id)
    queued = dict(frozen.system_attrs.get(FIXED_PARAMS_ATTR) or {})
    params = queued if space.point_of(queued) is not None else trial.relative_params
    distributions = space.distributions()
    for name in params:
        _suggest(trial, name, distributions[name])


def _suggest(trial: Trial, name: str, distribution: BaseDistribution) -> None:
    """``trial.suggest_*`` for the distribution's kind (the trial's fixed or relative value where it has one)."""
    if isinstance(distribution, CategoricalDistribution):
        trial.suggest_categorical(name, distribution.choices)
    elif isinstance(distribution, IntDistribution):
        trial.suggest_int(name, distribution.low, distribution.high, step=distribution.step, log=distribution.log)
    elif isinstance(distribution, FloatDistribution):
        trial.suggest_float(name, distribution.low, distribution.high, step=distribution.step, log=distribution.log)
    else:
        raise TypeError(f"no suggestion for a {type(distribution).__name__}")


def complete_measured(study: optuna.Study, space: StudySpace, liveness: Liveness) -> None:
    """Tell every RUNNING trial of a dead worker that holds its measurement (the worker died between recording
    and telling it)."""
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        record = trial.user_attrs.get(RECORD_ATTR)
        config = space.config_of(trial.params)
        if record is None or config is None or liveness.alive(trial.user_attrs.get(WORKER_ATTR)):
            continue
        try:
            study.tell(trial.number, reported(study_objective(study.user_attrs), config,
                                              Measurement.from_dict(record["measurement"])))
        except (RuntimeError, ValueError):  # told meanwhile by another worker
            continue
