"""Experiment files: the YAML schema, its validation and the error messages that name file and field."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from tuner import input_file
from tuner.compile.options import OptionError, check_nvcc_options
from tuner.config import DTYPES, Problem
from tuner.errors import ExperimentError, TunerError, did_you_mean
from tuner.experiment.family_trial import family_mistake
from tuner.experiment.problem_checks import index_range_refusal
from tuner.experiment.run_settings import COUNTERS, SEED, TIMEOUT, TRANSFER, TRIALS
from tuner.experiment.validator import _describe, _Validator
from tuner.experiment.yaml_document import FieldPath, read_document
from tuner.kernels.discovery import families, use_family_dirs, use_recorded_family
from tuner.kernels.family import Family, Parameter
from tuner.kernels.model import MachineModel
from tuner.kernels.targets import target
from tuner.names.file_names import family_name_refusal
from tuner.recorded.family import recorded_family, recorded_problem_refusal, recording_name
from tuner.recorded.load import load_recorded_once
from tuner.results.objectives import PAIR_SAMPLER, PAIR_SAMPLERS, ObjectiveError, is_pair, parse_objective
from tuner.settings import CompileSettings, MeasureSettings, SearchSettings
from tuner.space.entry_space import (
    ENTRY_REFUSALS,
    EntrySpace,
    KernelSpec,
    entry_space,
    satisfiable_space,
    size_refusal,
)
from tuner.space.restriction_rules import restriction_refusal
from tuner.strategies.catalog import NAMES

STRATEGIES = NAMES
RENAMED = {"sampler": "strategy", "flush_l2": "cold_caches"}
"""Settings' keys by their former names, refused with the name they have now."""
NAME_BYTES = 255  # the longest file name that common file systems take
MAX_EXPERIMENT_BYTES = 16 * 2**20


@dataclass(frozen=True)
class Experiment:
    name: str
    problems: tuple[Problem, ...]
    kernels: tuple[KernelSpec, ...]
    machine_models: tuple[MachineModel, ...] = ()
    search: SearchSettings = field(default_factory=SearchSettings)
    measure: MeasureSettings = field(default_factory=MeasureSettings)
    compile: CompileSettings = field(default_factory=CompileSettings)
    description: str = ""
    path: str | None = None
    template_dirs: tuple[Path, ...] = ()
    """Folders of kernel families beside the package's own (resolved against the experiment file's folder)."""
    spaces: tuple[EntrySpace, ...] = field(default=(), compare=False, repr=False)
    """The space of each kernel entry, as the experiment's check built it (empty before the check); the run
    searches these (:func:`tuner.space.entry_space.entry_spaces`)."""

    @property
    def dtypes(self) -> tuple[str, ...]:
        seen = dict.fromkeys(d for k in self.kernels for d in k.dtypes)
        return tuple(seen)


def _problem(v: _Validator, value: Any, path: FieldPath, dims: tuple[str, ...]) -> Problem:
    m = v.mapping(value, path, dims, ())
    return Problem(**{d: v.integer(m[d], (*path, d)) for d in dims})


def _check_problem(v: _Validator, problem: Problem, family: Family, path: FieldPath) -> None:
    """The problem within the family's 32-bit index range and, for a recorded family, the problem recorded."""
    refusal = index_range_refusal(problem, family) or recorded_problem_refusal(family, problem)
    if refusal is not None:
        raise v.r.error(path, refusal)


