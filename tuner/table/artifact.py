"""The kernel table's folder: ``table.json`` (a versioned list of entries, one per tuned shape and dtype) beside the
rendered source of each entry's kernel. Each file is written atomically, the index last, so that a reader sees the
former table or the new one whole. Reading a table checks it as data: a truncated or hostile ``table.json`` and an
unknown ``format_version`` are refused in one paragraph.

An entry's ``cubin`` names the compiled kernel in the folder; it is null until a device compiles the table's
kernels for the GPU it was tuned on (the source is enough to build it again with the same toolkit).

Format 2 adds ``alternatives`` to an entry: the next fastest distinct configurations the runs measured on its shape,
with their times, which prediction weighs for shapes never tuned. A format 1 table is read as one without them."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tuner import atomic_file, input_file
from tuner.config import DTYPE_BYTES, Problem
from tuner.errors import TunerError
from tuner.table.workload import Shape

TABLE_JSON = "table.json"
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
MAX_ALTERNATIVES = 64
MAX_TABLE_BYTES = 64 * 2**20
_FILE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,200}")


@dataclass(frozen=True)
class Alternative:
    """Another configuration measured on an entry's shape: slower there than the entry's winner."""

    family: str
    params: dict[str, int | str | bool]
    time_median_ms: float


@dataclass(frozen=True)
class Entry(Shape):
    """The winner of one shape and dtype, with where and how it was measured."""

    family: str
    params: dict[str, int | str | bool]
    time_median_ms: float
    tflops: float
    baseline_ratio: float | None
    """The baseline's (cuBLAS's) median time over this kernel's, where the run measured the baseline."""
    device_name: str
    compute_capability: str | None
    multiprocessors: int | None
    toolkit: str | None
    """The CUDA compiler (nvcc) version the run compiled with, else the CUDA version it recorded."""
    run: str
    template_hash: str | None
    """The hash of the family's template text when the run measured the entry."""
    source: str
    """File name of the rendered kernel source in the table's folder."""
    source_template_hash: str | None
    """The hash of the template text the source was rendered from; another than ``template_hash`` where the
    template changed since the run (the source is then not what was measured)."""
    cubin: str | None = None
    """File name of the compiled kernel in the table's folder; null until one is compiled for the device."""
    alternatives: tuple[Alternative, ...] = ()
    """The next fastest distinct configurations measured on the shape, fastest first (format 2)."""


@dataclass(frozen=True)
class KernelTable:
    entries: tuple[Entry, ...]
    runs: tuple[str, ...] = field(default=())

    def entry(self, problem: Problem, dtype: str) -> Entry | None:
        return next((e for e in self.entries if e.problem == problem and e.dtype == dtype), None)


