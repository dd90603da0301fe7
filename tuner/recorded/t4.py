"""T4 results files: the Auto-Tuning Association's results format, which Kernel Tuner writes and converts
its caches to (schema ``kernel_tuner/schema/T4/1.0.0/results-schema.json``), read as a recorded space.

How outcomes, times and costs are read: the README's section on replaying a recorded run.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tuner.errors import TunerError
from tuner.measure.measurement import Status
from tuner.recorded.limits import check_costs, checked_runs, time_refusal
from tuner.recorded.space import RecordedSpace, cost_seconds, is_number, runs_matrix

INVALIDITY: dict[str, Status] = {
    "correct": Status.OK,
    "constraints": Status.INVALID,
    "compile": Status.COMPILE_ERROR,
    "runtime": Status.CRASHED,
    "timeout": Status.CRASHED,
    "correctness": Status.WRONG,
}
MS_PER_UNIT: dict[str, float] = {
    "s": 1e3, "seconds": 1e3, "ms": 1.0, "milliseconds": 1.0, "miliseconds": 1.0, "us": 1e-3, "microseconds": 1e-3,
}


def is_t4(document: Any) -> bool:
    return isinstance(document, dict) and isinstance(document.get("results"), list)


def read_t4(document: dict[str, Any], source: str) -> RecordedSpace:
    """The space of a T4 document: ``metadata`` (``timeunit``) and ``results``, a list of evaluations, each with a
    ``configuration`` (parameter → value), ``times`` (``compilation``, ``framework``, ``search_algorithm``,
    ``validation``, ``benchmark`` where written, ``runtimes``), ``invalidity``, ``correctness`` and
    ``measurements`` (name, value, unit). The parameters are the first configuration's."""
    results = document["results"]
    metadata = document["metadata"] if isinstance(document.get("metadata"), dict) else {}
    file_unit = _ms_per_unit(metadata.get("timeunit", "ms"), f"{source}: field 'metadata.timeunit'")
    if not results:
        raise TunerError(f"{source}: field 'results' lists no evaluations")
    names = _names(results[0], f"{source}: field 'results[0].configuration'")

    first: dict[tuple[Any, ...], int] = {}
    for i, result in enumerate(results):
        where = f"{source}: field 'results[{i}]'"
        configuration = result.get("configuration") if isinstance(result, dict) else None
        if not isinstance(configuration, dict) or set(configuration) != set(names):
            raise TunerError(f"{where}.configuration must give the parameters {', '.join(names)}")
        try:
            first.setdefault(tuple(configuration[n] for n in names), i)
        except TypeError:
            raise TunerError(f"{where}.configuration holds a value that is not a number, string or "
                             f"boolean") from None
    values = tuple(_ordered({c[j] for c in first}, [c[j] for c in first]) for j in range(len(names)))
    positions = [{v: i for i, v in enumerate(vals)} for vals in values]

    statuses, reasons, times, runs, costs = [], [], [], [], []
    for i in first.values():
        status, reason, time_ms, record_runs, cost = _evaluation(results[i], file_unit,
                                                                f"{source}: field 'results[{i}]'")
        statuses.append(status.value)
        reasons.append(reason)
        times.append(time_ms)
        runs.append(record_runs)
        costs.append(cost)
    digits = [[positions[j][v] for j, v in enumerate(c)] for c in first]
    return RecordedSpace(
        source=source, device="", kernel="", problem_size=None, names=names, values=values,
        indices=np.array(digits, dtype=np.int32).reshape(len(digits), len(names)),
        status=np.array(statuses, dtype=str), reason=tuple(reasons), time_ms=np.array(times, dtype=float),
        runs_ms=runs_matrix(runs, source), cost_s=np.array(costs, dtype=float),
    )


def _names(result: Any, where: str) -> tuple[str, ...]:
    configuration = result.get("configuration") if isinstance(result, dict) else None
    if not isinstance(configuration, dict) or not configuration:
        raise TunerError(f"{where} must map each parameter to its value")
    return tuple(configuration)


def _ordered(distinct: set[Any], appearance: list[Any]) -> tuple[Any, ...]:
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in distinct):
        return tuple(sorted(distinct))
    return tuple(dict.fromkeys(appearance))


def _ms_per_unit(unit: Any, where: str) -> float:
    if not isinstance(unit, str) or unit.lower() not in MS_PER_UNIT:
        raise TunerError(f"{where}: unknown time unit {unit!r} (known: {', '.join(MS_PER_UNIT)})")
    return MS_PER_UNIT[unit.lower()]


def _evaluation(result: dict[str, Any], file_unit: float,
                where: str) -> tuple[Status, str, float, list[float], float]:
    """Status, failure text, time (ms, NaN unless ok), runs (ms) and cost (s) of one evaluation."""
    invalidity = result.get("invalidity")
    if invalidity not in INVALIDITY:
        raise TunerError(f"{where}.invalidity is {invalidity!r}; expected one of {', '.join(INVALIDITY)}")
    status, reason = INVALIDITY[invalidity], "" if invalidity == "correct" else str(invalidity)
    if status is Status.OK and result.get("correctness", 1) == 0:
        status, reason = Status.WRONG, "correctness 0"
    times = result["times"] if isinstance(result.get("times"), dict) else {}

    def ms(value: Any) -> float | None:
        return value * file_unit if is_number(value) else None

    record_runs = [r * file_unit for r in checked_runs(times.get("runtimes"), f"{where}.times.runtimes")]
    check_costs(times, ("compilation", "compilation_time", "validation", "framework"), f"{where}.times")
    compile_ms = times.get("compilation", times.get("compilation_time"))
    cost = cost_seconds(ms(compile_ms), ms(times.get("validation")), ms(times.get("framework")), record_runs)
    time_ms = math.nan
    if status is Status.OK:
        time_ms = _time_ms(result.get("measurements"), file_unit, where)
        refusal = time_refusal(time_ms)
        if refusal is not None:
            raise TunerError(f"{where}.measurements: the time {refusal}")
    return status, reason, time_ms, record_runs, cost


def _time_ms(measurements: Any, file_unit: float, where: str) -> float:
    found = [m for m in measurements or [] if isinstance(m, dict) and m.get("name") == "time"]
    if not found or not is_number(found[0].get("value")):
        raise TunerError(f"{where}.measurements has no 'time' value, though the evaluation is correct")
    unit = found[0].get("unit") or ""
    scale = _ms_per_unit(unit, f"{where}.measurements") if unit else file_unit
    return float(found[0]["value"]) * scale
