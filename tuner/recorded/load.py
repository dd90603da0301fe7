"""Reading a recorded space from a file: a Kernel Tuner cache or a T4 results file, plain or gzipped.

The format is told by the content: a gzip stream is recognised by its magic bytes, a cache by its
``tune_params_keys`` and ``cache`` fields, a T4 file by its ``results`` list. What counts as an outcome and as
cost is each format's reader's: :mod:`tuner.recorded.cache_file`, :mod:`tuner.recorded.t4`.
"""

from __future__ import annotations

import json
import zlib
from functools import lru_cache
from pathlib import Path
from typing import Any

from tuner import input_file
from tuner.errors import TunerError
from tuner.recorded.cache_file import is_cache, parse_cache_text, read_cache
from tuner.recorded.space import RecordedSpace
from tuner.recorded.t4 import is_t4, read_t4

MAX_RECORDING_BYTES = 256 * 2**20
"""The most a recording may hold, decompressed (the shipped GEMM recordings hold 12 and 16 MB)."""


def load_recorded(path: str | Path) -> RecordedSpace:
    """The recorded space of a Kernel Tuner cache file or T4 results file (.json or .json.gz)."""
    source = str(path)
    document = parse(read_text(Path(path)), source)
    if is_cache(document):
        return read_cache(document, source)
    if is_t4(document):
        return read_t4(document, source)
    raise TunerError(f"{source}: neither a Kernel Tuner cache file (fields 'tune_params_keys' and 'cache') nor a "
                     f"T4 results file (field 'results')")


def load_recorded_once(path: str | Path) -> RecordedSpace:
    """As :func:`load_recorded`, read once per process for as long as the file is unchanged."""
    resolved = Path(path).resolve()
    try:
        stat = resolved.stat()
    except OSError as exc:
        raise TunerError(f"{path}: the recording cannot be read ({exc.strerror or exc})") from None
    return _load_cached(resolved, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=8)
def _load_cached(path: Path, mtime_ns: int, size: int) -> RecordedSpace:
    return load_recorded(path)


def read_text(path: Path) -> str:
    """The file's text, decompressed when it is gzipped (a cut-off stream gives what it holds); only a regular
    file, of at most MAX_RECORDING_BYTES once decompressed."""
    try:
        raw = input_file.read_bytes(path, MAX_RECORDING_BYTES, gunzip=True)
    except zlib.error as exc:
        raise TunerError(f"{path}: the gzip stream cannot be decompressed ({exc})") from None
    except OSError as exc:
        raise TunerError(f"{path}: the recording cannot be read ({input_file.reason(exc)})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TunerError(f"{path}: not UTF-8 text ({exc})") from None


def parse(text: str, source: str) -> Any:
    """The JSON document; a cache file saved mid-run is read up to its last complete record."""
    try:
        return json.loads(text)
    except RecursionError:
        raise TunerError(f"{source}: its JSON nests too deeply to be read") from None
    except json.JSONDecodeError as exc:
        document = parse_cache_text(text, source)
        if document is None:
            raise TunerError(f"{source}: not valid JSON ({exc})") from None
        return document