def _kernel(v: _Validator, value: Any, path: FieldPath, arch: str, file: str, known: dict[str, Family],
            recordings: dict[str, Path]) -> tuple[KernelSpec, EntrySpace]:
    """A kernel entry and its space, checked against its family (one of ``known``, the families of this
    reading)."""
    if isinstance(value, dict) and "recorded" in value:
        return _recorded_kernel(v, value, path, arch, file, known, recordings)
    if isinstance(value, dict) and "template" not in value:
        raise v.r.error(path, "missing required key 'template' (a kernel family) or 'recorded' (a brute-force "
                              "recording: a Kernel Tuner cache file or T4 results file)")
    m = v.mapping(value, path, ("template",), ("parameters", "restrictions"))
    name = v.text(m["template"], (*path, "template"))
    if name not in known:
        listed = sorted(known)
        raise v.r.error((*path, "template"), f"unknown template '{name}'{did_you_mean(name, listed)}; known "
                                             f"templates: {', '.join(listed)} "
                                             f"(more with template_dirs: or --templates DIR)")
    family = known[name]
    ppath = (*path, "parameters")
    given = m.get("parameters", {})
    names = family.parameter_names
    given = v.mapping(given, ppath, (), (*names, "dtype"))
    values: dict[str, tuple] = {}
    for param in family.parameters:
        if param.name not in given:
            values[param.name] = param.default
            continue
        vpath = (*ppath, param.name)
        values[param.name] = v.values(given[param.name], vpath, partial(_value, v, param=param))
    dtypes = v.values(given.get("dtype", [family.dtypes[0]]), (*ppath, "dtype"),
                      lambda x, p: _dtype(v, x, p, family.dtypes))
    refusal = size_refusal(values, dtypes)
    if refusal is not None:
        raise v.r.error(ppath, refusal)
    rpath = (*path, "restrictions")
    restrictions = tuple(_list(v, m.get("restrictions", []), rpath))
    for i, text in enumerate(restrictions):
        refusal = restriction_refusal(text, names)
        if refusal is not None:
            raise v.r.error((*rpath, i), refusal)
    spec = KernelSpec(name, values, dtypes, arch, restrictions)
    try:
        return spec, satisfiable_space(spec, family)
    except ENTRY_REFUSALS as exc:
        raise v.r.error(ppath, str(exc)) from None


def _recorded_kernel(v: _Validator, value: Any, path: FieldPath, arch: str, file: str, known: dict[str, Family],
                     recordings: dict[str, Path]) -> tuple[KernelSpec, EntrySpace]:
    """An entry that searches a recorded space: its parameters and values are the recording's, its family one
    that stands for the recording (added to ``known``). ``recordings``: the files of the entries read so far, by
    family name."""
    m = v.mapping(value, path, ("recorded",), ("name", "dtype"))
    where = (*path, "recorded")
    recording = Path(file).resolve().parent / Path(v.text(m["recorded"], where)).expanduser()
    if not recording.exists():
        raise v.r.error(where, f"no such file: {recording}")
    try:
        space = load_recorded_once(recording)
        space.optimum_row  # noqa: B018 (a recording without one successful configuration is refused here)
    except TunerError as exc:
        raise v.r.error(where, str(exc)) from None
    name = v.text(m["name"], (*path, "name")) if "name" in m else recording_name(recording)
    if not name.isidentifier():
        raise v.r.error((*path, "name") if "name" in m else where,
                        f"the family name '{name}' must be a Python identifier (letters, digits, '_'); "
                        f"name the recording with 'name:'")
    too_long = family_name_refusal(name)
    if too_long is not None:
        raise v.r.error((*path, "name") if "name" in m else where, f"{too_long}; name the recording with 'name:'")
    same_name = known.get(name)
    if same_name is not None and same_name.recording is None:
        raise v.r.error((*path, "name") if "name" in m else where,
                        f"'{name}' is the name of a kernel family ({same_name.declaration}); name the recording "
                        f"otherwise with 'name:'")
    if recordings.setdefault(name, recording) != recording:
        raise v.r.error((*path, "name") if "name" in m else where,
                        f"two recordings are named '{name}' ({recordings[name]} and {recording}); name one with "
                        f"'name:'")
    dtype = _dtype(v, m.get("dtype", "float32"), (*path, "dtype"), DTYPES)
    refusal = size_refusal(space.values, (dtype,))
    if refusal is not None:
        raise v.r.error(where, f"the recording's parameters {refusal}")
    family = recorded_family(space, name, dtype, recording)
    use_recorded_family(family)
    known[name] = family
    spec = KernelSpec(name, dict(zip(space.names, space.values, strict=True)), (dtype,), arch)
    return spec, entry_space(spec, family)


