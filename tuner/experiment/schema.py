"""Experiment files: the YAML schema, its validation and the error messages that name file and field. The families
are resolved once per reading; each kernel entry is read against its family (:mod:`tuner.experiment.kernel_entries`),
and the experiment carries the entries' spaces on to the run."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuner import input_file
from tuner.compile.options import OptionError, check_nvcc_options
from tuner.config import DTYPES, Problem
from tuner.errors import ExperimentError, TunerError
from tuner.experiment.family_trial import family_mistake
from tuner.experiment.kernel_entries import kernel_entry
from tuner.experiment.problem_checks import index_range_refusal
from tuner.experiment.run_settings import COUNTERS, SEED, TIMEOUT, TRANSFER, TRIALS
from tuner.experiment.validator import _describe, _Validator
from tuner.experiment.yaml_document import FieldPath, read_document
from tuner.kernels.discovery import families, use_family_dirs
from tuner.kernels.family import Family
from tuner.kernels.model import MachineModel
from tuner.kernels.targets import target
from tuner.recorded.family import recorded_problem_refusal
from tuner.results.objectives import PAIR_SAMPLER, PAIR_SAMPLERS, ObjectiveError, is_pair, parse_objective
from tuner.settings import CompileSettings, MeasureSettings, SearchSettings
from tuner.space.entry_space import EntrySpace, KernelSpec
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
    entries = items("kernels", lambda v_, x, p: kernel_entry(v_, x, p, compile_.arch, file, known, recordings))
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
    for i, entry in enumerate(v.sequence(value, ("template_dirs",))):
        folder = base / Path(v.text(entry, ("template_dirs", i))).expanduser()
        if not folder.is_dir():
            raise v.r.error(("template_dirs", i), f"no such folder: {folder}")
        folders.append(folder.resolve())
    return tuple(folders)


def _options(v: _Validator, value: Any, path: FieldPath) -> tuple[str, ...]:
    options = tuple(v.text(o, (*path, i)) for i, o in enumerate(v.sequence(value, path)))
    try:
        check_nvcc_options(options)
    except OptionError as exc:
        raise v.r.error((*path, exc.index), str(exc)) from None
    return options


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
