"""T1 files: the Auto-Tuning Association's input format for a kernel (Kernel Tuner's ``tune_kernel_T1`` reads it).

What a recorded space takes from one: the restrictions, ``ConfigurationSpace.Conditions[].Expression`` (Python
expressions over the parameters), checked as :mod:`tuner.kernels.restrictions` checks every restriction, and the
parameters' values, ``ConfigurationSpace.TuningParameters[]`` (``Name`` and ``Values``, a Python list in text),
which must be those of the recording the restrictions are given to.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from tuner.errors import TunerError
from tuner.kernels.restrictions import parse_restriction


def read_t1(path: str | Path) -> dict[str, Any]:
    """The document of a T1 file."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise TunerError(f"{path}: the T1 file cannot be read ({exc.strerror or exc})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TunerError(f"{path}: not a JSON document ({exc})") from None
    if not isinstance(document, dict) or not isinstance(document.get("ConfigurationSpace"), dict):
        raise TunerError(f"{path}: a T1 file needs the field 'ConfigurationSpace'")
    return document


def t1_parameters(document: dict[str, Any], source: str) -> dict[str, list[Any]]:
    """Each tuning parameter's values, by name, in the file's order."""
    found: dict[str, list[Any]] = {}
    entries = document["ConfigurationSpace"].get("TuningParameters")
    if not isinstance(entries, list):
        raise TunerError(f"{source}: field 'ConfigurationSpace.TuningParameters' must list the parameters")
    for i, entry in enumerate(entries):
        where = f"{source}: field 'ConfigurationSpace.TuningParameters[{i}]'"
        if not isinstance(entry, dict) or not isinstance(entry.get("Name"), str):
            raise TunerError(f"{where} needs a 'Name'")
        values = entry.get("Values")
        try:
            parsed = ast.literal_eval(values) if isinstance(values, str) else values
        except (ValueError, SyntaxError):
            raise TunerError(f"{where}.Values: '{values}' is not a list of values") from None
        if not isinstance(parsed, list | tuple) or not parsed:
            raise TunerError(f"{where}.Values must list the parameter's values")
        found[entry["Name"]] = list(parsed)
    return found


def t1_restrictions(document: dict[str, Any], source: str) -> list[str]:
    """The restrictions (``Conditions``), each checked to be an expression over the file's parameters."""
    names = list(t1_parameters(document, source))
    conditions = document["ConfigurationSpace"].get("Conditions", [])
    if not isinstance(conditions, list):
        raise TunerError(f"{source}: field 'ConfigurationSpace.Conditions' must list the restrictions")
    texts = []
    for i, condition in enumerate(conditions):
        where = f"{source}: field 'ConfigurationSpace.Conditions[{i}].Expression'"
        text = condition.get("Expression") if isinstance(condition, dict) else None
        texts.append(parse_restriction(text, names, where).text)
    return texts


def with_restrictions(cache: dict[str, Any], t1: dict[str, Any], source: str) -> dict[str, Any]:
    """A Kernel Tuner cache document with the T1 file's restrictions in its field ``restrictions`` (placed before
    ``cache``); the two must list the same parameters with the same values."""
    parameters = t1_parameters(t1, source)
    if list(parameters) != list(cache.get("tune_params_keys", [])) or any(
            list(cache["tune_params"][name]) != values for name, values in parameters.items()):
        raise TunerError(f"{source}: the T1 file's parameters and values are not those of the recording")
    document = {key: value for key, value in cache.items() if key != "cache"}
    document["restrictions"] = t1_restrictions(t1, source)
    document["cache"] = cache["cache"]
    return document