def _value(v: _Validator, value: Any, path: FieldPath, *, param: Parameter) -> Any:
    """A parameter value of the type the family's defaults have: integers ≥ 0, text or booleans; text only as the
    family admits it (see Parameter.refusal)."""
    kinds = {bool if isinstance(d, bool) else int if isinstance(d, int) else str for d in param.default}
    if kinds == {bool}:
        value = v.boolean(value, path)
    elif kinds == {str}:
        value = v.text(value, path)
    elif kinds == {int}:
        value = v.integer(value, path, minimum=0)
    elif not isinstance(value, bool | int | str):
        raise v.r.error(path, f"expected an integer, text or true/false, found {_describe(value)}")
    refusal = param.refusal(value)
    if refusal:
        raise v.r.error(path, refusal)
    return value


def _dtype(v: _Validator, value: Any, path: FieldPath, supported: tuple[str, ...]) -> str:
    if value not in DTYPES:
        raise v.r.error(path, f"unknown dtype {_describe(value)}{did_you_mean(value, DTYPES)}; expected one of "
                              f"{', '.join(DTYPES)}")
    if value not in supported:
        raise v.r.error(path, f"dtype '{value}' is not supported by this template (it supports {', '.join(supported)})")
    return value


def _machine(v: _Validator, value: Any, path: FieldPath) -> MachineModel:
    m = v.mapping(value, path, ("name", "peak_gflops", "bandwidth_gbs"), ())
    peaks_path = (*path, "peak_gflops")
    peaks = v.mapping(m["peak_gflops"], peaks_path, (), DTYPES)
    if not peaks:
        raise v.r.error(peaks_path, f"expected a peak for at least one of {', '.join(DTYPES)}")
    return MachineModel(
        name=v.text(m["name"], (*path, "name")),
        peak_gflops={d: v.number(x, (*peaks_path, d)) for d, x in peaks.items()},
        bandwidth_gbs=v.number(m["bandwidth_gbs"], (*path, "bandwidth_gbs")),
    )


def _settings(v: _Validator, value: Any, path: FieldPath, cls: type, checks: dict[str, Callable]) -> Any:
    """The settings ``cls`` of a mapping whose keys ``checks`` validates (a key's former name is refused with the
    name it has now)."""
    former = [key for key in value or () if isinstance(value, dict) and RENAMED.get(key) in checks]
    if former:
        raise v.r.error((*path, former[0]), f"'{former[0]}' is called '{RENAMED[former[0]]}' now")
    m = v.mapping(value if value is not None else {}, path, (), tuple(checks))
    return cls(**{key: checks[key](x, (*path, key)) for key, x in m.items()})


def _optional(check: Callable) -> Callable:
    return lambda x, p: None if x is None else check(x, p)


def parse_machine_models(text: str, file: str) -> tuple[MachineModel, ...]:
    """The machine models of an experiment given as YAML text, without loading any kernel family (so that a
    recorded experiment's text can be read without running code its ``template_dirs`` name)."""
    document = read_document(text, file)
    raw = document.value.get("machine_models", []) if isinstance(document.value, dict) else []
    if not isinstance(raw, list):
        raise document.error(("machine_models",), f"expected a list, found {_describe(raw)}")
    v = _Validator(document)
    return tuple(_machine(v, item, ("machine_models", i)) for i, item in enumerate(raw))


