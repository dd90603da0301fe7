"""An experiment file's kernel entries, each read against its family: a template's parameter values, dtypes and
restrictions, or a recording (whose family is made from it); each entry's space built once, by the space stage,
and handed on with the entry."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from tuner.config import DTYPES
from tuner.errors import TunerError, did_you_mean
from tuner.experiment.validator import _describe, _Validator
from tuner.experiment.yaml_document import FieldPath
from tuner.kernels.discovery import use_recorded_family
from tuner.kernels.family import Family, Parameter
from tuner.names.file_names import family_name_refusal
from tuner.recorded.family import recorded_family, recording_name
from tuner.recorded.load import load_recorded_once
from tuner.space.entry_space import (
    ENTRY_REFUSALS,
    EntrySpace,
    KernelSpec,
    entry_space,
    satisfiable_space,
    size_refusal,
)
from tuner.space.restriction_rules import restriction_refusal


def kernel_entry(v: _Validator, value: Any, path: FieldPath, arch: str, file: str, known: dict[str, Family],
                 recordings: dict[str, Path]) -> tuple[KernelSpec, EntrySpace]:
    """A kernel entry and its space, checked against its family (one of ``known``, the families of this
    reading)."""
    if isinstance(value, dict) and "recorded" in value:
        return _recorded_entry(v, value, path, arch, file, known, recordings)
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
    restrictions = tuple(v.sequence(m.get("restrictions", []), rpath))
    for i, text in enumerate(restrictions):
        refusal = restriction_refusal(text, names)
        if refusal is not None:
            raise v.r.error((*rpath, i), refusal)
    spec = KernelSpec(name, values, dtypes, arch, restrictions)
    try:
        return spec, satisfiable_space(spec, family)
    except ENTRY_REFUSALS as exc:
        raise v.r.error(ppath, str(exc)) from None


def _recorded_entry(v: _Validator, value: Any, path: FieldPath, arch: str, file: str, known: dict[str, Family],
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
