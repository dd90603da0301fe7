"""A workload: the (M, N, K, dtype) shapes a program multiplies, read from a JSON list of objects or a CSV file with
the columns M, N, K and dtype, and optionally calls (how many times the program multiplies the shape). The file is
data: it is read within a size bound, every field checked, nothing in it executed; a mistake is refused in one
paragraph naming the file, the row and the field."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner import input_file
from tuner.config import DTYPE_BYTES, Problem
from tuner.errors import TunerError

MAX_WORKLOAD_BYTES = 4 * 2**20
MAX_SHAPES = 10_000
MAX_SIZE = 2**31 - 1
"""The kernels index their buffers with 32-bit ints: no dimension beyond it."""
FIELDS = ("M", "N", "K", "dtype")
OPTIONAL_FIELDS = ("calls",)
MAX_CALLS = 2**63 - 1


@dataclass(frozen=True, order=True)
class Shape:
    """One multiplication of the workload: C (M×N) = A (M×K) · B (K×N) in ``dtype``."""

    M: int
    N: int
    K: int
    dtype: str

    @property
    def problem(self) -> Problem:
        return Problem(self.M, self.N, self.K)

    @property
    def label(self) -> str:
        return f"{self.problem.label} {self.dtype}"


class WorkloadError(TunerError):
    def __init__(self, path: Path, where: str, why: str):
        super().__init__(f"{path}: {where}: {why}. A workload is a JSON list of objects with the keys M, N, K and "
                         f"dtype (and optionally calls), or a CSV file with those columns; sizes are integers from 1 "
                         f"to {MAX_SIZE}, dtypes "
                         f"one of {', '.join(DTYPE_BYTES)}, at most {MAX_SHAPES} shapes. Nothing was tuned or "
                         f"written.")


def read_workload(path: str | Path) -> list[Shape]:
    """The shapes of a workload file (``.csv``: CSV, anything else: JSON), each listed once, in file order."""
    return list(read_workload_calls(path))


def read_workload_calls(path: str | Path) -> dict[Shape, int]:
    """Each shape of a workload file, in file order, with the calls the file gives it (1 where it says none; the
    sum where it lists a shape more than once)."""
    path = Path(path)
    try:
        text = input_file.read_text(path, MAX_WORKLOAD_BYTES)
    except OSError as exc:
        raise WorkloadError(path, "the file", f"cannot be read ({input_file.reason(exc)})") from None
    except UnicodeDecodeError:
        raise WorkloadError(path, "the file", "is not UTF-8 text") from None
    rows = _csv_rows(path, text) if path.suffix.lower() == ".csv" else _json_rows(path, text)
    if not rows:
        raise WorkloadError(path, "the file", "lists no shape")
    if len(rows) > MAX_SHAPES:
        raise WorkloadError(path, "the file", f"lists {len(rows)} shapes")
    textual = path.suffix.lower() == ".csv"  # a CSV holds only text; JSON says what is a number
    calls: dict[Shape, int] = {}
    for where, row in rows:
        shape = _shape(path, where, row, textual)
        count = 1 if row.get("calls") in (None, "") else _size(path, f"{where}, field calls", row["calls"],
                                                                  textual, MAX_CALLS)
        calls[shape] = calls.get(shape, 0) + count
    return calls


def _json_rows(path: Path, text: str) -> list[tuple[str, Mapping[str, Any]]]:
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise WorkloadError(path, "the file", f"is not JSON ({exc})") from None
    if not isinstance(document, list):
        raise WorkloadError(path, "the top level", f"is a {type(document).__name__}, not a list")
    for i, item in enumerate(document):
        if not isinstance(item, dict):
            raise WorkloadError(path, f"item {i}", f"is a {type(item).__name__}, not an object")
    return [(f"item {i}", item) for i, item in enumerate(document)]


def _csv_rows(path: Path, text: str) -> list[tuple[str, Mapping[str, Any]]]:
    reader = csv.DictReader(io.StringIO(text))
    try:
        rows = list(reader)
    except csv.Error as exc:
        raise WorkloadError(path, f"line {reader.line_num}", f"is not CSV ({exc})") from None
    header = reader.fieldnames or []
    missing = [f for f in FIELDS if f not in header]
    if missing:
        raise WorkloadError(path, "the header", f"lacks the column(s) {', '.join(missing)}")
    return [(f"row {i + 2}", {k: v for k, v in row.items() if k is not None}) for i, row in enumerate(rows)]


def _shape(path: Path, where: str, row: Mapping[str, Any], textual: bool) -> Shape:
    unknown = sorted(str(k) for k in row if k not in FIELDS + OPTIONAL_FIELDS)
    if unknown:
        raise WorkloadError(path, where, f"has the unknown field(s) {', '.join(unknown)}")
    for field in FIELDS:
        if field not in row or row[field] in (None, ""):
            raise WorkloadError(path, f"{where}, field {field}", "is missing")
    sizes = [_size(path, f"{where}, field {dim}", row[dim], textual) for dim in ("M", "N", "K")]
    dtype = row["dtype"]
    if not isinstance(dtype, str) or dtype.strip() not in DTYPE_BYTES:
        raise WorkloadError(path, f"{where}, field dtype", f"{str(dtype)[:40]!r} is not a dtype the tuner knows")
    M, N, K = sizes
    return Shape(M, N, K, dtype.strip())


def _size(path: Path, where: str, value: Any, textual: bool, most: int = MAX_SIZE) -> int:
    if textual and isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= 19:
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise WorkloadError(path, where, f"expected an integer from 1 to {most}, found {str(value)[:40]!r}")
    return value


def workload_text(calls: Mapping[Shape, int]) -> str:
    """A workload file's JSON text: one object per shape, in the mapping's order, with its calls."""
    return json.dumps([{"M": s.M, "N": s.N, "K": s.K, "dtype": s.dtype, "calls": n} for s, n in calls.items()],
                      indent=1) + "\n"


def by_dtype(shapes: Iterable[Shape]) -> dict[str, list[Problem]]:
    """The problems of each dtype, in the order the workload lists them."""
    grouped: dict[str, list[Problem]] = {}
    for shape in shapes:
        grouped.setdefault(shape.dtype, []).append(shape.problem)
    return grouped