def write_table(folder: Path, table: KernelTable, sources: dict[str, str],
                cubins: dict[str, bytes] | None = None) -> Path:
    """Write the sources (file name → text), the cubins (file name → bytes) and then ``table.json`` into
    ``folder``; returns the index's path."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in sources.items():
            atomic_file.write_text(folder / name, text)
        for name, binary in (cubins or {}).items():
            atomic_file.write_bytes(folder / name, binary)
        document = {"format_version": FORMAT_VERSION, "runs": list(table.runs),
                    "entries": [asdict(e) for e in table.entries]}
        atomic_file.write_text(folder / TABLE_JSON, json.dumps(document, indent=2) + "\n")
    except OSError as exc:
        raise TunerError(f"{folder}: the kernel table cannot be written here ({input_file.reason(exc)}); a table "
                         f"written there before is left whole") from None
    return folder / TABLE_JSON


class TableError(TunerError):
    def __init__(self, path: Path, where: str, why: str):
        super().__init__(f"{path}: {where} {why}; this is not a kernel table of format version "
                         f"{' or '.join(map(str, READABLE_VERSIONS))} "
                         f"(python -m tuner table build writes one); nothing was used from it.")


def read_table(folder: str | Path) -> KernelTable:
    """The table in ``folder`` (or at the path of its ``table.json``), of format 1 or 2, checked field by field."""
    path = Path(folder)
    path = path / TABLE_JSON if path.is_dir() else path
    try:
        document = json.loads(input_file.read_text(path, MAX_TABLE_BYTES))
    except OSError as exc:
        raise TableError(path, "the file", f"cannot be read ({input_file.reason(exc)})") from None
    except (ValueError, RecursionError) as exc:
        raise TableError(path, "the file", f"is not JSON ({str(exc)[:80]})") from None
    if not isinstance(document, dict):
        raise TableError(path, "the top level", "is not an object")
    version = document.get("format_version")
    if version not in READABLE_VERSIONS or isinstance(version, bool):
        raise TableError(path, "format_version", f"is {repr(version)[:40]}, a format this version cannot read")
    entries, runs = document.get("entries"), document.get("runs", [])
    if not isinstance(entries, list) or not isinstance(runs, list) or not all(isinstance(r, str) for r in runs):
        raise TableError(path, "entries or runs", "is not a list (of objects, of texts)")
    checked = tuple(_entry(path, f"entries[{i}]", item) for i, item in enumerate(entries))
    if len({(e.problem, e.dtype) for e in checked}) != len(checked):
        raise TableError(path, "entries", "lists a shape and dtype twice")
    return KernelTable(checked, tuple(runs))


_TYPES: dict[str, tuple[type, ...]] = {
    "M": (int,), "N": (int,), "K": (int,), "dtype": (str,), "family": (str,), "params": (dict,),
    "time_median_ms": (float, int), "tflops": (float, int), "baseline_ratio": (float, int, type(None)),
    "device_name": (str,), "compute_capability": (str, type(None)), "multiprocessors": (int, type(None)),
    "toolkit": (str, type(None)), "run": (str,), "template_hash": (str, type(None)), "source": (str,),
    "source_template_hash": (str, type(None)),
    "cubin": (str, type(None)),
}
_ALTERNATIVE_TYPES: dict[str, tuple[type, ...]] = {"family": (str,), "params": (dict,), "time_median_ms": (float, int)}


def _fields(path: Path, where: str, item: Any, types: dict[str, tuple[type, ...]], optional: tuple[str, ...] = ()
            ) -> None:
    """``item`` is an object holding exactly the fields of ``types`` (and perhaps the ``optional`` ones), each of
    its type, with parameters that are plain values."""
    if not isinstance(item, dict):
        raise TableError(path, where, "is not an object")
    unknown = sorted(str(k)[:40] for k in item if k not in types and k not in optional)
    if unknown:
        raise TableError(path, where, f"has the unknown field(s) {', '.join(unknown)}")
    for name, allowed in types.items():
        value = item.get(name)
        if name not in item or isinstance(value, bool) or not isinstance(value, allowed):
            raise TableError(path, f"{where}.{name}", f"is {repr(value)[:40]}, not a {allowed[0].__name__}")
    for key, value in item["params"].items():
        if not isinstance(value, int | str | bool) or (isinstance(value, str) and len(value) > 64):
            raise TableError(path, f"{where}.params.{str(key)[:40]}", "is not a number, a short text or a truth value")


def _alternatives(path: Path, where: str, items: Any) -> tuple[Alternative, ...]:
    if not isinstance(items, list) or len(items) > MAX_ALTERNATIVES:
        raise TableError(path, where, f"is not a list of at most {MAX_ALTERNATIVES} objects")
    found = []
    for i, item in enumerate(items):
        _fields(path, f"{where}[{i}]", item, _ALTERNATIVE_TYPES)
        if item["time_median_ms"] <= 0:
            raise TableError(path, f"{where}[{i}].time_median_ms", "is not a positive time")
        found.append(Alternative(**item))
    return tuple(found)


def _entry(path: Path, where: str, item: Any) -> Entry:
    _fields(path, where, item, _TYPES, optional=("alternatives",))
    if min(item["M"], item["N"], item["K"]) < 1 or item["dtype"] not in DTYPE_BYTES or item["time_median_ms"] <= 0:
        raise TableError(path, where, "holds a size below 1, an unknown dtype or a time that is not positive")
    for name in ("source", "cubin"):
        if item[name] is not None and (not _FILE_NAME.fullmatch(item[name]) or item[name].startswith(".")):
            raise TableError(path, f"{where}.{name}", "is not a plain file name inside the table's folder")
    alternatives = _alternatives(path, f"{where}.alternatives", item.get("alternatives", []))
    return Entry(**{**item, "alternatives": alternatives})
