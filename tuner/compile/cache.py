"""A content-addressed cache of compiled kernels: one binary and one JSON record per key.

The key is the SHA-256 of everything that shapes the binary (source, compiler identity, target, options);
entries are written atomically, so that parallel compilers and interrupted runs never leave half a file, and
a damaged entry is compiled again. Failed compilations are not cached.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner import atomic_file
from tuner.errors import TunerError

CACHE_FORMAT = 2  # bump when the layout of an entry changes


def cache_key(*parts: str | Sequence[str]) -> str:
    material = json.dumps([CACHE_FORMAT, *(p if isinstance(p, str) else list(p) for p in parts)])
    return hashlib.sha256(material.encode()).hexdigest()


@dataclass(frozen=True)
class Entry:
    binary: bytes
    record: dict[str, Any]


def binary_path(folder: Path, key: str, suffix: str) -> Path:
    """Where an entry's binary lies (a shared library is loaded from its file)."""
    return folder / key[:2] / f"{key}{suffix}"


def read(folder: Path, key: str, suffix: str) -> Entry | None:
    try:
        record = json.loads((folder / key[:2] / f"{key}.json").read_text())
        return Entry(binary_path(folder, key, suffix).read_bytes(), record)
    except (OSError, ValueError):
        return None


def write(folder: Path, key: str, suffix: str, entry: Entry) -> None:
    """Store an entry (the binary first, so that a record never points at a missing binary)."""
    where = folder / key[:2]
    try:
        where.mkdir(parents=True, exist_ok=True)
        atomic_file.write_bytes(binary_path(folder, key, suffix), entry.binary)
        atomic_file.write_bytes(where / f"{key}.json", json.dumps(entry.record, indent=1).encode())
    except OSError as exc:
        raise TunerError(f"cannot write the compile cache in {folder} ({exc}); make it writable or point "
                         f"TUNER_CACHE_DIR at a writable folder") from None
