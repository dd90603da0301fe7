"""What one study (``<experiment>/<MxNxK>/<dtype>``) searches: the families listing its dtype and their valid
configurations as a :class:`~tuner.strategies.domain.Domain` (one candidate each, in file order; axes ``family``
where there are several, then ``<family>.<PARAM>``), seen two ways. The index view, what strategies and Optuna's
samplers search (:mod:`tuner.strategies.index_view`): every axis in every point, numbers as positions in their
sorted list. The stored view, what the storage and Optuna's tools show: the family and its own parameters with
their values (study user attribute ``params``: ``values``). The listed values are kept in ``axes``; a study
opened with other values is refused."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution

from tuner.config import Config, ParamValue, Problem
from tuner.kernels.discovery import get_family
from tuner.kernels.family import Family
from tuner.kernels.targets import target
from tuner.optuna_attrs import RECORD_ATTR
from tuner.results.objectives import study_objective
from tuner.results.record import Record
from tuner.search.energy_values import reported
from tuner.settings import CompileSettings
from tuner.space.configs import ConfigSequence, Rejections, union
from tuner.space.entry_space import entry_spaces, violations
from tuner.strategies.domain import Domain, ordered_values

if TYPE_CHECKING:
    from tuner.experiment.schema import Experiment

FAMILY_PARAM = "family"
VALUES = "values"
"""How a study's trials hold their parameters (study user attribute ``params``): the values themselves."""


@dataclass(frozen=True)
class Axis:
    name: str
    family: str | None
    """The family whose parameter it is (None for the family axis)."""
    parameter: str
    values: tuple[ParamValue, ...]
    """In increasing order where the axis is ordered, else as listed."""
    ordered: bool

    def distribution(self) -> BaseDistribution:
        """The axis in the index view."""
        if self.ordered:
            return IntDistribution(0, len(self.values) - 1)
        return CategoricalDistribution(list(self.values))

    def stored_distribution(self) -> BaseDistribution:
        """The axis in the stored view: over the values themselves."""
        if not self.ordered:
            return CategoricalDistribution(list(self.values))
        if all(isinstance(v, int) for v in self.values):
            return IntDistribution(int(self.values[0]), int(self.values[-1]))
        return FloatDistribution(float(self.values[0]), float(self.values[-1]))

    def value_position(self, value: Any) -> int | None:
        """The position of a stored value (a number equal to a listed one, or a listed text or truth value)."""
        if self.ordered:
            return next((i for i, v in enumerate(self.values) if v == value), None) if _is_number(value) else None
        return self.position(value)

    def optuna_value(self, index: int) -> Any:
        return index if self.ordered else self.values[index]

    def position(self, value: Any) -> int | None:
        """The position of a parameter value in ``values`` (None when it is not listed; 1 is not True)."""
        return next((i for i, v in enumerate(self.values) if v == value and type(v) is type(value)), None)

    def index_of(self, value: Any) -> int | None:
        """The position a trial's (Optuna) parameter value stands for (None when it names no listed value)."""
        if self.ordered:
            ok = isinstance(value, int | np.integer) and not isinstance(value, bool) and 0 <= value < len(self.values)
            return int(value) if ok else None
        return self.position(value)


