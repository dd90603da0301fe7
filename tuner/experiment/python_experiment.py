"""An experiment built in Python, checked as a file would be: each mistake an ExperimentError naming the field."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping

from tuner.compile.options import OptionError, check_nvcc_options
from tuner.errors import ExperimentError, did_you_mean
from tuner.experiment.family_trial import family_mistake
from tuner.experiment.problem_checks import problem_refusal
from tuner.experiment.run_settings import COUNTERS, SEARCH
from tuner.experiment.schema import STRATEGIES, Experiment, name_refusal, pair_refusal
from tuner.kernels.discovery import families, use_family_dirs
from tuner.kernels.family import Family
from tuner.results.objectives import PAIR_SAMPLERS, ObjectiveError, is_pair, parse_objective
from tuner.space.entry_space import ENTRY_REFUSALS, EntrySpace, KernelSpec, satisfiable_space, size_refusal
from tuner.space.restriction_rules import restriction_refusal

BUILT_IN_PYTHON = "<Experiment built in Python>"


def check_name(experiment: Experiment) -> None:
    """ExperimentError where the experiment's name cannot name its output folder (also for an experiment read from
    a file and then given another name in Python)."""
    file = experiment.path or BUILT_IN_PYTHON
    if not isinstance(experiment.name, str) or not experiment.name.strip():
        raise ExperimentError(file, "name", "an experiment needs a name (non-empty text)")
    refusal = name_refusal(experiment.name)
    if refusal:
        raise ExperimentError(file, "name", refusal)


def check_experiment(experiment: Experiment) -> Experiment:
    """Validate an experiment built in Python as a file would be: ExperimentError naming the field for an unknown
    family, parameter or dtype, an empty or unsatisfiable kernel entry, an unknown strategy, or a search setting
    or measure.counters that breaks its rule (tuner.experiment.run_settings). The experiment checked, with the
    space of each kernel entry built."""
    file = experiment.path or BUILT_IN_PYTHON

    def fail(field_: str, message: str) -> ExperimentError:
        return ExperimentError(file, field_, message)

    check_name(experiment)
    try:
        check_nvcc_options(experiment.compile.options)
    except OptionError as exc:
        raise fail(f"compile.options[{exc.index}]", str(exc)) from None
    if not experiment.problems:
        raise fail("problems", "list at least one problem")
    if not experiment.kernels:
        raise fail("kernels", "list at least one kernel entry")
    use_family_dirs([os.fspath(d) for d in experiment.template_dirs])
    known = families()
    used = [known[spec.family] for spec in experiment.kernels if spec.family in known]
    unrunnable = problem_refusal(experiment.problems, used)
    if unrunnable is not None:
        raise fail(*unrunnable)
    spaces = tuple(_check_entry(i, spec, known, fail) for i, spec in enumerate(experiment.kernels))
    for i, space in enumerate(spaces):
        mistake = family_mistake(space, experiment.problems)
        if mistake is not None:
            raise fail(f"kernels[{i}].template", mistake)
    if experiment.search.strategy not in STRATEGIES:
        raise fail("search.strategy", f"unknown strategy '{experiment.search.strategy}'"
                                      f"{did_you_mean(experiment.search.strategy, STRATEGIES)}; choose one of "
                                      f"{', '.join(STRATEGIES)}")
    for name, rule in SEARCH.items():
        value = getattr(experiment.search, name)
        if not (value is None and name == "timeout_s") and not rule.accepts(value):
            raise fail(f"search.{name}", f"must be {rule.expected}, not {value!r}{rule.remark(value)}")
    if not COUNTERS.accepts(experiment.measure.counters):
        raise fail("measure.counters", f"must be {COUNTERS.expected}, not {experiment.measure.counters!r}")
    try:
        objective = parse_objective(experiment.search.objective)
    except ObjectiveError as exc:
        raise fail("search.objective", str(exc)) from None
    if is_pair(objective) and experiment.search.strategy not in PAIR_SAMPLERS:
        raise fail("search.strategy", pair_refusal(experiment.search.strategy))
    return dataclasses.replace(experiment, spaces=spaces)


def _check_entry(i: int, spec: KernelSpec, known: Mapping[str, Family],
                 fail: Callable[[str, str], ExperimentError]) -> EntrySpace:
    """Kernel entry ``i``: its family, parameters, values, dtypes, size, restrictions and a valid configuration;
    its space."""
    if spec.family not in known:
        raise fail(f"kernels[{i}].template", f"unknown template '{spec.family}'"
                                             f"{did_you_mean(spec.family, known)}; known templates: "
                                             f"{', '.join(known)}")
    family = known[spec.family]
    for name, values in spec.values.items():
        if name not in family.parameter_names:
            raise fail(f"kernels[{i}].parameters.{name}", f"'{spec.family}' has no parameter '{name}'"
                                                          f"{did_you_mean(name, family.parameter_names)}; its "
                                                          f"parameters: {', '.join(family.parameter_names)}")
        if not values:
            raise fail(f"kernels[{i}].parameters.{name}", "list at least one value")
        parameter = family.parameters[family.parameter_names.index(name)]
        for j, value in enumerate(values):
            refusal = parameter.refusal(value) if family.recording is None else None
            if refusal:
                raise fail(f"kernels[{i}].parameters.{name}[{j}]", refusal)
    missing = [n for n in family.parameter_names if n not in spec.values]
    if missing:
        raise fail(f"kernels[{i}].parameters", f"no values for {', '.join(missing)}")
    for dtype in spec.dtypes:
        if dtype not in family.dtypes:
            raise fail(f"kernels[{i}].parameters.dtype", f"'{spec.family}' does not support '{dtype}'; it "
                                                         f"supports {', '.join(family.dtypes)}")
    refusal = size_refusal(spec.values, spec.dtypes)
    if refusal is not None:
        raise fail(f"kernels[{i}].parameters", refusal)
    for j, text in enumerate(spec.restrictions):
        refusal = restriction_refusal(text, family.parameter_names)
        if refusal is not None:
            raise fail(f"kernels[{i}].restrictions[{j}]", refusal)
    try:
        return satisfiable_space(spec, family)
    except ENTRY_REFUSALS as exc:
        raise fail(f"kernels[{i}].parameters", str(exc)) from None