def parse_experiment(text: str, file: str, template_dirs: tuple[str | os.PathLike[str], ...] = ()) -> Experiment:
    """Validate an experiment given as YAML text; ``file`` names it in error messages. ``template_dirs`` are
    folders of kernel families beyond those the file names (``--templates DIR``)."""
    document = read_document(text, file)
    v = _Validator(document)
    if document.value is None:
        raise ExperimentError(file, "", "is empty; expected a mapping with keys name, problems and kernels")
    top = v.mapping(document.value, (), ("name", "problems", "kernels"),
                    ("description", "template_dirs", "machine_models", "search", "measure", "compile"))

    def items(key: str, parse: Callable) -> tuple:
        raw = top.get(key, [])
        if not isinstance(raw, list) or (key != "machine_models" and not raw):
            raise document.error((key,), f"expected a non-empty list, found {_describe(raw)}")
        return tuple(parse(v, x, (key, i)) for i, x in enumerate(raw))

    machine_models = items("machine_models", _machine)
    v.unique((m.name for m in machine_models), ("machine_models",),
             lambda name: f"the machine model '{name}' is defined twice", within=("name",))
    search, measure, compile_ = _run_settings(v, top)
    folders = _template_dirs(v, top.get("template_dirs", []), file)
    try:
        use_family_dirs([*folders, *(os.fspath(d) for d in template_dirs)])
        known = dict(families())  # a family that cannot be loaded is a mistake of the folders named here
    except TunerError as exc:
        raise document.error(("template_dirs",), str(exc)) from None
    recordings: dict[str, Path] = {}
    entries = items("kernels", lambda v_, x, p: _kernel(v_, x, p, compile_.arch, file, known, recordings))
    spaces = tuple(space for _, space in entries)
    dims = tuple(dict.fromkeys(d for space in spaces for d in space.family.dims))
    problems = items("problems", lambda v_, x, p: _problem(v_, x, p, dims))
    v.unique(problems, ("problems",), lambda problem: f"the problem {problem.label} is listed twice")
    for i, problem in enumerate(problems):
        for space in spaces:
            _check_problem(v, problem, space.family, ("problems", i))
    for i, space in enumerate(spaces):
        mistake = family_mistake(space, problems)
        if mistake is not None:
            raise document.error(("kernels", i, "template"), mistake)
    return Experiment(
        name=_name(v, top["name"]),
        description=v.text(top["description"], ("description",)) if "description" in top else "",
        problems=problems,
        kernels=tuple(spec for spec, _ in entries),
        machine_models=machine_models,
        search=search,
        measure=measure,
        compile=compile_,
        path=file,
        template_dirs=(*folders, *(Path(os.fspath(d)).resolve() for d in template_dirs)),
        spaces=spaces,
    )


def _run_settings(v: _Validator, top: dict) -> tuple[SearchSettings, MeasureSettings, CompileSettings]:
    """The file's search, measure and compile sections."""
    search = _settings(v, top.get("search"), ("search",), SearchSettings, {
        "strategy": lambda x, p: v.choice(x, p, STRATEGIES),
        "trials": lambda x, p: v.ruled(x, p, TRIALS),
        "timeout_s": _optional(lambda x, p: float(v.ruled(x, p, TIMEOUT))),
        "seed": lambda x, p: v.ruled(x, p, SEED),
        "transfer": lambda x, p: v.ruled(x, p, TRANSFER),
        "objective": lambda x, p: _objective(v, x, p),
    })
    search = _pair_strategy(v, search, top.get("search"))
    measure = _settings(v, top.get("measure"), ("measure",), MeasureSettings, {
        "cold_caches": v.boolean,
        "warmup": lambda x, p: v.integer(x, p, minimum=0),
        "min_samples": v.integer,
        "max_samples": v.integer,
        "max_time_s": v.number,
        "target_noise": v.number,
        "timeout_s": v.number,
        "verify": v.boolean,
        "input_seed": lambda x, p: v.integer(x, p, minimum=0),
        "energy": v.boolean,
        "counters": lambda x, p: v.ruled(x, p, COUNTERS),
    })
    if measure.max_samples < measure.min_samples:
        raise v.r.error(("measure", "max_samples"),
                             f"must be at least min_samples ({measure.min_samples}), found {measure.max_samples}")
    compile_ = _settings(v, top.get("compile"), ("compile",), CompileSettings, {
        "arch": lambda x, p: _arch(v, x, p),
        "options": lambda x, p: _options(v, x, p),
        "workers": _optional(v.integer),
    })
    return search, measure, compile_