@dataclass(frozen=True, eq=False)
class StudySpace:
    """The configurations one study searches: a problem, a dtype and the families listing that dtype."""

    experiment: str
    problem: Problem
    dtype: str
    choices: dict[str, dict[str, tuple[ParamValue, ...]]]
    """family -> parameter -> values, in file order."""
    valid: ConfigSequence
    """Every valid configuration, in enumeration (file) order: the candidates of the domain."""
    rejected: Mapping[str, str] = field(default_factory=dict)
    """Config key -> the static rules it breaks, for every listed but invalid combination."""
    arch: str = CompileSettings().arch
    """The target whose resource limits the configurations respect."""

    @property
    def baseline(self) -> str | None:
        """The vendor routine all the study's families compare with (``gemm``), or None."""
        kinds = {self.families[family].baseline for family in self.choices}
        return kinds.pop() if len(kinds) == 1 else None

    @property
    def name(self) -> str:
        return f"{self.experiment}/{self.problem.label}/{self.dtype}"

    @cached_property
    def unit(self) -> str:
        """The unit of the speed a trial reports: GFLOP/s, or GB/s where the study's kernels do no arithmetic."""
        if len(self.valid) == 0:
            return "GFLOP/s"
        return "GFLOP/s" if self.families[self.valid[0].family].flops(self.problem) else "GB/s"

    @cached_property
    def families(self) -> dict[str, Family]:
        """The study's families, as its kernel entries' spaces hold them."""
        return {entry.family.name: entry.family for entry, _ in self.valid.segments}

    @property
    def size(self) -> int:
        """Combinations listed by the experiment, valid or not."""
        return len(self.valid) + len(self.rejected)

    # --- the domain ---------------------------------------------------------------------------------------

    @cached_property
    def axes(self) -> tuple[Axis, ...]:
        axes = []
        if len(self.choices) > 1:
            axes.append(Axis(FAMILY_PARAM, None, FAMILY_PARAM, tuple(self.choices), False))
        for family, parameters in self.choices.items():
            for name, values in parameters.items():
                ordered = ordered_values(sorted(values)) if all(_is_number(v) for v in values) else False
                listed = tuple(sorted(values)) if ordered else values
                axes.append(Axis(f"{family}.{name}", family, name, listed, ordered))
        return tuple(axes)

    @cached_property
    def domain(self) -> Domain:
        """The valid configurations as rows of value indices (candidate i is ``valid[i]``)."""
        axes = self.axes
        position = {axis.name: j for j, axis in enumerate(axes)}
        blocks = []
        for entry, rows in self.valid.segments:
            family = entry.family.name
            block = np.zeros((len(rows), len(axes)), dtype=np.int64)
            digits = np.unravel_index(rows, (len(entry.dtypes), *(len(v) for v in entry.values)))
            if FAMILY_PARAM in position:
                block[:, position[FAMILY_PARAM]] = list(self.choices).index(family)
            for i, (name, values) in enumerate(zip(entry.names, entry.values, strict=True)):
                axis = axes[position[f"{family}.{name}"]]
                to_axis = np.array([axis.position(v) for v in values], dtype=np.int64)
                block[:, position[axis.name]] = to_axis[digits[i + 1]]
            blocks.append(block)
        indices = np.concatenate(blocks) if blocks else np.zeros((0, len(axes)), dtype=np.int64)
        return Domain(tuple(a.name for a in axes), np.array([len(a.values) for a in axes]),
                      np.array([a.ordered for a in axes]), indices, tuple(a.values for a in axes))

    def config(self, candidate: int) -> Config:
        return self.valid[candidate]

    def candidate(self, config: Config) -> int:
        """The candidate of a configuration, -1 when it is not one of the study's valid configurations."""
        point = self._point_of_config(config)
        if point is None:
            return -1
        return int(self.domain.candidates_of(point[None, :])[0])

    def _point_of_config(self, config: Config) -> np.ndarray | None:
        if config.problem != self.problem or config.dtype != self.dtype or config.family not in self.choices:
            return None
        listed = self.choices[config.family]
        params = config.param_dict
        if set(params) != set(listed):
            return None
        point = np.zeros(len(self.axes), dtype=np.int64)
        for j, axis in enumerate(self.axes):
            index = axis.position(config.family) if axis.family is None else (
                axis.position(params[axis.parameter]) if axis.family == config.family else 0)
            if index is None:
                return None
            point[j] = index
        return point

    # --- the index view (the strategies', and Optuna's samplers') ----------------------------------------

    def index_distributions(self) -> dict[str, BaseDistribution]:
        return {axis.name: axis.distribution() for axis in self.axes}

    def index_params(self, point: np.ndarray) -> dict[str, Any]:
        return {axis.name: axis.optuna_value(int(index)) for axis, index in zip(self.axes, point, strict=True)}

    def index_point(self, params: Mapping[str, Any]) -> np.ndarray | None:
        """The value indices index-view parameters stand for; None where one is missing or names no listed value."""
        point = np.zeros(len(self.axes))
        for j, axis in enumerate(self.axes):
            index = axis.index_of(params[axis.name]) if axis.name in params else None
            if index is None:
                return None
            point[j] = index
        return point

    # --- the stored view (a trial's parameters in the storage) -------------------------------------------

    def distributions(self) -> dict[str, BaseDistribution]:
        """The distribution of every parameter a trial of the study may hold (each trial holds its family's)."""
        return {axis.name: axis.stored_distribution() for axis in self.axes}

    def distributions_of(self, params: Mapping[str, Any]) -> dict[str, BaseDistribution]:
        """The distributions of the parameters a trial holds."""
        every = self.distributions()
        return {name: every[name] for name in params}

    def params_of(self, candidate: int) -> dict[str, Any]:
        """The stored parameters of a candidate."""
        return self._stored_at(self.domain.index_row(candidate))

    def params(self, config: Config) -> dict[str, Any] | None:
        """The stored parameters of any configuration the experiment lists (valid or not), None for another."""
        point = self._point_of_config(config)
        return None if point is None else self._stored_at(point)

    def _stored_at(self, point: np.ndarray) -> dict[str, Any]:
        family = self._family_at(point)
        return {axis.name: axis.values[int(index)] for axis, index in zip(self.axes, point, strict=True)
                if axis.family in (None, family)}

    def _family_at(self, point: np.ndarray) -> str:
        return next(iter(self.choices)) if len(self.choices) == 1 else str(self.axes[0].values[int(point[0])])

    def point_of(self, params: Mapping[str, Any]) -> np.ndarray | None:
        """The value indices stored parameters stand for (the family's own; another family's are not looked at);
        None where one is missing or names no listed value."""
        if len(self.choices) == 1:
            family: Any = next(iter(self.choices))
        else:
            family = params.get(FAMILY_PARAM)
        point = np.zeros(len(self.axes))
        for j, axis in enumerate(self.axes):
            if axis.family is None:
                index = axis.position(family)
            elif axis.family != family:
                continue
            else:
                index = axis.value_position(params[axis.name]) if axis.name in params else None
            if index is None:
                return None
            point[j] = index
        return point

    def config_of(self, params: Mapping[str, Any]) -> Config | None:
        """The configuration a trial's stored parameters describe; None when they name none the experiment lists."""
        point = self.point_of(params)
        if point is None:
            return None
        indices = point.astype(np.int64)
        family = self._family_at(indices)
        values = {axis.parameter: axis.values[index] for axis, index in zip(self.axes, indices, strict=True)
                  if axis.family == family}
        return Config.make(self.problem, family, self.dtype, values)

    def rejection(self, config: Config) -> str | None:
        """Why the configuration is statically invalid, or None when it may be measured."""
        if config.key in self.rejected:
            return self.rejected[config.key]
        # a configuration of a family the study does not list (a row of another table) names its own family
        family = self.families[config.family] if config.family in self.families else get_family(config.family)
        broken = violations(family, config.param_dict, config.dtype, target(self.arch))
        if broken:
            return "; ".join(broken)
        if config not in self.valid:
            return "this combination of values is not listed by any kernels entry of the experiment"
        return None

    def axes_attr(self) -> dict[str, list[ParamValue]]:
        return {axis.name: list(axis.values) for axis in self.axes}

    def add_recorded(self, study: optuna.Study, record: Record) -> bool:
        """Put a recorded evaluation into the study as a completed trial; False when its configuration is not
        one of the study's candidates (the experiment no longer lists it, or its static rules reject it: a row
        of an earlier search over the whole product), so that the study's budget counts only candidates."""
        params = self.params(record.config)
        if params is None or self.candidate(record.config) < 0:
            return False
        study.add_trial(optuna.trial.create_trial(
            params=params, distributions=self.distributions_of(params),
            values=reported(study_objective(study.user_attrs), record.config, record.measurement),
            user_attrs={RECORD_ATTR: record.attrs()}))
        return True

    def within(self, configs: Iterable[Config]) -> StudySpace:
        """The same study searching only those of its valid configurations that are among ``configs``."""
        keep = np.zeros(len(self.valid), dtype=bool)
        for config in configs:
            candidate = self.candidate(config)
            if candidate >= 0:
                keep[candidate] = True
        segments, start = [], 0
        for entry, rows in self.valid.segments:
            segments.append((entry, rows[keep[start:start + len(rows)]]))
            start += len(rows)
        return dataclasses.replace(self, valid=ConfigSequence(self.problem, segments))


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def study_spaces(experiment: Experiment, answerable: Sequence[Config] | None = None) -> list[StudySpace]:
    """One space per problem and dtype, in file order; with ``answerable`` (the configurations a recording holds),
    each searches only those."""
    spaces = []
    built = entry_spaces(experiment)
    for problem in experiment.problems:
        for dtype in experiment.dtypes:
            choices: dict[str, dict[str, tuple[ParamValue, ...]]] = {}
            listing = [(spec, space) for spec, space in zip(experiment.kernels, built, strict=True)
                       if dtype in spec.dtypes]
            for spec, _ in listing:
                merged = choices.setdefault(spec.family, {})
                for name, values in spec.values.items():
                    merged[name] = tuple(dict.fromkeys((*merged.get(name, ()), *values)))
            entries = [space for _, space in listing]
            valid = union(problem, entries, dtype)
            rejected = Rejections(union(problem, entries, dtype, valid=False))
            space = StudySpace(experiment.name, problem, dtype, choices, valid, rejected, experiment.compile.arch)
            spaces.append(space if answerable is None else space.within(answerable))
    return spaces
