"""Kernel Tuner cache files (schema ``kernel_tuner/schema/cache/1.0.0``) read as a recorded space.

Each record's outcome, time, runs and cost, the file's restrictions and a file cut off mid-run: what is read of
them is told in the README's section on replaying a recorded run.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np

from tuner.errors import TunerError
from tuner.kernels.restrictions import Restriction, parse_restrictions, satisfied
from tuner.measure.measurement import Status
from tuner.recorded.limits import check_costs, checked_runs, time_refusal
from tuner.recorded.space import RecordedSpace, cost_seconds, is_number, runs_matrix

FAILURES: dict[str, Status] = {
    "InvalidConfig": Status.INVALID,
    "CompilationFailedConfig": Status.COMPILE_ERROR,
    "RuntimeFailedConfig": Status.CRASHED,
    "ErrorConfig": Status.CRASHED,
}
FAILED_TIME_MS = 1e10
_CACHE_FIELD = re.compile(r'"cache"\s*:\s*\{')
_SEPARATOR = re.compile(r"[\s,]*")
_COLON = re.compile(r"\s*:\s*")


def is_cache(document: Any) -> bool:
    return isinstance(document, dict) and "cache" in document and "tune_params_keys" in document


def parse_cache_text(text: str, source: str) -> dict[str, Any] | None:
    """The document of a cache file whose closing braces are missing; None when the text is no cache file."""
    match = _CACHE_FIELD.search(text)
    if match is None:
        return None
    try:
        document = json.loads(text[:match.start()].rstrip().rstrip(",") + "}")
    except json.JSONDecodeError as exc:
        raise TunerError(f"{source}: the fields before 'cache' are not valid JSON ({exc})") from None
    decoder = json.JSONDecoder()
    cache: dict[str, Any] = {}
    at = match.end()
    while True:
        separator = _SEPARATOR.match(text, at)
        assert separator is not None  # the pattern matches the empty string
        at = separator.end()
        if at >= len(text) or text[at] == "}":
            break
        try:
            key, at = decoder.raw_decode(text, at)
            colon = _COLON.match(text, at)
            if colon is None:
                break
            record, at = decoder.raw_decode(text, colon.end())
        except json.JSONDecodeError:
            break  # the last record was cut off mid-write
        cache[key] = record
    document["cache"] = cache
    return document


def read_cache(document: dict[str, Any], source: str) -> RecordedSpace:
    """The space of a cache document: ``tune_params_keys`` (the parameters, in order), ``tune_params`` (each
    one's values) and ``cache``, comma-joined values → a record of the parameter values, ``time`` (ms), ``times``
    (every run, ms), ``compile_time`` and, in some files, ``verification_time``, ``benchmark_time``,
    ``framework_time`` and ``strategy_time`` (ms); a record that breaks the file's ``restrictions`` is left out."""
    names = document.get("tune_params_keys")
    tune_params = document.get("tune_params")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise TunerError(f"{source}: field 'tune_params_keys' must list the parameter names")
    if not isinstance(tune_params, dict):
        raise TunerError(f"{source}: field 'tune_params' must map each parameter to its values")
    for name in names:
        if not isinstance(tune_params.get(name), list) or not tune_params[name]:
            raise TunerError(f"{source}: field 'tune_params.{name}' must list the values of parameter '{name}'")
    values = tuple(tuple(tune_params[n]) for n in names)
    try:
        positions = [{v: i for i, v in enumerate(vals)} for vals in values]
    except TypeError:
        raise TunerError(f"{source}: field 'tune_params' holds values that are not numbers, strings or "
                         f"booleans") from None
    cache = document.get("cache")
    if not isinstance(cache, dict):
        raise TunerError(f"{source}: field 'cache' must map configurations to their records")

    digits: list[list[int]] = []
    statuses, reasons, times, runs, costs = [], [], [], [], []
    for key, record in cache.items():
        where = f"{source}: field 'cache.{key}'"
        if not isinstance(record, dict):
            raise TunerError(f"{where} must be a record of the configuration")
        digits.append(_digits(record, names, positions, where))
        _check_key(key, record, names, where)
        status, reason, time_ms = _outcome(record, where)
        record_runs = checked_runs(record.get("times"), f"{source}: field 'cache.{key}.times'")
        check_costs(record, ("compile_time", "verification_time", "framework_time"), where)
        statuses.append(status.value)
        reasons.append(reason)
        times.append(time_ms)
        runs.append(record_runs)
        costs.append(cost_seconds(record.get("compile_time"), record.get("verification_time"),
                                  record.get("framework_time"), record_runs))
    indices = np.array(digits, dtype=np.int32).reshape(len(digits), len(names))
    restrictions = _restrictions(document, names, values, source)
    keep = _satisfying(restrictions, indices, names, values)
    return RecordedSpace(
        source=source, device=str(document.get("device_name", "")), kernel=str(document.get("kernel_name", "")),
        problem_size=_problem_size(document), names=tuple(names), values=values, indices=indices[keep],
        status=np.array(statuses, dtype=str)[keep], reason=tuple(r for r, k in zip(reasons, keep, strict=True) if k),
        time_ms=np.array(times, dtype=float)[keep], runs_ms=runs_matrix(runs, source)[keep],
        cost_s=np.array(costs, dtype=float)[keep], restrictions=tuple(r.text for r in restrictions),
    )


def _problem_size(document: dict[str, Any]) -> Any:
    """The recorded problem's sizes in their own order where the file names them (``problem``, as this package
    exports them beside Kernel Tuner's grid-ordered ``problem_size``), else ``problem_size``."""
    named = document.get("problem")
    if isinstance(named, dict) and named and all(isinstance(v, int) for v in named.values()):
        return list(named.values())
    return document.get("problem_size")


def _restrictions(document: dict[str, Any], names: list[str], values: tuple[tuple[Any, ...], ...],
                  source: str) -> tuple[Restriction, ...]:
    if "restrictions" not in document:
        return ()
    restrictions = parse_restrictions(document["restrictions"], names, source, "restrictions")
    for i, restriction in enumerate(restrictions):
        for name in sorted(restriction.names):
            if not all(is_number(v) or isinstance(v, bool) for v in values[names.index(name)]):
                raise TunerError(f"{source}: field 'restrictions[{i}]': '{restriction.text}' computes with parameter "
                                 f"'{name}', whose values are not all numbers")
    return restrictions


def _satisfying(restrictions: tuple[Restriction, ...], indices: np.ndarray, names: list[str],
                values: tuple[tuple[Any, ...], ...]) -> np.ndarray:
    """Per recorded configuration, whether it satisfies every restriction."""
    if not restrictions:
        return np.ones(len(indices), dtype=bool)
    read = set().union(*(r.names for r in restrictions))
    columns = {name: np.asarray(values[j], dtype=float)[indices[:, j]] for j, name in enumerate(names) if name in read}
    return satisfied(restrictions, columns) if columns else np.ones(len(indices), dtype=bool)


def _digits(record: dict[str, Any], names: list[str], positions: list[dict[Any, int]], where: str) -> list[int]:
    digits = []
    for name, position in zip(names, positions, strict=True):
        if name not in record:
            raise TunerError(f"{where} lacks the parameter '{name}'")
        try:
            digits.append(position[record[name]])
        except (KeyError, TypeError):
            raise TunerError(f"{where}: parameter '{name}' = {record[name]!r} is not among the values "
                             f"'tune_params.{name}' lists") from None
    return digits


def _check_key(key: str, record: dict[str, Any], names: list[str], where: str) -> None:
    """A record's key must be its values joined by commas, as Kernel Tuner writes them (Python's text of each
    value; JSON's is taken too)."""
    expected = ",".join(str(record[name]) for name in names)
    if key not in (expected, ",".join(json.dumps(record[name]) for name in names)):
        raise TunerError(f"{where}: the key disagrees with the record's values, whose key is '{expected}'")


def _outcome(record: dict[str, Any], where: str) -> tuple[Status, str, float]:
    """Status, recorded failure text and time (ms, NaN unless ok) of one record."""
    failure = next((v for v in record.values() if isinstance(v, str) and v in FAILURES), None)
    if failure is not None:
        return FAILURES[failure], failure, math.nan
    time_ms = record.get("time")
    if isinstance(time_ms, str):
        raise TunerError(f"{where}: field 'time' holds '{time_ms}', which is neither a time in ms nor one of "
                         f"Kernel Tuner's failures ({', '.join(FAILURES)})")
    if not is_number(time_ms):
        raise TunerError(f"{where} has no 'time' in ms")
    if time_ms >= FAILED_TIME_MS:
        return Status.COMPILE_ERROR, f"time {time_ms:g} ms (older Kernel Tuner's mark of a failure)", math.nan
    refusal = time_refusal(time_ms)
    if refusal is not None:
        raise TunerError(f"{where}: field 'time' {refusal}")
    return Status.OK, "", float(time_ms)