def _objective(v: _Validator, value: Any, path: FieldPath) -> tuple[str, ...]:
    try:
        return parse_objective(value)
    except ObjectiveError as exc:
        raise v.r.error(path, str(exc)) from None


def _pair_strategy(v: _Validator, search: SearchSettings, given: Any) -> SearchSettings:
    """Two objectives search with NSGA-II unless the file names a strategy that handles several objectives."""
    if not is_pair(search.objective):
        return search
    if not (isinstance(given, dict) and "strategy" in given):
        return dataclasses.replace(search, strategy=PAIR_SAMPLER)
    if search.strategy not in PAIR_SAMPLERS:
        raise v.r.error(("search", "strategy"), pair_refusal(search.strategy))
    return search


def pair_refusal(strategy: str) -> str:
    """Why a strategy cannot search two objectives at once."""
    return (f"'{strategy}' searches for one value, so it cannot search time and energy at once; choose one that "
            f"handles several objectives ({', '.join(PAIR_SAMPLERS)}; {PAIR_SAMPLER} is the default), or search one "
            f"objective (energy, or edp for one point of the front)")


def _template_dirs(v: _Validator, value: Any, file: str) -> tuple[Path, ...]:
    """The folders the file names, relative to the file's own folder."""
    base = Path(file).resolve().parent
    folders = []
    for i, entry in enumerate(_list(v, value, ("template_dirs",))):
        folder = base / Path(v.text(entry, ("template_dirs", i))).expanduser()
        if not folder.is_dir():
            raise v.r.error(("template_dirs", i), f"no such folder: {folder}")
        folders.append(folder.resolve())
    return tuple(folders)


def _options(v: _Validator, value: Any, path: FieldPath) -> tuple[str, ...]:
    options = tuple(v.text(o, (*path, i)) for i, o in enumerate(_list(v, value, path)))
    try:
        check_nvcc_options(options)
    except OptionError as exc:
        raise v.r.error((*path, exc.index), str(exc)) from None
    return options


def _list(v: _Validator, value: Any, path: FieldPath) -> list:
    if not isinstance(value, list):
        raise v.r.error(path, f"expected a list, found {_describe(value)}")
    return value


def _arch(v: _Validator, value: Any, path: FieldPath) -> str:
    text = v.text(value, path)
    try:
        target(text)
    except TunerError as exc:
        raise v.r.error(path, str(exc)) from None
    return text


def name_refusal(name: str) -> str | None:
    """Why ``name`` cannot name an experiment (it names its output folder), or None where it can."""
    if any(c in name for c in "/\\") or name.startswith("."):
        return f"is used as a folder name and may not contain '/' or start with '.': {name!r}"
    hidden = next((c for c in name if not c.isprintable()), None)
    if hidden is not None:
        return (f"is used as a folder name and may not hold control or other invisible characters (it holds "
                f"U+{ord(hidden):04X}): {name!r}")
    if len(name.encode()) > NAME_BYTES:
        return (f"is used as a folder name, which may have at most {NAME_BYTES} bytes (this one has "
                f"{len(name.encode())})")
    return None


def _name(v: _Validator, value: Any) -> str:
    name = v.text(value, ("name",))
    refusal = name_refusal(name)
    if refusal:
        raise v.r.error(("name",), refusal)
    return name


def load_experiment(path: str | os.PathLike[str], template_dirs: tuple[str | os.PathLike[str], ...] = ()) -> Experiment:
    """Read and validate an experiment file; every mistake raises ExperimentError naming file and field.
    ``template_dirs``: folders of kernel families beyond those the file names."""
    file = str(path)
    try:
        text = input_file.read_text(path, MAX_EXPERIMENT_BYTES)
    except FileNotFoundError:
        raise ExperimentError(file, "", "no such file") from None
    except OSError as exc:
        raise ExperimentError(file, "", f"cannot be read ({input_file.reason(exc)})") from None
    except UnicodeDecodeError as exc:
        raise ExperimentError(file, "", f"cannot be read ({exc})") from None
    return parse_experiment(text, file, template_dirs)
